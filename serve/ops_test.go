package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The API key guards every route but /health; a wrong or missing key is
// a 401 error object, and the key never appears in the log.
func TestAPIKey(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	_, ts := startServer(t, newFake(2), Config{APIKeys: []string{"sekrit-1", "other"}}, &lockedWriter{w: &logs, mu: &mu})
	body := `{"prompt":"hi","max_tokens":2}`
	for _, h := range [][]string{nil, {"Authorization", "Bearer wrong"}, {"Authorization", "sekrit-1"}, {"Authorization", "Bearer sekrit-"}} {
		r := post(t, ts.URL+"/v1/completions", body, h...)
		if _, typ, _, code := errorObject(t, r); r.status != 401 || typ != "authentication_error" || code != "invalid_api_key" {
			t.Errorf("header %v: status %d type %s code %v", h, r.status, typ, code)
		}
	}
	for _, path := range []string{"/v1/models", "/metrics"} {
		if r := do(t, "GET", ts.URL+path, ""); r.status != 401 {
			t.Errorf("%s without key: %d", path, r.status)
		}
	}
	if r := post(t, ts.URL+"/v1/completions", body, "Authorization", "Bearer other"); r.status != 200 {
		t.Errorf("second key: %d %s", r.status, r.body)
	}
	if r := do(t, "GET", ts.URL+"/health", ""); r.status != 200 {
		t.Errorf("/health without key: %d", r.status)
	}
	mu.Lock()
	defer mu.Unlock()
	if bytes.Contains(logs.Bytes(), []byte("sekrit")) {
		t.Errorf("the key leaked into the log: %s", logs.Bytes())
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// 404 for a route or a model, 405 for a method, 413 for a body over the
// cap, each as an error object.
func TestStatuses(t *testing.T) {
	_, ts := startServer(t, newFake(2), Config{MaxBody: 200, ModelName: "m"}, nil)
	cases := []struct {
		r      response
		status int
	}{
		{do(t, "GET", ts.URL+"/v1/nothing", ""), 404},
		{post(t, ts.URL+"/v1/completions", `{"model":"gpt-9","prompt":"x"}`), 404},
		{do(t, "GET", ts.URL+"/v1/completions", ""), 405},
		{post(t, ts.URL+"/v1/completions", `{"prompt":"`+strings.Repeat("x", 300)+`"}`), 413},
	}
	for i, c := range cases {
		if c.r.status != c.status {
			t.Errorf("case %d: status %d, want %d: %s", i, c.r.status, c.status, c.r.body)
		}
		errorObject(t, c.r)
	}
}

// A panic is a 500 whose body says nothing of it, logged with its stack,
// and the server goes on serving.
func TestPanicIs500AndServerKeepsServing(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	_, ts := startServer(t, newFake(2), Config{}, &lockedWriter{w: &logs, mu: &mu})
	r := post(t, ts.URL+"/v1/completions", `{"prompt":"PANIC","max_tokens":2}`)
	if msg, typ, _, _ := errorObject(t, r); r.status != 500 || typ != "server_error" || strings.Contains(msg, "fake") {
		t.Errorf("status %d type %s message %q", r.status, typ, msg)
	}
	mu.Lock()
	if !bytes.Contains(logs.Bytes(), []byte("asked to panic")) || !bytes.Contains(logs.Bytes(), []byte("goroutine")) {
		t.Errorf("no stack in the log: %s", logs.Bytes())
	}
	mu.Unlock()
	if r := post(t, ts.URL+"/v1/completions", `{"prompt":"ok","max_tokens":2}`); r.status != 200 {
		t.Errorf("after the panic: %d", r.status)
	}
}

// An engine error after the stream started is an error event, then
// [DONE]; before any byte it is a 500.
func TestMidStreamError(t *testing.T) {
	_, ts := startServer(t, newFake(2), Config{}, nil)
	r := post(t, ts.URL+"/v1/completions", `{"prompt":"FAIL","max_tokens":6,"stream":true}`)
	ev := sseEvents(t, r.body)
	if len(ev) < 2 || !strings.HasPrefix(ev[len(ev)-2], `{"error":{`) {
		t.Fatalf("no error event before [DONE]: %q", ev)
	}
	if r := post(t, ts.URL+"/v1/completions", `{"prompt":"FAIL","max_tokens":6}`); r.status != 500 {
		t.Errorf("whole: status %d", r.status)
	}
}

// With every slot busy and MaxQueue sequences waiting, the next request
// is a 503 with Retry-After; once the queue empties it is served.
func TestQueueFull(t *testing.T) {
	f := newFake(1)
	gate := make(chan struct{})
	f.gate = gate
	_, ts := startServer(t, f, Config{MaxQueue: 1, RetryAfter: 3}, nil)
	open := sync.OnceFunc(func() {
		f.mu.Lock()
		close(gate)
		f.gate = nil
		f.mu.Unlock()
	})
	t.Cleanup(open) // before the server closes, even if the test fails
	var wg sync.WaitGroup
	for i := range 2 { // one runs (held at the gate), then one waits
		wg.Add(1)
		go func() {
			defer wg.Done()
			post(t, ts.URL+"/v1/completions", `{"prompt":"q","max_tokens":2}`)
		}()
		waitFor(t, func() bool { st := f.Stats(); return st.Running == 1 && st.Waiting == i })
	}
	r := post(t, ts.URL+"/v1/completions", `{"prompt":"q","max_tokens":2}`)
	if _, typ, _, _ := errorObject(t, r); r.status != 503 || r.header.Get("Retry-After") != "3" || typ != "service_unavailable_error" {
		t.Errorf("queue full: status %d Retry-After %q type %s", r.status, r.header.Get("Retry-After"), typ)
	}
	open()
	wg.Wait()
	if r := post(t, ts.URL+"/v1/completions", `{"prompt":"q","max_tokens":2}`); r.status != 200 {
		t.Errorf("after the queue drained: %d", r.status)
	}
}

// The queue bound counts sequences, a request's n choices included, and
// holds under concurrent arrivals: the engine's waiting count never passes
// MaxQueue. A request with more sequences than the whole queue is a 400
// naming n, since no retry would fit it.
func TestQueueBoundCountsChoices(t *testing.T) {
	f := newFake(1)
	gate := make(chan struct{})
	f.gate = gate
	_, ts := startServer(t, f, Config{MaxQueue: 3}, nil)
	open := sync.OnceFunc(func() {
		f.mu.Lock()
		close(gate)
		f.gate = nil
		f.mu.Unlock()
	})
	t.Cleanup(open)
	url := ts.URL + "/v1/completions"
	var wg sync.WaitGroup
	var refused atomic.Int64
	send := func(body string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := post(t, url, body); r.status == 503 {
				refused.Add(1)
			}
		}()
	}
	send(`{"prompt":"q","max_tokens":2}`) // runs, held at the gate
	waitFor(t, func() bool { return f.Stats().Running == 1 })
	send(`{"prompt":"q","max_tokens":2,"n":2}`) // waits: 2 of 3
	waitFor(t, func() bool { return f.Stats().Waiting == 2 })
	send(`{"prompt":"q","max_tokens":2,"n":2}`) // 2 + 2 > 3
	waitFor(t, func() bool { return refused.Load() == 1 })
	for range 16 { // together: exactly one more fits
		send(`{"prompt":"q","max_tokens":2}`)
	}
	waitFor(t, func() bool { return refused.Load()+int64(f.Stats().Waiting)-2 == 1+16 })
	if w, n := f.Stats().Waiting, refused.Load(); w != 3 || n != 16 {
		t.Errorf("queue of 3: %d waiting, %d refused; want 3 and 16", w, n)
	}
	open()
	wg.Wait()
	if r := post(t, url, `{"prompt":"q","max_tokens":2,"n":4}`); r.status != 400 {
		t.Errorf("n = 4 over a queue of 3: status %d, want 400", r.status)
	} else if _, _, param, _ := errorObject(t, r); param != "n" {
		t.Errorf("n = 4 over a queue of 3: param %v, want n", param)
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not reached in 5 s")
}

// A client that disconnects mid-stream frees its sequence: running back
// to 0 and the blocks back to the idle count, as /metrics reports them.
func TestDisconnectFreesSequence(t *testing.T) {
	f := newFake(2)
	f.delay = 5 * time.Millisecond
	_, ts := startServer(t, f, Config{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/completions",
		strings.NewReader(`{"prompt":"long","max_tokens":100,"stream":true}`))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if _, err := res.Body.Read(buf); err != nil { // the stream has started
		t.Fatal(err)
	}
	if f.Stats().Running != 1 {
		t.Fatalf("running %d while streaming", f.Stats().Running)
	}
	cancel()
	res.Body.Close()
	waitFor(t, func() bool {
		m := do(t, "GET", ts.URL+"/metrics", "")
		return bytes.Contains(m.body, []byte(`vllm:num_requests_running{model_name="fake"} 0`)) &&
			bytes.Contains(m.body, []byte(`stride_kv_blocks_free{model_name="fake"} 64`))
	})
}

// Drain: the running request finishes, new ones and /health get 503 with
// Retry-After, and Drain returns once the server is idle.
func TestDrainFinishesRunning(t *testing.T) {
	f := newFake(2)
	f.delay = 10 * time.Millisecond
	s, ts := startServer(t, f, Config{}, nil)
	done := make(chan response)
	go func() { done <- post(t, ts.URL+"/v1/completions", `{"prompt":"d","max_tokens":20}`) }()
	waitFor(t, func() bool { return f.Stats().Running == 1 })
	drained := make(chan error)
	go func() { drained <- s.Drain(context.Background()) }()
	waitFor(t, s.Draining)
	for _, r := range []response{post(t, ts.URL+"/v1/completions", `{"prompt":"d","max_tokens":2}`), do(t, "GET", ts.URL+"/health", "")} {
		if r.status != 503 || r.header.Get("Retry-After") == "" {
			t.Errorf("while draining: status %d Retry-After %q", r.status, r.header.Get("Retry-After"))
		}
	}
	r := <-done
	var c textCompletion
	if json.Unmarshal(r.body, &c); r.status != 200 || len(c.Choices) != 1 || len([]rune(c.Choices[0].Text)) != 20 {
		t.Errorf("the running request: %d %s", r.status, r.body)
	}
	if err := <-drained; err != nil {
		t.Errorf("Drain: %v", err)
	}
}

// A drain that runs out of time cancels what runs: the stream ends with
// an error event and [DONE], and Drain returns the deadline's error.
func TestDrainTimeoutCancels(t *testing.T) {
	f := newFake(2)
	f.delay = 20 * time.Millisecond
	s, ts := startServer(t, f, Config{}, nil)
	done := make(chan response)
	go func() { done <- post(t, ts.URL+"/v1/completions", `{"prompt":"d","max_tokens":100,"stream":true}`) }()
	waitFor(t, func() bool { return f.Stats().Running == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Drain(ctx); err != context.DeadlineExceeded {
		t.Errorf("Drain = %v, want the deadline", err)
	}
	ev := sseEvents(t, (<-done).body)
	if !strings.Contains(ev[len(ev)-2], `"error"`) {
		t.Errorf("cancelled stream ends %q", ev[len(ev)-2:])
	}
	waitFor(t, func() bool { return f.Stats().Running == 0 })
}
