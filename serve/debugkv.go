package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stride-lm/stride/model/engine"
	kvpage "github.com/stride-lm/stride/web/kv"
)

// This file is the KV cache's debugging view (docs/serving.md, "Seeing
// the KV cache"): GET /debug/kv (a snapshot), GET /debug/kv/events (one
// SSE event per step) and the page /kv that draws them. They exist only
// after EnableDebug (infer serve --debug-endpoints), and need the API key
// like every other route; the page's own files do not, since they hold
// no data and a browser cannot send a bearer key for a page it navigates
// to (the page asks for the key and sends it with its requests).

// KVDebugger is the optional interface of a Backend whose KV cache the
// debug routes show; a Backend without it answers them 501.
type KVDebugger interface {
	// KVSnapshot is the cache and the sequences at a step boundary.
	KVSnapshot(ctx context.Context) (*engine.KVSnapshot, error)
	// SubscribeKV streams the cache's events, one per step.
	SubscribeKV(buffer int) (*engine.KVSubscription, error)
	// RequestID names the HTTP request (chatcmpl-…, cmpl-…) of the
	// engine's request number n, or "" once it is gone.
	RequestID(n int) string
}

// DebugOptions configure EnableDebug.
type DebugOptions struct {
	// ShowText adds each sequence's text to the snapshots and events;
	// without it the debug routes never show prompt or generated text.
	ShowText bool
}

// kvEventBuffer is how many events a /debug/kv/events client may fall
// behind before the engine drops its events and resyncs it.
const kvEventBuffer = 256

// EnableDebug adds the debug routes and the /kv page. Call it before
// serving.
func (s *Server) EnableDebug(o DebugOptions) {
	s.debug = o
	s.mux.Handle("/debug/kv", s.only(http.MethodGet, http.HandlerFunc(s.kvSnapshot)))
	s.mux.Handle("/debug/kv/events", s.only(http.MethodGet, http.HandlerFunc(s.kvEvents)))
	page := s.only(http.MethodGet, http.HandlerFunc(kvPageFile))
	s.mux.Handle("/kv", page)
	s.mux.Handle("/kv/", page)
	s.pageOpen = true
}

// open reports whether path is served without an API key: /health, and
// the page's static files once EnableDebug has added them.
func (s *Server) open(path string) bool {
	return path == "/health" || s.pageOpen && (path == "/kv" || strings.HasPrefix(path, "/kv/"))
}

// debugger is the backend's KVDebugger, or a 501 error.
func (s *Server) debugger() (KVDebugger, *apiError) {
	if d, ok := s.b.(KVDebugger); ok {
		return d, nil
	}
	return nil, &apiError{Status: http.StatusNotImplemented, Type: typeInvalid,
		Message: "this server's backend keeps no KV cache to show"}
}

// kvRequest is what a snapshot or event says of one engine request.
type kvRequest struct {
	ID   string `json:"id,omitempty"`
	Text string `json:"text,omitempty"`
}

// kvSnapshotJSON is GET /debug/kv's answer.
type kvSnapshotJSON struct {
	*engine.KVSnapshot
	Requests map[string]kvRequest `json:"requests"`
}

// kvEventJSON is one /debug/kv/events event.
type kvEventJSON struct {
	*engine.KVEvent
	Requests map[string]kvRequest `json:"requests"`
}

func (s *Server) kvSnapshot(w http.ResponseWriter, r *http.Request) {
	d, e := s.debugger()
	if e != nil {
		writeError(w, e)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	snap, err := d.KVSnapshot(ctx)
	if err != nil {
		writeError(w, overloaded("no KV snapshot: "+err.Error(), s.cfg.RetryAfter))
		return
	}
	writeJSON(w, http.StatusOK, kvSnapshotJSON{snap, s.kvRequests(d, snap.Sequences, snap.Waiting)})
}

// kvRequests maps the request numbers of seqs and waiting to their HTTP
// ids, and with ShowText the sequences' text.
func (s *Server) kvRequests(d KVDebugger, seqs []engine.KVSequence, waiting []engine.KVWaiting) map[string]kvRequest {
	out := map[string]kvRequest{}
	for _, q := range seqs {
		if q.Request < 0 {
			continue
		}
		kr := kvRequest{ID: d.RequestID(q.Request)}
		if s.debug.ShowText {
			kr.Text = s.text(q.Tokens)
		}
		out[strconv.Itoa(q.Request)] = kr
	}
	for _, q := range waiting {
		if _, ok := out[strconv.Itoa(q.Request)]; !ok {
			out[strconv.Itoa(q.Request)] = kvRequest{ID: d.RequestID(q.Request)}
		}
	}
	return out
}

// text is the text of tokens after the first (BOS), as a generation
// prints it.
func (s *Server) text(tokens []int) string {
	var b strings.Builder
	for i := 1; i < len(tokens); i++ {
		b.Write(s.b.TokenBytes(tokens[i-1], tokens[i]))
	}
	return b.String()
}

// kvEvents streams the engine's KV events as SSE (event: snapshot or
// step, id: the event id), with a comment line after 15 quiet seconds so
// a proxy keeps the connection. It ends when the client goes, the server
// drains or the engine closes.
func (s *Server) kvEvents(w http.ResponseWriter, r *http.Request) {
	d, e := s.debugger()
	if e != nil {
		writeError(w, e)
		return
	}
	sub, err := d.SubscribeKV(kvEventBuffer)
	if err != nil {
		writeError(w, overloaded("no KV events: "+err.Error(), s.cfg.RetryAfter))
		return
	}
	defer sub.Close()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	send := func(b []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout)) // not every writer has deadlines
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send([]byte(": stride kv events\n\n")) {
		return
	}
	// Once a second: end the stream when a drain begins (so shutdown
	// does not wait for a page left open), and every 15 s a comment.
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var buf bytes.Buffer
	for quiet := 0; ; {
		select {
		case ev, ok := <-sub.Events():
			if !ok || !send(s.kvEventFrame(&buf, d, &ev)) {
				return
			}
			quiet = 0
		case <-tick.C:
			if quiet++; s.Draining() || quiet%15 == 0 && !send([]byte(": keepalive\n\n")) {
				return
			}
		case <-r.Context().Done():
			return
		case <-s.stop.Done():
			return
		}
	}
}

// kvEventFrame formats ev as one SSE frame in buf.
func (s *Server) kvEventFrame(buf *bytes.Buffer, d KVDebugger, ev *engine.KVEvent) []byte {
	seqs, waiting := ev.Sequences, ev.Waiting
	if ev.Snapshot != nil {
		seqs, waiting = ev.Snapshot.Sequences, ev.Snapshot.Waiting
	}
	refs := make([]engine.KVWaiting, 0, len(waiting))
	refs = append(refs, waiting...)
	for _, l := range [][]engine.KVRef{ev.Admitted, ev.Preempted, ev.Finished, ev.Cancelled} {
		for _, q := range l {
			refs = append(refs, engine.KVWaiting{Request: q.Request})
		}
	}
	data, err := json.Marshal(kvEventJSON{ev, s.kvRequests(d, seqs, refs)})
	if err != nil {
		data = []byte(`{"type":"error"}`) // unreachable: the event is plain data
	}
	buf.Reset()
	fmt.Fprintf(buf, "id: %d\nevent: %s\ndata: %s\n\n", ev.ID, ev.Type, data)
	return buf.Bytes()
}

// kvPageFile serves the page's embedded files: /kv and /kv/ are its
// index.html. The policy allows only the page's own script, style and
// requests.
func kvPageFile(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/kv"), "/")
	if name == "" {
		name = "index.html"
	}
	b, err := kvpage.Files.ReadFile(name)
	typ, known := pageTypes[name[strings.LastIndexByte(name, '.')+1:]]
	if err != nil || !known || strings.Contains(name, "/") {
		writeError(w, notFound("no file "+r.URL.Path))
		return
	}
	h := w.Header()
	h.Set("Content-Type", typ)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'self'")
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(b))
}

var pageTypes = map[string]string{
	"html": "text/html; charset=utf-8",
	"js":   "text/javascript; charset=utf-8",
	"css":  "text/css; charset=utf-8",
}

// requestIDs maps the engine's request numbers to HTTP request ids while
// the requests run (EngineBackend's side of RequestID).
type requestIDs struct{ m sync.Map }

// track records st's HTTP request id, from ctx (the request's access
// entry), until st is done.
func (t *requestIDs) track(ctx context.Context, st *engine.Stream) {
	e, ok := ctx.Value(accessKey{}).(*accessEntry)
	if !ok {
		return
	}
	e.mu.Lock()
	id := e.id
	e.mu.Unlock()
	t.m.Store(st.Seq, id)
	go func() {
		<-st.Done()
		t.m.Delete(st.Seq)
	}()
}

// KVSnapshot implements KVDebugger.
func (b *EngineBackend) KVSnapshot(ctx context.Context) (*engine.KVSnapshot, error) {
	return b.e.KVSnapshot(ctx)
}

// SubscribeKV implements KVDebugger.
func (b *EngineBackend) SubscribeKV(buffer int) (*engine.KVSubscription, error) {
	return b.e.SubscribeKV(buffer)
}

// RequestID implements KVDebugger.
func (b *EngineBackend) RequestID(n int) string {
	if id, ok := b.reqs.m.Load(n); ok {
		return id.(string)
	}
	return ""
}
