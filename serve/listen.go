package serve

import (
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// HTTPConfig is the connection-level hardening of the http.Server that
// NewHTTPServer builds: what a client may hold before a handler runs.
// The zero value of a field means its default.
type HTTPConfig struct {
	// ReadHeaderTimeout bounds reading a request's headers (slowloris);
	// a client still sending them then is disconnected (default 10s).
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that sends no next
	// request for that long (default 2m).
	IdleTimeout time.Duration
	// MaxHeaderBytes caps the request line and headers; more is a 431
	// (default 64 KiB; net/http adds 4 KiB of slack).
	MaxHeaderBytes int
	// MaxConnections caps the open connections; LimitListener answers
	// one beyond it 503 with Retry-After and closes it (default 512).
	MaxConnections int
}

func (c HTTPConfig) withDefaults() HTTPConfig {
	if c.ReadHeaderTimeout <= 0 {
		c.ReadHeaderTimeout = 10 * time.Second
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = 2 * time.Minute
	}
	if c.MaxHeaderBytes <= 0 {
		c.MaxHeaderBytes = 64 << 10
	}
	if c.MaxConnections <= 0 {
		c.MaxConnections = 512
	}
	return c
}

// NewHTTPServer returns an http.Server for h with c's timeouts and
// header cap. It sets no ReadTimeout or WriteTimeout: net/http's would
// cut a long stream, so the body's read deadline (Config.BodyTimeout)
// and each stream write's (Config.WriteTimeout) are set per request by
// the Server. Serve it on LimitListener(ln, c.MaxConnections).
func NewHTTPServer(h http.Handler, c HTTPConfig) *http.Server {
	c = c.withDefaults()
	return &http.Server{Handler: h, ReadHeaderTimeout: c.ReadHeaderTimeout,
		IdleTimeout: c.IdleTimeout, MaxHeaderBytes: c.MaxHeaderBytes}
}

// overCapacity is what a connection beyond the cap reads before the
// server closes it: an OpenAI error object, so clients retry.
const overCapacity = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n" +
	"Retry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s"

// LimitListener accepts at most max connections at once (max <= 0:
// HTTPConfig's default). One beyond is answered 503 with Retry-After
// and closed, and the listener keeps accepting; when too many of those
// are being answered at once, the rest are closed unanswered.
func LimitListener(ln net.Listener, max int) net.Listener {
	if max <= 0 {
		max = HTTPConfig{}.withDefaults().MaxConnections
	}
	body := errorBody(overloaded("the server is at its connection limit (--max-connections); retry later", 1))
	resp := []byte(fmt.Sprintf(overCapacity, len(body), body))
	return &limitListener{Listener: ln, max: int64(max), reject: resp, rejecting: make(chan struct{}, 64)}
}

type limitListener struct {
	net.Listener
	max       int64
	open      atomic.Int64
	reject    []byte
	rejecting chan struct{} // bounds the goroutines answering 503
}

// Accept returns the next connection within the cap.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			return &limitConn{Conn: c, l: l}, nil
		}
		l.open.Add(-1)
		select {
		case l.rejecting <- struct{}{}:
			go l.refuse(c)
		default:
			c.Close()
		}
	}
}

// refuse answers c 503, then reads what it sent (so closing does not
// reset the connection before the client reads the answer) for at most
// a second.
func (l *limitListener) refuse(c net.Conn) {
	defer func() { <-l.rejecting }()
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write(l.reject); err != nil {
		return
	}
	if tc, ok := c.(interface{ CloseWrite() error }); ok {
		tc.CloseWrite()
	}
	buf := make([]byte, 4096)
	for {
		if _, err := c.Read(buf); err != nil {
			return
		}
	}
}

// limitConn gives its slot back once, when closed.
type limitConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.open.Add(-1) })
	return err
}

// CloseWrite half-closes the connection when the one beneath can:
// net/http does so before it closes one whose client may still be
// sending, so that the client reads the whole answer first.
func (c *limitConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
