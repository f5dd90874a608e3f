package serve

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stride-lm/stride/model"
)

// Config is the server's settings; the zero value of a field means its
// default.
type Config struct {
	// ModelName is the name /v1/models lists and requests must use.
	ModelName string
	// APIKeys, when not empty, are the accepted bearer keys: every route
	// but /health (and, with EnableDebug, the /kv page's static files)
	// then needs `Authorization: Bearer <key>`.
	APIKeys []string
	// MaxQueue is the most sequences waiting for the engine; a request
	// whose sequences (n × prompts) would pass it gets 503 with
	// Retry-After, or 400 when they alone exceed it (default 64).
	MaxQueue int
	// RequestTimeout bounds a request's queueing plus generation
	// (default 10m).
	RequestTimeout time.Duration
	// MaxBody caps a request body in bytes; more is a 413 (default 4 MiB).
	MaxBody int64
	// MaxTokens is the default cap on generated tokens of a request that
	// sets none (0: the rest of the context, as vLLM).
	MaxTokens int
	// SamplingDefaults fill the sampling fields a request omits: the
	// checkpoint's generation_config.json settings
	// (checkpoint.Generation.Sampling), as vLLM's --generation-config auto
	// applies them. Zero: OpenAI's defaults (temperature 1, every filter
	// off).
	SamplingDefaults model.SamplingDefaults
	// WriteTimeout bounds each write of a stream, and the write of a
	// whole answer: a client that stops reading for that long is dropped
	// (a stream's sequences cancelled) (default 1m).
	WriteTimeout time.Duration
	// BodyTimeout bounds reading a request's body: a client that sends
	// it slower is answered 408 and disconnected (default 1m).
	BodyTimeout time.Duration
	// CORSOrigins are the browser origins allowed to call the API ("*":
	// any). Empty, the server sends no CORS headers (cors.go).
	CORSOrigins []string
	// RetryAfter is the Retry-After of a 503, in seconds (default 1).
	RetryAfter int
	// Logger receives the access log and internal errors (default
	// slog.Default()).
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.ModelName == "" {
		c.ModelName = "stride"
	}
	if c.MaxQueue <= 0 {
		c.MaxQueue = 64
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 10 * time.Minute
	}
	if c.MaxBody <= 0 {
		c.MaxBody = 4 << 20
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = time.Minute
	}
	if c.BodyTimeout <= 0 {
		c.BodyTimeout = time.Minute
	}
	if c.RetryAfter <= 0 {
		c.RetryAfter = 1
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Server is the OpenAI-compatible HTTP front end of a Backend: an
// http.Handler that another program can mount.
type Server struct {
	cfg     Config
	b       Backend
	mux     *http.ServeMux
	metrics *metrics
	keys    [][sha256.Size]byte
	created int64 // the models' "created" time

	// stop is cancelled when a drain runs out of time: every request's
	// context hangs from it.
	stop       context.Context
	cancelStop context.CancelFunc

	mu       sync.Mutex
	draining bool
	active   int           // generation requests in flight
	idle     chan struct{} // closed when active drops to 0 while draining
	nextID   atomic.Uint64
	admitMu  sync.Mutex // the queue check and the submission (admit)

	// debug and pageOpen are set by EnableDebug (debugkv.go).
	debug    DebugOptions
	pageOpen bool
}

// New returns a server for b.
func New(b Backend, cfg Config) *Server {
	cfg = cfg.withDefaults()
	s := &Server{cfg: cfg, b: b, mux: http.NewServeMux(), created: time.Now().Unix()}
	s.stop, s.cancelStop = context.WithCancel(context.Background())
	for _, k := range cfg.APIKeys {
		s.keys = append(s.keys, sha256.Sum256([]byte(k)))
	}
	s.metrics = newMetrics(cfg.ModelName, b)
	s.routes()
	return s
}

func (s *Server) routes() {
	s.mux.Handle("/v1/chat/completions", s.only(http.MethodPost, s.generation(decodeChat)))
	s.mux.Handle("/v1/completions", s.only(http.MethodPost, s.generation(decodeCompletion)))
	s.mux.Handle("/v1/models", s.only(http.MethodGet, http.HandlerFunc(s.models)))
	s.mux.Handle("/health", s.only(http.MethodGet, http.HandlerFunc(s.health)))
	s.mux.Handle("/metrics", s.only(http.MethodGet, s.metrics.handler()))
	s.mux.Handle("/tokenize", s.only(http.MethodPost, http.HandlerFunc(s.tokenize)))
	s.mux.Handle("/detokenize", s.only(http.MethodPost, http.HandlerFunc(s.detokenize)))
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, notFound("no route "+r.Method+" "+r.URL.Path))
	})
}

// Registry is the Prometheus registry of the server's metrics, for a
// program that adds its own.
func (s *Server) Registry() *prometheus.Registry { return s.metrics.reg }

// ServeHTTP logs the request, recovers from a panic, checks the API key
// and routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	entry := &accessEntry{start: time.Now()}
	rec := &statusWriter{ResponseWriter: w}
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.cfg.Logger.Error("panic serving request", "method", r.Method, "path", r.URL.Path,
				"panic", p, "stack", string(debug.Stack()))
			if !rec.wrote {
				writeError(rec, internalError())
			}
		}
		s.logAccess(r, rec.status(), entry)
	}()
	r = r.WithContext(context.WithValue(r.Context(), accessKey{}, entry))
	if s.cors(rec, r) {
		return
	}
	if !s.open(r.URL.Path) && !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", "Bearer")
		writeError(rec, &apiError{Status: http.StatusUnauthorized, Type: typeAuth,
			Message: "a valid API key is required: Authorization: Bearer <key>", Code: "invalid_api_key"})
		return
	}
	s.mux.ServeHTTP(rec, r)
}

// authorized compares the bearer key with each accepted key in constant
// time (of hashes, so the keys' lengths do not leak either).
func (s *Server) authorized(r *http.Request) bool {
	if len(s.keys) == 0 {
		return true
	}
	h := r.Header.Get("Authorization")
	key, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		return false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(key)))
	found := 0
	for _, k := range s.keys {
		found |= subtle.ConstantTimeCompare(sum[:], k[:])
	}
	return found == 1
}

// only answers 405 (as an OpenAI error object) to other methods.
func (s *Server) only(method string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != method {
			w.Header().Set("Allow", method)
			writeError(w, &apiError{Status: http.StatusMethodNotAllowed, Type: typeInvalid,
				Message: r.URL.Path + " accepts " + method + " only, not " + r.Method})
			return
		}
		h.ServeHTTP(w, r)
	})
}

// readBody reads the body up to the cap (over it is a 413) within the
// body timeout (past it is a 408).
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *apiError) {
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout)) // unsupported by a recorder: no limit
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBody))
	var tooBig *http.MaxBytesError
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		// The deadline stays: net/http then reads no more of the body
		// and closes the connection after the answer.
		w.Header().Set("Connection", "close")
		return nil, &apiError{Status: http.StatusRequestTimeout, Type: typeInvalid,
			Message: "the request body was not received within " + s.cfg.BodyTimeout.String(), Code: "request_timeout"}
	case errors.As(err, &tooBig):
		return nil, &apiError{Status: http.StatusRequestEntityTooLarge, Type: typeInvalid,
			Message: "the request body is over the server's limit of " + itoa(int(tooBig.Limit)) + " bytes", Code: "request_too_large"}
	case err != nil:
		return nil, badParam("", "reading the request body: %v", err)
	}
	rc.SetReadDeadline(time.Time{})
	return body, nil
}

// enter counts a generation request in, unless the server is draining.
func (s *Server) enter() *apiError {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining {
		return overloaded("the server is shutting down; retry on another instance", s.cfg.RetryAfter)
	}
	s.active++
	return nil
}

func (s *Server) leave() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active--
	if s.active == 0 && s.idle != nil {
		close(s.idle)
		s.idle = nil
	}
}

// Drain stops accepting generation requests (they get 503 with
// Retry-After, and /health answers 503) and waits for those in flight to
// finish. When ctx ends first, it cancels them, waits for their handlers
// to return, and returns ctx's error.
func (s *Server) Drain(ctx context.Context) error {
	s.mu.Lock()
	s.draining = true
	idle := make(chan struct{})
	if s.active == 0 {
		close(idle)
	} else {
		s.idle = idle
	}
	s.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
	}
	s.cancelStop()
	<-idle
	return ctx.Err()
}

// Draining reports whether Drain has begun.
func (s *Server) Draining() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.draining
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	if s.Draining() {
		writeError(w, overloaded("draining", s.cfg.RetryAfter))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, modelList{Object: "list", Data: []modelCard{{
		ID: s.cfg.ModelName, Object: "model", Created: s.created, OwnedBy: "stride",
		MaxModelLen: s.b.MaxModelLen()}}})
}

// Loading is the handler of a server whose model is still loading: 503
// with Retry-After on every route, /health included, as an error object.
func Loading() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, overloaded("the model is loading", 5))
	})
}

// ModelName is the name a checkpoint is served under when none is given
// (vLLM's --served-model-name default is the model's path; Stride's is
// shorter): the file or directory name of source without its extension,
// stories260K.bin → stories260K, and the built-in model's name without
// its " (built in)" mark.
func ModelName(source string) string {
	source = strings.TrimSuffix(source, " (built in)")
	base := filepath.Base(strings.TrimRight(source, "/"))
	if ext := filepath.Ext(base); ext != "" && ext != base {
		base = strings.TrimSuffix(base, ext)
	}
	return base
}
