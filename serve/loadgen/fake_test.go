package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeServer is an OpenAI-compatible server with scripted behaviour: a
// prompt starting "503" is refused with 503, "nousage" streams without
// usage, "hang" streams one chunk then waits for the client to go;
// every other prompt streams max_tokens one-letter chunks, the first
// after ttft and each next after gap, then usage. It checks every
// request's body and counts the requests in flight.
type fakeServer struct {
	t         *testing.T
	ttft, gap time.Duration
	mu        sync.Mutex
	inFlight  int
	maxFlight int
	bad       []string
	prompts   []string // every prompt received, in order
	ts        *httptest.Server
}

func newFake(t *testing.T, ttft, gap time.Duration) *fakeServer {
	f := &fakeServer{t: t, ttft: ttft, gap: gap}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"object":"list","data":[{"id":"fake-1"},{"id":"fake-2"}]}`)
	})
	mux.HandleFunc("POST /tokenize", func(w http.ResponseWriter, r *http.Request) {
		var b struct{ Prompt string }
		json.NewDecoder(r.Body).Decode(&b)
		n, _ := wordCounter(nil, b.Prompt)
		fmt.Fprintf(w, `{"count":%d}`, n)
	})
	mux.HandleFunc("POST /v1/completions", f.generate)
	mux.HandleFunc("POST /v1/chat/completions", f.generate)
	f.ts = httptest.NewServer(mux)
	t.Cleanup(f.ts.Close)
	return f
}

func (f *fakeServer) problem(format string, args ...any) {
	f.mu.Lock()
	f.bad = append(f.bad, fmt.Sprintf(format, args...))
	f.mu.Unlock()
}

func (f *fakeServer) generate(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.inFlight++
	f.maxFlight = max(f.maxFlight, f.inFlight)
	f.mu.Unlock()
	// A request leaves the count before its last write, so a client that
	// has read the whole answer never sees the server count it.
	var once sync.Once
	leave := func() { once.Do(func() { f.mu.Lock(); f.inFlight--; f.mu.Unlock() }) }
	defer leave()
	var b struct {
		Model         string
		Prompt        *string
		Messages      []struct{ Role, Content string }
		MaxTokens     int  `json:"max_tokens"`
		Stream        bool `json:"stream"`
		IgnoreEOS     bool `json:"ignore_eos"`
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
		f.problem("body: %v", err)
	}
	chat := strings.HasSuffix(r.URL.Path, "/chat/completions")
	prompt := ""
	switch {
	case chat && len(b.Messages) == 1 && b.Messages[0].Role == "user":
		prompt = b.Messages[0].Content
	case !chat && b.Prompt != nil:
		prompt = *b.Prompt
	default:
		f.problem("no prompt in %+v", b)
	}
	f.mu.Lock()
	f.prompts = append(f.prompts, prompt)
	f.mu.Unlock()
	if b.Model != "fake-1" || !b.Stream || !b.StreamOptions.IncludeUsage || b.MaxTokens < 1 || !b.IgnoreEOS {
		f.problem("request %+v", b)
	}
	if strings.HasPrefix(prompt, "503") {
		leave()
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"error":{"message":"the queue is full","type":"server_error"}}`)
		return
	}
	f.stream(w, r, chat, prompt, b.MaxTokens, leave)
}

func (f *fakeServer) stream(w http.ResponseWriter, r *http.Request, chat bool, prompt string, n int, leave func()) {
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	send := func(s string) { io.WriteString(w, "data: "+s+"\n\n"); fl.Flush() }
	piece := func(s string) string {
		if chat {
			return fmt.Sprintf(`{"choices":[{"index":0,"delta":{"content":%q}}]}`, s)
		}
		return fmt.Sprintf(`{"choices":[{"index":0,"text":%q}]}`, s)
	}
	if chat {
		send(`{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`)
	}
	time.Sleep(f.ttft)
	for i := range n {
		if i > 0 {
			time.Sleep(f.gap)
		}
		send(piece(string(rune('a' + i%26))))
		if strings.HasPrefix(prompt, "hang") {
			<-r.Context().Done()
			return
		}
	}
	if !strings.HasPrefix(prompt, "nousage") {
		pl, _ := wordCounter(nil, prompt)
		send(fmt.Sprintf(`{"choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`, pl, n, pl+n))
	}
	leave()
	send("[DONE]")
}

func (f *fakeServer) check() {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.bad {
		f.t.Error("server saw: " + p)
	}
}

func prompts(texts ...string) []Prompt {
	ps := make([]Prompt, len(texts))
	for i, s := range texts {
		ps[i] = Prompt{Index: i, Text: s, OutputLen: 4}
	}
	return ps
}

// A run against the scripted server: failures counted by status, token
// counts from usage, latencies no shorter than the script makes them
// (lower bounds only: the machine may be slow, never early), the
// concurrency bound kept, the model taken from /v1/models' first entry.
func TestRunAgainstScriptedServer(t *testing.T) {
	for _, chat := range []bool{false, true} {
		f := newFake(t, 30*time.Millisecond, 5*time.Millisecond)
		tg, err := NewTarget(f.ts.URL, "", 4)
		if err != nil {
			t.Fatal(err)
		}
		models, err := tg.Models(context.Background())
		if err != nil || len(models) != 2 {
			t.Fatalf("models %v %v", models, err)
		}
		tg.Model, tg.Chat = models[0], chat
		ps := prompts("the cat", "503 busy", "a dog ran", "the sun", "503 again", "I saw a bird")
		res, err := Run(context.Background(), tg, ps, Config{Rate: math.Inf(1), Burstiness: 1, MaxConcurrency: 2, IgnoreEOS: true, Warmup: 1})
		if err != nil {
			t.Fatal(err)
		}
		f.check()
		s := Summarize(res.Records, res.Duration, []float64{99}, SLO{})
		if s.Completed != 4 || s.Failed != 2 || s.FailedByStatus["503"] != 2 || s.TotalOutputTokens != 16 {
			t.Errorf("chat %v: %+v", chat, s)
		}
		// the cat = 1+1+3, a dog ran = 1+1+3+3, the sun = 1+1+3, I saw a bird = 1+1+3+1+4
		if s.TotalInputTokens != 5+8+5+10 {
			t.Errorf("input tokens %d", s.TotalInputTokens)
		}
		for _, r := range res.Records {
			if !r.OK() {
				if r.Err != "the queue is full" {
					t.Errorf("failure message %q", r.Err)
				}
				continue
			}
			var sum time.Duration
			for _, g := range r.ITL {
				sum += g
			}
			if r.Text != "abcd" || len(r.ITL) != 3 || r.TTFT < 30*time.Millisecond || r.TTFT+sum < 45*time.Millisecond || r.Latency < r.TTFT+sum {
				t.Errorf("chat %v: record %+v", chat, r)
			}
		}
		if f.maxFlight > 2 {
			t.Errorf("%d requests in flight with a bound of 2", f.maxFlight)
		}
	}
}

// A server whose streams carry no usage fails the run: output tokens
// would be guessed otherwise.
func TestRunWithoutUsageIsAnError(t *testing.T) {
	f := newFake(t, 0, 0)
	tg, _ := NewTarget(f.ts.URL+"/v1/", "", 1)
	tg.Model = "fake-1"
	res, err := Run(context.Background(), tg, prompts("the cat", "nousage here"), Config{Rate: 100, Burstiness: 1, IgnoreEOS: true})
	if !errors.Is(err, ErrNoUsage) || res == nil || res.Records[1].Status != "missing usage" || !res.Records[0].OK() {
		t.Fatalf("%v %+v", err, res)
	}
	if _, err := Run(context.Background(), tg, prompts("nousage"), Config{Rate: 1, Burstiness: 1, Warmup: 1, IgnoreEOS: true}); !errors.Is(err, ErrNoUsage) {
		t.Errorf("warm-up without usage: %v", err)
	}
}

// Cancelling a run cuts the requests in flight and those not yet sent:
// all are counted as cancelled, and the run returns the context's error.
func TestRunCancelled(t *testing.T) {
	f := newFake(t, 0, 0)
	tg, _ := NewTarget(f.ts.URL, "", 2)
	tg.Model = "fake-1"
	ctx, cancel := context.WithCancel(context.Background())
	cfg := Config{Rate: 2, Burstiness: 1, Seed: 3, IgnoreEOS: true}
	// The first request hangs; cancel once it is in flight.
	go func() {
		for {
			f.mu.Lock()
			busy := f.inFlight
			f.mu.Unlock()
			if busy > 0 {
				time.Sleep(10 * time.Millisecond)
				cancel()
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	res, err := Run(ctx, tg, prompts("hang on", "the cat", "the dog", "the sun"), cfg)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	s := Summarize(res.Records, res.Duration, nil, SLO{})
	if s.FailedByStatus["cancelled"] < 1 || s.Completed+s.Failed != 4 {
		t.Errorf("%+v", s)
	}
}

// The base URL is taken with or without /v1; a bad one and an
// unreachable one are one-line errors.
func TestTargetURLs(t *testing.T) {
	for _, in := range []string{"http://h:1", "http://h:1/", "http://h:1/v1", "http://h:1/v1/"} {
		tg, err := NewTarget(in, "", 1)
		if err != nil || tg.API != "http://h:1/v1" || tg.Root != "http://h:1" {
			t.Errorf("%s: %+v %v", in, tg, err)
		}
	}
	for _, in := range []string{"h:1", "ftp://h/v1", "http://", "::"} {
		if _, err := NewTarget(in, "", 1); err == nil || !strings.Contains(err.Error(), "--base-url") {
			t.Errorf("%q: %v", in, err)
		}
	}
	ts := httptest.NewServer(http.NotFoundHandler())
	url := ts.URL
	ts.Close()
	tg, _ := NewTarget(url, "", 1)
	_, err := tg.Models(context.Background())
	if err == nil || !strings.Contains(err.Error(), "cannot reach "+url) || strings.Contains(err.Error(), "\n") {
		t.Errorf("unreachable: %v", err)
	}
}

// The JSON keeps vLLM's field names, the per-request arrays, and the
// records.
func TestReportJSONFieldNames(t *testing.T) {
	recs := []Record{{TTFT: time.Millisecond, Latency: 3 * time.Millisecond, ITL: []time.Duration{time.Millisecond}, PromptLen: 5, OutputLen: 2, Text: "ab"},
		{Status: "503", Err: "full"}}
	res := &Result{Config: Config{Rate: math.Inf(1), Burstiness: 1}, Prompts: 2, Records: recs, Duration: time.Second}
	rep := NewReport(res, []float64{50, 99, 99.9}, SLO{TTFT: 2}, "m", "completions", "server", time.Unix(0, 0))
	var b strings.Builder
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(b.String()), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"completed", "failed", "total_input_tokens", "total_output_tokens", "request_throughput",
		"request_goodput", "output_throughput", "total_token_throughput", "duration", "num_prompts", "burstiness",
		"mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p99_ttft_ms", "p99.9_ttft_ms", "p50_ttft_ms",
		"mean_tpot_ms", "p99_tpot_ms", "mean_itl_ms", "p99_itl_ms", "mean_e2el_ms", "p99_e2el_ms",
		"input_lens", "output_lens", "ttfts", "itls", "generated_texts", "errors", "failed_by_status", "requests"} {
		if _, ok := m[k]; !ok {
			t.Errorf("no %q in the JSON", k)
		}
	}
	if m["request_rate"] != "inf" || m["completed"] != 1.0 || m["mean_tpot_ms"] != 2.0 || m["request_goodput"] != 1.0 {
		t.Errorf("values: rate %v completed %v tpot %v goodput %v", m["request_rate"], m["completed"], m["mean_tpot_ms"], m["request_goodput"])
	}
	var tb strings.Builder
	if err := rep.WriteTable(&tb); err != nil || !strings.Contains(tb.String(), "failed: 503") || !strings.Contains(tb.String(), "P99.9 TTFT (ms)") {
		t.Errorf("table:\n%s", tb.String())
	}
}

// A kept-alive connection the server closes as a request goes out on it
// is retried on another: the server took nothing. The server here drops
// every second request on a connection unanswered, which the client sees
// as on a reused connection; a request on a new connection that gets no
// answer is not retried. Whether the client reuses a connection depends
// on when its transport puts the last one back in the pool, so requests
// are sent until two drops have happened (at most 20), and the test
// counts rather than expecting a layout of connections.
func TestSendRetriesOnAReusedConnection(t *testing.T) {
	f := newFake(t, 0, 0)
	var mu sync.Mutex
	seen := map[string]int{}
	drops := 0
	drop := func(w http.ResponseWriter) {
		if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
			c.Close()
		}
	}
	dropAll := false
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.RemoteAddr]++
		n, all := seen[r.RemoteAddr], dropAll
		if all || n == 2 {
			drops++
		}
		mu.Unlock()
		if all || n == 2 {
			drop(w)
			return
		}
		f.ts.Config.Handler.ServeHTTP(w, r)
	}))
	defer ts.Close()
	tg, _ := NewTarget(ts.URL, "", 1)
	tg.Model = "fake-1"
	sent := 0
	for ; sent < 20; sent++ {
		mu.Lock()
		enough := drops >= 2
		mu.Unlock()
		if enough {
			break
		}
		rec := tg.Send(context.Background(), Prompt{Text: "the cat", OutputLen: 2}, true, time.Now(), time.Now)
		if !rec.OK() || rec.OutputLen != 2 {
			t.Fatalf("request %d: %s %s", sent, rec.Status, rec.Err)
		}
	}
	mu.Lock()
	total, dropped := 0, drops
	for _, n := range seen {
		total += n
	}
	dropAll = true
	mu.Unlock()
	// Every request answered; each drop was a reused connection's second
	// request, and was sent again: the server saw the requests and their
	// retries, nothing more.
	if dropped < 2 || total != sent+dropped {
		t.Fatalf("%d requests answered, %d dropped, %d seen by the server (%v)", sent, dropped, total, seen)
	}
	tg.Close()
	if rec := tg.Send(context.Background(), Prompt{Text: "the cat", OutputLen: 2}, true, time.Now(), time.Now); rec.Status != "error" {
		t.Errorf("a dropped request on a new connection: status %q", rec.Status)
	}
	mu.Lock()
	defer mu.Unlock()
	after := 0
	for _, n := range seen {
		after += n
	}
	if after != total+1 {
		t.Errorf("a request dropped on a new connection reached the server %d times, want once", after-total)
	}
}

// The warm-up sends its own prompts when it has them, else the dataset's
// first ones; either way before every measured request.
func TestWarmupPrompts(t *testing.T) {
	for _, own := range []bool{true, false} {
		f := newFake(t, 0, 0)
		tg, _ := NewTarget(f.ts.URL, "", 1)
		tg.Model = "fake-1"
		cfg := Config{Rate: math.Inf(1), Burstiness: 1, MaxConcurrency: 1, Warmup: 3, IgnoreEOS: true}
		want := "[a a b a b]" // the warm-up's three, then the run's, each sorted
		if own {
			cfg.WarmupPrompts = prompts("w1", "w2")
			want = "[w1 w1 w2 a b]"
		}
		if _, err := Run(context.Background(), tg, prompts("a", "b"), cfg); err != nil {
			t.Fatal(err)
		}
		slices.Sort(f.prompts[:3]) // goroutines race for the one slot
		slices.Sort(f.prompts[3:])
		if got := fmt.Sprint(f.prompts); got != want {
			t.Errorf("own %v: prompts sent %s, want %s", own, got, want)
		}
	}
}
