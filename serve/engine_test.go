package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/stride-lm/stride/tensor"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stride-lm/stride/model/chat"
	"github.com/stride-lm/stride/model/checkpoint"
	"github.com/stride-lm/stride/model/engine"
)

// engineBackend is the built-in stories260K on the online engine, with
// infer serve's chunked-prefill defaults (token budget and chunk rule).
func engineBackend(t *testing.T) *EngineBackend {
	t.Helper()
	b, _ := engineBackendWith(t, engine.Options{MaxBatchedTokens: engine.DefaultMaxBatchedTokens, PrefillStall: engine.DefaultPrefillStall, Threads: 2})
	return b
}

// engineBackendWith is the built-in stories260K on an online engine with
// opts (its Tokenizer filled in), and that engine.
func engineBackendWith(t *testing.T, opts engine.Options) (*EngineBackend, *engine.Engine) {
	t.Helper()
	ck, err := checkpoint.Open("", checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := ck.Load()
	if err != nil {
		t.Fatal(err)
	}
	opts.Tokenizer = ck.Tokenizer
	e, err := engine.New(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(); m.Close() })
	return NewEngineBackend(e, EngineConfig{Tokenizer: ck.Tokenizer, Template: chat.Fallback(), StopTokens: ck.Generation.StopTokens}), e
}

// outcome is what must not depend on load: each choice's text and
// logprobs, and its finish reason.
type outcome struct {
	Text, Logprobs, Finish []string
}

// parseOutcome reads a whole or streamed answer of a chat or completion.
func parseOutcome(t *testing.T, body []byte, stream, isChat bool) outcome {
	t.Helper()
	var o outcome
	set := func(i int, text, lp, fin string) {
		for len(o.Text) <= i {
			o.Text, o.Logprobs, o.Finish = append(o.Text, ""), append(o.Logprobs, ""), append(o.Finish, "")
		}
		o.Text[i] += text
		o.Logprobs[i] += lp
		if fin != "" {
			o.Finish[i] = fin
		}
	}
	if !stream {
		var c struct {
			Choices []struct {
				Index        int             `json:"index"`
				Text         string          `json:"text"`
				Message      chatMsg         `json:"message"`
				Logprobs     json.RawMessage `json:"logprobs"`
				FinishReason string          `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(body, &c); err != nil || len(c.Choices) == 0 {
			t.Fatalf("answer %q: %v", body, err)
		}
		for _, ch := range c.Choices {
			set(ch.Index, ch.Text+ch.Message.Content, logprobTokens(t, ch.Logprobs, isChat), ch.FinishReason)
		}
		return o
	}
	for _, ev := range sseEvents(t, body) {
		if ev == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Index        int             `json:"index"`
				Text         string          `json:"text"`
				Delta        chatDelta       `json:"delta"`
				Logprobs     json.RawMessage `json:"logprobs"`
				FinishReason *string         `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(ev), &c); err != nil {
			t.Fatalf("event %q: %v", ev, err)
		}
		for _, ch := range c.Choices {
			fin := ""
			if ch.FinishReason != nil {
				fin = *ch.FinishReason
			}
			set(ch.Index, ch.Text+ch.Delta.Content, logprobTokens(t, ch.Logprobs, isChat), fin)
		}
	}
	return o
}

// logprobTokens flattens logprobs (either form) to "token=logprob;" text,
// the bytes of the numbers as the server wrote them.
func logprobTokens(t *testing.T, raw json.RawMessage, isChat bool) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var b strings.Builder
	if isChat {
		var lp struct {
			Content []struct {
				Token   string          `json:"token"`
				Logprob json.RawMessage `json:"logprob"`
				Top     json.RawMessage `json:"top_logprobs"`
			} `json:"content"`
		}
		json.Unmarshal(raw, &lp)
		for _, c := range lp.Content {
			fmt.Fprintf(&b, "%q=%s%s;", c.Token, c.Logprob, c.Top)
		}
		return b.String()
	}
	var lp struct {
		Tokens []string          `json:"tokens"`
		LPs    []json.RawMessage `json:"token_logprobs"`
		Top    []json.RawMessage `json:"top_logprobs"`
	}
	json.Unmarshal(raw, &lp)
	for i := range lp.Tokens {
		// Each token with its top alternatives, so that a stream's
		// chunks and a whole answer flatten alike.
		var top json.RawMessage
		if i < len(lp.Top) {
			top = lp.Top[i]
		}
		fmt.Fprintf(&b, "%q=%s%s;", lp.Tokens[i], lp.LPs[i], top)
	}
	return b.String()
}

// loadRequest is one request of the load test.
type loadRequest struct {
	path, body   string
	stream, chat bool
	cancel       bool // the client gives up midway
}

func loadRequests(n int) []loadRequest {
	rng := rand.New(rand.NewPCG(7, 11))
	prompts := []string{"Once upon a time", "The cat", "Lily and Ben went to the park", "One day, a little bird"}
	var out []loadRequest
	for i := range n {
		r := loadRequest{chat: rng.IntN(3) == 0, stream: rng.IntN(2) == 0, cancel: rng.IntN(6) == 0}
		p := prompts[rng.IntN(len(prompts))]
		fields := fmt.Sprintf(`"max_tokens":%d,"n":%d,"stream":%v`, 8+rng.IntN(40), 1+rng.IntN(2), r.stream)
		if rng.IntN(2) == 0 {
			fields += `,"temperature":0`
		} else {
			fields += fmt.Sprintf(`,"temperature":0.9,"top_p":0.9,"seed":%d`, i)
		}
		if r.chat {
			r.path = "/v1/chat/completions"
			if rng.IntN(2) == 0 {
				fields += `,"logprobs":true,"top_logprobs":2`
			}
			r.body = fmt.Sprintf(`{"messages":[{"role":"user","content":%q}],%s}`, p, fields)
		} else {
			r.path = "/v1/completions"
			if rng.IntN(2) == 0 {
				fields += `,"logprobs":2`
			}
			r.body = fmt.Sprintf(`{"prompt":%q,%s}`, p, fields)
		}
		out = append(out, r)
	}
	return out
}

// send posts r; with cancel it gives up after a random moment and
// reports ok = false when that cut the answer short.
func send(ctx context.Context, url string, r loadRequest, delay time.Duration) (body []byte, ok bool, err error) {
	if r.cancel {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, delay)
		defer cancel()
	}
	req, _ := http.NewRequestWithContext(ctx, "POST", url+r.path, strings.NewReader(r.body))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, false, nil // cancelled before the answer
	}
	defer res.Body.Close()
	body, err = io.ReadAll(res.Body)
	if err != nil {
		return nil, false, nil
	}
	if res.StatusCode != 200 {
		return body, false, fmt.Errorf("status %d: %s", res.StatusCode, body)
	}
	return body, true, nil
}

// Same bytes under any load: 16 clients fire the requests at random
// moments (greedy and seeded, streamed and not, n = 1 and 2, some
// cancelled midway); every completed answer's text, logprobs and finish
// reasons equal the same request's sent alone to the idle server. Then
// the engine is idle again: nothing running, every block free. The same
// holds with speculative decoding on (what is drafted never changes a
// sequence's tokens). Both run infer serve's chunked-prefill defaults: the chunk
// rule sizes chunks from the wall clock, so they differ run to run, and
// the bytes must not.
func TestSameBytesUnderLoad(t *testing.T) {
	t.Run("off", func(t *testing.T) { sameBytesUnderLoad(t, engineBackend(t)) })
	t.Run("ngram", func(t *testing.T) {
		b, _ := engineBackendWith(t, engine.Options{MaxBatchedTokens: engine.DefaultMaxBatchedTokens, PrefillStall: engine.DefaultPrefillStall, Threads: 2,
			Speculation: engine.Speculation{Method: "ngram"}})
		sameBytesUnderLoad(t, b)
	})
}

func sameBytesUnderLoad(t *testing.T, b *EngineBackend) {
	_, ts := startServer(t, b, Config{ModelName: "m"}, nil)
	reqs := loadRequests(48)
	alone := make([]outcome, len(reqs))
	for i, r := range reqs {
		r.cancel = false
		body, _, err := send(context.Background(), ts.URL, r, 0)
		if err != nil {
			t.Fatalf("request %d alone: %v", i, err)
		}
		alone[i] = parseOutcome(t, body, r.stream, r.chat)
	}
	var next sync.Mutex
	k, compared := 0, 0
	var wg sync.WaitGroup
	for c := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 3))
			for {
				next.Lock()
				i := k
				k++
				next.Unlock()
				if i >= len(reqs) {
					return
				}
				time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond)
				body, ok, err := send(context.Background(), ts.URL, reqs[i], time.Duration(1+rng.IntN(30))*time.Millisecond)
				if err != nil {
					t.Errorf("request %d: %v", i, err)
				}
				if !ok {
					continue
				}
				got := parseOutcome(t, body, reqs[i].stream, reqs[i].chat)
				next.Lock()
				compared++
				next.Unlock()
				if fmt.Sprint(got) != fmt.Sprint(alone[i]) {
					t.Errorf("request %d %s under load:\n%+v\nalone:\n%+v", i, reqs[i].body, got, alone[i])
				}
			}
		}()
	}
	wg.Wait()
	if compared < len(reqs)/2 {
		t.Errorf("only %d of %d answers completed", compared, len(reqs))
	}
	waitFor(t, func() bool {
		st := b.Stats()
		return st.Running == 0 && st.Waiting == 0 && st.BlocksFree == st.BlocksTotal
	})
}

// A client that disconnects mid-stream frees its sequence: /metrics shows
// no running request and every block free again.
func TestEngineDisconnectFreesBlocks(t *testing.T) {
	b := engineBackend(t)
	_, ts := startServer(t, b, Config{ModelName: "m"}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/completions",
		strings.NewReader(`{"prompt":"Once upon a time","max_tokens":480,"ignore_eos":true,"stream":true}`))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 256)
	if _, err := res.Body.Read(buf); err != nil {
		t.Fatal(err)
	}
	cancel()
	res.Body.Close()
	waitFor(t, func() bool {
		m := do(t, "GET", ts.URL+"/metrics", "")
		st := b.Stats()
		// abort: the disconnect, not the length, ended the sequence
		return bytes.Contains(m.body, []byte(`vllm:num_requests_running{model_name="m"} 0`)) &&
			bytes.Contains(m.body, []byte(`vllm:request_success_total{finished_reason="abort",model_name="m"} 1`)) &&
			bytes.Contains(m.body, []byte(fmt.Sprintf(`stride_kv_blocks_free{model_name="m"} %d`, st.BlocksTotal)))
	})
}

// TestIgnoreEOSKeepsStopTokenIDs: ignore_eos drops only the model's EOS;
// a stop_token_ids id still ends the sequence there, as in vLLM. The
// stop id is the 6th token of the same request's greedy run without it.
func TestIgnoreEOSKeepsStopTokenIDs(t *testing.T) {
	b := engineBackend(t)
	run := func(g Generation) ([]int, Finish) {
		st, err := b.Submit(context.Background(), g)
		if err != nil {
			t.Fatal(err)
		}
		var ids []int
		for tok := range st.Tokens() {
			ids = append(ids, tok.ID)
		}
		return ids, st.Wait()
	}
	g := Generation{Prompt: []int{1}, MaxTokens: 40, IgnoreEOS: true, Logprobs: -1}
	plain, _ := run(g)
	if len(plain) < 6 {
		t.Fatalf("greedy run gave %d tokens, want at least 6", len(plain))
	}
	cut := slices.Index(plain, plain[5]) // its first appearance
	g.StopTokenIDs = []int{plain[5]}
	ids, fin := run(g)
	if fin.Reason != "stop" || !slices.Equal(ids, plain[:cut]) {
		t.Fatalf("ignore_eos with stop_token_ids [%d]: %v (%s), want %v (stop)", plain[5], ids, fin.Reason, plain[:cut])
	}
}

// TestMetricsCarryTheLedger: /metrics reports the engine's steps and the
// bytes its Ledger saw copied, the same figures the Ledger itself holds
// once the request is done.
func TestMetricsCarryTheLedger(t *testing.T) {
	led := tensor.NewLedger()
	b, e := engineBackendWith(t, engine.Options{Ledger: led, Path: "naive", Threads: 1})
	_, ts := startServer(t, b, Config{ModelName: "m"}, nil)
	if r := do(t, "POST", ts.URL+"/v1/completions", `{"prompt":"Once upon a time","max_tokens":8,"temperature":0}`); r.status != 200 {
		t.Fatalf("completion: %d %s", r.status, r.body)
	}
	// The loop publishes its counts between steps, so a reading taken
	// just as the response returns may be one step behind: compare the
	// two until they agree (waitFor is bounded).
	waitFor(t, func() bool {
		st, copied := e.Stats(), led.Stats().BytesCopied
		if st.Steps == 0 || copied == 0 {
			return false
		}
		body := do(t, "GET", ts.URL+"/metrics", "").body
		return bytes.Contains(body, []byte(fmt.Sprintf(`stride_steps_total{model_name="m"} %d`, st.Steps))) &&
			bytes.Contains(body, []byte(fmt.Sprintf(`stride_bytes_copied_total{model_name="m"} %s`, strconv.FormatFloat(float64(copied), 'g', -1, 64))))
	})
}
