package serve

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// accessEntry is what one access-log line says beyond the method, path
// and status; the generation handlers fill it in.
type accessEntry struct {
	mu                              sync.Mutex
	start                           time.Time
	id                              string
	promptTokens, cached, generated int
	ttft                            time.Duration
	finish                          string
}

type accessKey struct{}

// entryOf returns the request's access entry (a blank one when the
// handler runs outside ServeHTTP).
func entryOf(r *http.Request) *accessEntry {
	if e, ok := r.Context().Value(accessKey{}).(*accessEntry); ok {
		return e
	}
	return &accessEntry{start: time.Now()}
}

// logAccess writes the request's one structured line.
func (s *Server) logAccess(r *http.Request, status int, e *accessEntry) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s.cfg.Logger.Info("request", "id", e.id, "method", r.Method, "path", r.URL.Path, "status", status,
		"prompt_tokens", e.promptTokens, "cached_tokens", e.cached, "generated_tokens", e.generated,
		"ttft_ms", ms(e.ttft), "total_ms", ms(time.Since(e.start)),
		"finish_reason", e.finish)
}

// statusWriter remembers the status sent and whether anything was.
type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.code, w.wrote = http.StatusOK, true
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer
// (Flush, SetWriteDeadline).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) status() int {
	if !w.wrote {
		return http.StatusOK
	}
	return w.code
}

// writeJSON sends v as the whole response.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, internalError())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

func itoa(n int) string { return strconv.Itoa(n) }

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
