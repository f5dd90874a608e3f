package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stride-lm/stride/model/chat"
	"github.com/stride-lm/stride/model/engine"
)

// TestModelsAndTokenizeRoutes on stories260K: /v1/models lists the served
// name and max_model_len; /tokenize counts what a completion's usage
// counts (with BOS unless add_special_tokens is false), for a prompt and
// for chat messages; /detokenize inverts /tokenize; a wrong model is a
// 404, a missing prompt and an id outside the vocabulary are 400s naming
// the field.
func TestModelsAndTokenizeRoutes(t *testing.T) {
	b := engineBackend(t)
	_, ts := startServer(t, b, Config{ModelName: "m"}, nil)
	var models struct {
		Object string `json:"object"`
		Data   []struct {
			ID          string `json:"id"`
			Object      string `json:"object"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	if err := json.Unmarshal(do(t, "GET", ts.URL+"/v1/models", "").body, &models); err != nil ||
		models.Object != "list" || len(models.Data) != 1 || models.Data[0].ID != "m" || models.Data[0].MaxModelLen != 512 {
		t.Errorf("/v1/models: %+v (%v); want one model m with max_model_len 512 (stories260K's seq_len)", models, err)
	}
	type tokens struct {
		Tokens      []int `json:"tokens"`
		Count       int   `json:"count"`
		MaxModelLen int   `json:"max_model_len"`
	}
	tokenize := func(body string) tokens {
		t.Helper()
		r := post(t, ts.URL+"/tokenize", body)
		var tk tokens
		if err := json.Unmarshal(r.body, &tk); r.status != 200 || err != nil || tk.Count != len(tk.Tokens) || tk.MaxModelLen != 512 {
			t.Fatalf("/tokenize %s: %d %s", body, r.status, r.body)
		}
		return tk
	}
	promptTokens := func(path, body string) int {
		t.Helper()
		var c struct{ Usage usage }
		if err := json.Unmarshal(post(t, ts.URL+path, body).body, &c); err != nil {
			t.Fatal(err)
		}
		return c.Usage.PromptTokens
	}
	const text = "Once upon a time, a cat sat."
	with := tokenize(`{"model":"m","prompt":"` + text + `"}`)
	without := tokenize(`{"prompt":"` + text + `","add_special_tokens":false}`)
	if with.Tokens[0] != 1 || !slices.Equal(with.Tokens[1:], without.Tokens) {
		t.Errorf("with special tokens %v, without %v; want BOS (1) then the same ids", with.Tokens, without.Tokens)
	}
	if n := promptTokens("/v1/completions", `{"prompt":"`+text+`","max_tokens":1}`); n != with.Count {
		t.Errorf("/tokenize counts %d tokens, the completion's usage %d", with.Count, n)
	}
	msgs := `"messages":[{"role":"system","content":"Be kind."},{"role":"user","content":"Tell me a story"}]`
	if tk, n := tokenize(`{`+msgs+`}`), promptTokens("/v1/chat/completions", `{`+msgs+`,"max_tokens":1}`); tk.Count != n {
		t.Errorf("/tokenize counts %d tokens of the chat, the chat's usage %d", tk.Count, n)
	}
	ids, _ := json.Marshal(with.Tokens)
	var detok struct{ Prompt string }
	if r := post(t, ts.URL+"/detokenize", `{"model":"m","tokens":`+string(ids)+`}`); json.Unmarshal(r.body, &detok) != nil || detok.Prompt != text {
		t.Errorf("/detokenize of %v: %d %s, want %q", with.Tokens, r.status, r.body, text)
	}
	for _, c := range []struct {
		path, body, param string
		status            int
	}{
		{"/tokenize", `{"model":"other","prompt":"x"}`, "model", 404},
		{"/tokenize", `{"model":"m"}`, "prompt", 400},
		{"/detokenize", `{"tokens":[1,512]}`, "tokens", 400},
		{"/detokenize", `{"model":"other","tokens":[1]}`, "model", 404},
	} {
		r := post(t, ts.URL+c.path, c.body)
		if _, _, param, _ := errorObject(t, r); r.status != c.status || param != c.param {
			t.Errorf("%s %s: status %d param %v, want %d %s", c.path, c.body, r.status, param, c.status, c.param)
		}
	}
}

// TestLoadingIs503: while the model loads every route, /health included,
// is a 503 with Retry-After and an error object.
func TestLoadingIs503(t *testing.T) {
	ts := httptest.NewServer(Loading())
	t.Cleanup(ts.Close)
	for _, path := range []string{"/health", "/v1/models"} {
		r := do(t, "GET", ts.URL+path, "")
		if _, typ, _, _ := errorObject(t, r); r.status != 503 || r.header.Get("Retry-After") == "" || typ != "service_unavailable_error" {
			t.Errorf("%s while loading: %d, Retry-After %q, type %s", path, r.status, r.header.Get("Retry-After"), typ)
		}
	}
}

// TestPrefixSharingAndCachedTokens: n = 2 choices of one prompt share its
// KV blocks (the second is a prefix-cache hit on the first's blocks, so
// vllm:prefix_cache_hits_total grows by whole blocks within one request),
// and the same prompt sent again reports those hits as usage's
// prompt_tokens_details.cached_tokens, with the same greedy text.
func TestPrefixSharingAndCachedTokens(t *testing.T) {
	b := engineBackend(t)
	_, ts := startServer(t, b, Config{ModelName: "m"}, nil)
	prompt := strings.Repeat("Lily and Ben went to the park to play with a big red ball. ", 3)
	body := fmt.Sprintf(`{"prompt":%q,"max_tokens":8,"temperature":0,"n":2}`, prompt)
	type answer struct {
		Choices []struct{ Text string }
		Usage   usage
	}
	send := func() answer {
		t.Helper()
		var a answer
		if r := post(t, ts.URL+"/v1/completions", body); r.status != 200 || json.Unmarshal(r.body, &a) != nil || len(a.Choices) != 2 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		return a
	}
	first := send()
	hits := b.Stats().PrefixHits
	const block = 16 // the engine's default block size
	if hits < block || hits%block != 0 {
		t.Errorf("n = 2 on a %d-token prompt: %d prefix-hit tokens, want whole blocks shared by the second choice", first.Usage.PromptTokens, hits)
	}
	if first.Usage.PromptTokens < 2*block || first.Choices[0].Text != first.Choices[1].Text {
		t.Fatalf("first answer %+v: want a prompt of two blocks or more and equal greedy choices", first)
	}
	again := send()
	c := again.Usage.PromptTokensDetails.CachedTokens
	if c < block || c%block != 0 || c >= again.Usage.PromptTokens || again.Choices[0].Text != first.Choices[0].Text {
		t.Errorf("same prompt again: cached_tokens %d of %d prompt tokens, text %q (first %q); want whole cached blocks and the same text",
			c, again.Usage.PromptTokens, again.Choices[0].Text, first.Choices[0].Text)
	}
}

// TestAccessLogLine: one JSON line per request on the log, with the
// request's id, status, token counts (the response's usage), TTFT, total
// time and finish reason.
func TestAccessLogLine(t *testing.T) {
	var logs syncBuffer
	_, ts := startServer(t, engineBackend(t), Config{ModelName: "m"}, &logs)
	r := post(t, ts.URL+"/v1/completions", `{"prompt":"Once upon a time","max_tokens":5,"temperature":0}`)
	var c struct {
		ID    string `json:"id"`
		Usage usage
	}
	if err := json.Unmarshal(r.body, &c); err != nil {
		t.Fatal(err)
	}
	do(t, "GET", ts.URL+"/nowhere", "")
	// The line is written as the handler returns, which may be just
	// after the client has read the answer.
	waitFor(t, func() bool { return strings.Count(logs.String(), "\n") >= 2 })
	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", sc.Text(), err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 2 {
		t.Fatalf("%d log lines for 2 requests: %s", len(lines), logs.String())
	}
	l := lines[0]
	for k, want := range map[string]any{"id": c.ID, "status": 200.0, "path": "/v1/completions", "prompt_tokens": float64(c.Usage.PromptTokens),
		"cached_tokens": 0.0, "generated_tokens": 5.0, "finish_reason": "length"} {
		if l[k] != want {
			t.Errorf("log %s = %v, want %v (line %v)", k, l[k], want, l)
		}
	}
	ttft, ok1 := l["ttft_ms"].(float64)
	total, ok2 := l["total_ms"].(float64)
	if !ok1 || !ok2 || ttft <= 0 || total < ttft {
		t.Errorf("ttft_ms %v, total_ms %v: want 0 < ttft <= total", l["ttft_ms"], l["total_ms"])
	}
	if lines[1]["status"] != 404.0 {
		t.Errorf("unknown route logged as %v", lines[1])
	}
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// TestEngineQueueFull on the real engine, whose own count is the waiting
// gauge: with one sequence running (held in its step) and one waiting,
// the next request is a 503 with Retry-After; the waiting one, whose
// client goes away, never starts (its prompt is never looked up in the
// cache); once the first finishes the server answers again, and nothing
// runs or waits.
func TestEngineQueueFull(t *testing.T) {
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	b, e := engineBackendWith(t, engine.Options{MaxBatch: 1, Threads: 1, OnLogits: func(int, int, []float32) {
		once.Do(func() { close(held); <-release })
	}})
	s, _ := startServer(t, b, Config{ModelName: "m", MaxQueue: 1, RetryAfter: 2}, nil)
	// gone is closed when the server sees the second client go away.
	gone := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Client") == "b" {
			defer context.AfterFunc(r.Context(), func() { close(gone) })()
		}
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	t.Cleanup(func() { closeOnce(release) }) // before the server closes, even if the test fails
	// The first runs 64 steps after the release: its stream, not a
	// timer, keeps the second waiting while the cancellation lands.
	body := `{"prompt":"Once upon a time","max_tokens":64,"ignore_eos":true,"temperature":0}`
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); post(t, ts.URL+"/v1/completions", body) }()
	<-held // the first request runs, the loop held in its step
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer wg.Done()
		req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/completions", strings.NewReader(`{"prompt":"The cat sat","max_tokens":4}`))
		req.Header.Set("X-Client", "b")
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
		}
	}()
	waitFor(t, func() bool { st := b.Stats(); return st.Running == 1 && st.Waiting == 1 })
	r := post(t, ts.URL+"/v1/completions", body)
	if _, typ, _, _ := errorObject(t, r); r.status != 503 || r.header.Get("Retry-After") != "2" || typ != "service_unavailable_error" {
		t.Errorf("queue full: status %d Retry-After %q type %s", r.status, r.header.Get("Retry-After"), typ)
	}
	looked := e.Stats().KV.PromptTokens // the first prompt's lookup
	cancel()
	select { // the loop drops it at its next step boundary, after the release
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("the server did not see the client go away in 5 s")
	}
	closeOnce(release)
	wg.Wait()
	if r := post(t, ts.URL+"/v1/completions", body); r.status != 200 {
		t.Errorf("after the queue emptied: %d %s", r.status, r.body)
	}
	waitFor(t, func() bool { st := b.Stats(); return st.Running == 0 && st.Waiting == 0 })
	if got, want := e.Stats().KV.PromptTokens, 2*looked; got != want {
		t.Errorf("%d prompt tokens looked up, want %d (the first prompt twice): the cancelled request started", got, want)
	}
}

// closeOnce closes c unless it is closed already.
func closeOnce(c chan struct{}) {
	select {
	case <-c:
	default:
		close(c)
	}
}

// TestChoicesAreSeededRequests on the engine: with n = 2 and a seed,
// choice k is exactly the same request's n = 1 answer with seed + k
// (text and logprobs), streamed or not.
func TestChoicesAreSeededRequests(t *testing.T) {
	_, ts := startServer(t, engineBackend(t), Config{ModelName: "m"}, nil)
	req := func(n, seed int, stream bool) string {
		return fmt.Sprintf(`{"prompt":"Once upon a time","max_tokens":24,"temperature":0.9,"top_p":0.95,"logprobs":1,"n":%d,"seed":%d,"stream":%v}`, n, seed, stream)
	}
	for _, stream := range []bool{false, true} {
		both := parseOutcome(t, post(t, ts.URL+"/v1/completions", req(2, 5, stream)).body, stream, false)
		if len(both.Text) != 2 {
			t.Fatalf("n = 2 gave %d choices", len(both.Text))
		}
		for k := range 2 {
			one := parseOutcome(t, post(t, ts.URL+"/v1/completions", req(1, 5+k, false)).body, false, false)
			if both.Text[k] != one.Text[0] || both.Logprobs[k] != one.Logprobs[0] {
				t.Errorf("stream=%v choice %d: %q, want seed %d's %q", stream, k, both.Text[k], 5+k, one.Text[0])
			}
		}
		if both.Text[0] == both.Text[1] {
			t.Errorf("both choices sampled %q: the seeds did not differ", both.Text[0])
		}
	}
}

// noBOSCodec is a vocabulary without BOS (as some GGUF files): it
// refuses a request for BOS as the real tokenizer does, and encodes each
// byte as its own id.
type noBOSCodec struct{}

func (noBOSCodec) Encode(text string, bos, eos bool) ([]int, error) {
	if bos {
		return nil, fmt.Errorf("tokenizer: BOS requested but the vocabulary has no BOS id")
	}
	ids := make([]int, len(text))
	for i := range len(text) {
		ids[i] = int(text[i])
	}
	return ids, nil
}
func (noBOSCodec) Decode(prev, tok int) string { return string(rune(tok)) }
func (noBOSCodec) VocabSize() int              { return 256 }
func (noBOSCodec) BOS() int                    { return -1 }
func (noBOSCodec) EOS() int                    { return -1 }
func (noBOSCodec) AddBOS() bool                { return false }

// TestRunCChatWithoutBOS: run.c's chat format on a vocabulary without
// BOS renders the turns without one, as infer chat does, instead of
// failing every chat request.
func TestRunCChatWithoutBOS(t *testing.T) {
	b := &EngineBackend{codec: noBOSCodec{}, tmpl: chat.Fallback()}
	for _, msgs := range [][]Message{
		{{"system", "Be kind."}, {"user", "Hi"}, {"assistant", "Hello"}, {"user", "Bye"}},
		{{"system", "Be kind."}},
	} {
		ids, err := b.TokenizeChat(msgs)
		if err != nil || len(ids) == 0 || slices.Contains(ids, -1) {
			t.Errorf("%v: %v, %v", msgs, ids, err)
		}
	}
}

// A prompt the engine refuses at submission (token ids without BOS, which
// run.c's rule needs) is a 400 naming prompt, not an empty param, and the
// server keeps serving. The first prompt of the request was already
// submitted: its tokens must be drained, or its forwarding goroutine
// blocks and the handler never answers (it hung under -race).
func TestEngineRefusalNamesPrompt(t *testing.T) {
	_, ts := startServer(t, engineBackend(t), Config{ModelName: "m"}, nil)
	r := post(t, ts.URL+"/v1/completions", `{"prompt":[[1,2],[3]],"max_tokens":1}`)
	if _, typ, param, _ := errorObject(t, r); r.status != 400 || typ != "invalid_request_error" || param != "prompt" {
		t.Errorf("ids without BOS: %d %s", r.status, r.body)
	}
	r = post(t, ts.URL+"/v1/completions", `{"prompt":"{","max_tokens":1}`)
	if r.status != 200 {
		t.Errorf("after the refusal: %d %s", r.status, r.body)
	}
	if r := post(t, ts.URL+"/v1/completions", `{"prompt":`); r.status != 400 || !strings.Contains(string(r.body), `"param":null`) {
		t.Errorf("bad JSON: %d %s; want 400 with param null", r.status, r.body)
	}
}
