package serve

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// RunOptions are Run's settings besides the listener and the loader.
type RunOptions struct {
	// HTTP is the connection-level hardening of the http.Server Run
	// builds (NewHTTPServer) and its connection cap (LimitListener).
	HTTP HTTPConfig
	// DrainTimeout is how long the requests still running when the
	// context ends may take to finish; then they are cancelled. Zero
	// cancels them at once.
	DrainTimeout time.Duration
	// Logf, when not nil, is told each stage of the server's life
	// ("listening on http://ADDR", "draining (up to D)", and that the
	// drain timed out), one line each without a newline.
	Logf func(format string, args ...any)
}

// shutdownTimeout bounds http.Server.Shutdown after the drain: by then
// no handler runs a generation, so only idle and finishing connections
// remain.
const shutdownTimeout = 5 * time.Second

// Run is the whole life of a server on ln, in the order a process needs
// it, and returns when ctx ends and the server has drained.
//
//  1. It serves ln at once (NewHTTPServer with o.HTTP, on
//     LimitListener), every route answering Loading's 503 with
//     Retry-After: a client or an orchestrator that probes /health while
//     the model loads gets an answer, not a refused connection.
//  2. It calls load, which builds the Server (and its engine); closeFn
//     releases what load built and runs after the http.Server has shut
//     down, when no handler can reach the engine any more.
//  3. It swaps the Server in atomically: a request is answered by one
//     handler or the other, never by a half-built one. Then it logs
//     "listening on".
//  4. When ctx ends, it drains: Server.Drain refuses new generation
//     requests (503, and /health answers 503) while the running ones
//     finish, for at most o.DrainTimeout, then cancels what still runs.
//     Only then does http.Server.Shutdown close the listener and the idle
//     connections, so a drained stream's last bytes reach its client.
//
// A load error is returned after the listener is closed; so is an
// error of serving ln (its Accept failing), after the requests still
// running are cancelled and their handlers have returned. Cancelling
// ctx does not interrupt load: Run drains the loaded Server right after
// it returns.
func Run(ctx context.Context, ln net.Listener, load func() (*Server, func(), error), o RunOptions) error {
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	var handler atomic.Pointer[http.Handler]
	loading := Loading()
	handler.Store(&loading)
	hs := NewHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*handler.Load()).ServeHTTP(w, r) }), o.HTTP)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(LimitListener(ln, o.HTTP.MaxConnections)) }()
	waited := false
	defer func() { // ln is closed, and Serve has returned, when Run does
		hs.Close()
		if !waited {
			<-served
		}
	}()
	srv, closeFn, err := load()
	if err != nil {
		return err
	}
	defer closeFn()
	var h http.Handler = srv
	handler.Store(&h)
	logf("listening on http://%s", ln.Addr())
	select {
	case err := <-served:
		waited = true
		// The listener failed, but handlers may still run on connections
		// it accepted: they are cancelled and waited for before load's
		// close function releases the engine they use.
		done, cancel := context.WithCancel(context.Background())
		cancel()
		srv.Drain(done)
		return err
	case <-ctx.Done():
	}
	return drain(srv, hs, o.DrainTimeout, logf)
}

// drain stops taking requests, lets the running ones finish within
// timeout, cancels the rest and shuts hs down.
func drain(srv *Server, hs *http.Server, timeout time.Duration, logf func(string, ...any)) error {
	logf("draining (up to %v)", timeout)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := srv.Drain(ctx); err != nil {
		logf("drain timeout reached; cancelled what still ran")
	}
	sctx, scancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer scancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
