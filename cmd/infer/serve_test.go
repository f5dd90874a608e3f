package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"

	"github.com/stride-lm/stride/tensor/testfixture"
)

// startServe runs `infer serve` (the built-in stories260K) in a child
// process on a port it picks, and returns its base URL.
func startServe(t *testing.T, args ...string) (*proc, string) {
	t.Helper()
	p := startCLI(t, nil, append([]string{"serve", "--port", "0", "--threads", "2"}, args...)...)
	p.waitFor("listening on http://", true, 60*time.Second)
	m := regexp.MustCompile(`listening on (http://\S+)`).FindStringSubmatch(p.err())
	if m == nil {
		t.Fatalf("no address in %q", p.err())
	}
	return p, m[1]
}

func client(base, key string) openai.Client {
	return openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
}

// The official Go client against a live infer serve: chat and
// completion, whole and streamed, include_usage, n = 2, logprobs, stop
// strings across tokens, max_completion_tokens, the errors and the key.
func TestServeOpenAIClient(t *testing.T) {
	_, base := startServe(t, "--api-key", "k1", "--max-body", "64KiB")
	c := client(base, "k1")
	ctx := context.Background()
	t.Run("chat", func(t *testing.T) { serveChat(t, ctx, c) })
	t.Run("completion", func(t *testing.T) { serveCompletion(t, ctx, c) })
	t.Run("stop", func(t *testing.T) { serveStop(t, ctx, c) })
	t.Run("errors", func(t *testing.T) { serveErrors(t, ctx, c, base) })
	t.Run("golden", func(t *testing.T) { serveGolden(t, base) })
}

func chatParams() openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: "stories260K",
		Messages:    []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Tell me a story")},
		Temperature: openai.Float(0), MaxCompletionTokens: openai.Int(12)}
}

func serveChat(t *testing.T, ctx context.Context, c openai.Client) {
	p := chatParams()
	p.Logprobs, p.TopLogprobs = openai.Bool(true), openai.Int(2)
	whole, err := c.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	ch := whole.Choices[0]
	var joined strings.Builder
	for _, lp := range ch.Logprobs.Content {
		joined.WriteString(lp.Token)
		if len(lp.TopLogprobs) != 2 || lp.Logprob > 0 {
			t.Errorf("logprob entry %+v", lp)
		}
	}
	if ch.Message.Content == "" || joined.String() != ch.Message.Content {
		t.Errorf("logprob tokens %q != content %q", joined.String(), ch.Message.Content)
	}
	if ch.FinishReason == "length" && (whole.Usage.CompletionTokens != 12 || len(ch.Logprobs.Content) != 12) {
		t.Errorf("max_completion_tokens 12: usage %+v, %d logprobs", whole.Usage, len(ch.Logprobs.Content))
	}
	// Streamed with include_usage: the same text, then a usage chunk.
	p = chatParams()
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	s := c.Chat.Completions.NewStreaming(ctx, p)
	acc := openai.ChatCompletionAccumulator{}
	var last openai.ChatCompletionChunk
	for s.Next() {
		last = s.Current()
		acc.AddChunk(last)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if acc.Choices[0].Message.Content != ch.Message.Content || len(last.Choices) != 0 || last.Usage.CompletionTokens != whole.Usage.CompletionTokens {
		t.Errorf("stream: %q, last chunk %+v; whole: %q, usage %+v", acc.Choices[0].Message.Content, last, ch.Message.Content, whole.Usage)
	}
	// n = 2 sampled: two choices, each finished.
	p = chatParams()
	p.N, p.Temperature, p.Seed = openai.Int(2), openai.Float(0.9), openai.Int(5)
	two, err := c.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(two.Choices) != 2 || two.Choices[1].Index != 1 || two.Choices[0].FinishReason == "" || two.Choices[1].FinishReason == "" {
		t.Errorf("n = 2: %+v", two.Choices)
	}
}

func serveCompletion(t *testing.T, ctx context.Context, c openai.Client) {
	p := openai.CompletionNewParams{Model: "stories260K", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon a time")},
		MaxTokens: openai.Int(24), Temperature: openai.Float(0)}
	whole, err := c.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	s := c.Completions.NewStreaming(ctx, p)
	var text strings.Builder
	id := ""
	for s.Next() {
		ch := s.Current()
		if id == "" {
			id = ch.ID
		}
		if ch.ID != id {
			t.Errorf("chunk id %s, first %s", ch.ID, id)
		}
		for _, c := range ch.Choices {
			text.WriteString(c.Text)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if whole.Choices[0].Text == "" || text.String() != whole.Choices[0].Text || whole.Usage.CompletionTokens != 24 {
		t.Errorf("streamed %q, whole %q (usage %+v)", text.String(), whole.Choices[0].Text, whole.Usage)
	}
}

// serveStop ends a completion at a stop string that spans two tokens:
// neither the stop string nor its first half reaches the client.
func serveStop(t *testing.T, ctx context.Context, c openai.Client) {
	p := openai.CompletionNewParams{Model: "stories260K", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon a time")},
		MaxTokens: openai.Int(24), Temperature: openai.Float(0), Logprobs: openai.Int(0)}
	whole, err := c.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	toks := whole.Choices[0].Logprobs.Tokens
	k := 4
	for k < len(toks)-1 && (len(toks[k]) < 2 || toks[k+1] == "") {
		k++
	}
	stop := toks[k][len(toks[k])-1:] + toks[k+1][:1]
	full := whole.Choices[0].Text
	want := full[:strings.Index(full, stop)]
	p.Logprobs = param.Opt[int64]{}
	p.Stop = openai.CompletionNewParamsStopUnion{OfString: openai.String(stop)}
	got, err := c.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	s := c.Completions.NewStreaming(ctx, p)
	var streamed strings.Builder
	for s.Next() {
		for _, ch := range s.Current().Choices {
			streamed.WriteString(ch.Text)
		}
	}
	if got.Choices[0].Text != want || got.Choices[0].FinishReason != "stop" || streamed.String() != want {
		t.Errorf("stop %q in %q: whole %q (%s), streamed %q; want %q", stop, full, got.Choices[0].Text, got.Choices[0].FinishReason, streamed.String(), want)
	}
}

func serveErrors(t *testing.T, ctx context.Context, c openai.Client, base string) {
	check := func(name string, err error, status int, param, code string) {
		t.Helper()
		var e *openai.Error
		if !errors.As(err, &e) {
			t.Errorf("%s: %v, want an API error", name, err)
			return
		}
		if e.StatusCode != status || e.Param != param || e.Code != code || e.Message == "" {
			t.Errorf("%s: status %d param %q code %q message %q; want %d %q %q", name, e.StatusCode, e.Param, e.Code, e.Message, status, param, code)
		}
	}
	p := chatParams()
	p.TopP = openai.Float(1.5)
	_, err := c.Chat.Completions.New(ctx, p)
	check("top_p", err, 400, "top_p", "")
	p = chatParams()
	p.MaxCompletionTokens = openai.Int(100000)
	_, err = c.Chat.Completions.New(ctx, p)
	check("context", err, 400, "messages", "context_length_exceeded")
	p = chatParams()
	p.Model = "gpt-4o"
	_, err = c.Chat.Completions.New(ctx, p)
	check("model", err, 404, "model", "model_not_found")
	bad := client(base, "k2")
	_, err = bad.Chat.Completions.New(ctx, chatParams())
	check("key", err, 401, "", "invalid_api_key")
	req, _ := http.NewRequest("POST", base+"/v1/completions", strings.NewReader(`{"prompt":"`+strings.Repeat("a", 70<<10)+`"}`))
	req.Header.Set("Authorization", "Bearer k1")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 413 || !strings.Contains(string(b), `"error"`) {
		t.Errorf("body over --max-body: %d %s", res.StatusCode, b)
	}
	if res, err := http.Get(base + "/health"); err != nil || res.StatusCode != 200 {
		t.Errorf("/health without the key: %v %v", res, err)
	}
}

// serveGolden: /v1/completions at temperature 0 from BOS gives run.c's
// 256 golden ids (read back as vLLM's return_tokens_as_token_ids).
func serveGolden(t *testing.T, base string) {
	want := testfixture.ReadIDs(t, filepath.Join(testfixture.Dir(t), "models", "golden", "stories260K.greedy.ids"))
	body := `{"prompt":[1],"max_tokens":256,"temperature":0,"logprobs":0,"return_tokens_as_token_ids":true}`
	req, _ := http.NewRequest("POST", base+"/v1/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer k1")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var c struct {
		Choices []struct {
			Logprobs struct{ Tokens []string } `json:"logprobs"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(res.Body).Decode(&c); err != nil || len(c.Choices) != 1 {
		t.Fatalf("%v %+v", err, c)
	}
	var got []int
	for _, tok := range c.Choices[0].Logprobs.Tokens {
		var id int
		fmt.Sscanf(tok, "token_id:%d", &id)
		got = append(got, id)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ids %v\nwant run.c's %v", got, want)
	}
}

// SIGTERM drains: the running stream finishes with [DONE], new requests
// get 503, and the process exits 0.
func TestServeDrainOnSIGTERM(t *testing.T) {
	p, base := startServe(t, "--drain-timeout", "20s")
	res, err := http.Post(base+"/v1/completions", "application/json",
		strings.NewReader(`{"prompt":[1],"max_tokens":500,"n":8,"ignore_eos":true,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	buf := make([]byte, 1)
	if _, err := io.ReadFull(res.Body, buf); err != nil {
		t.Fatal(err)
	}
	p.signal(syscall.SIGTERM)
	p.waitFor("draining", true, 10*time.Second)
	if r, err := http.Get(base + "/health"); err == nil {
		r.Body.Close()
		if r.StatusCode != 503 || r.Header.Get("Retry-After") == "" {
			t.Errorf("/health while draining: %d", r.StatusCode)
		}
	}
	rest, err := io.ReadAll(res.Body)
	if err != nil || !strings.HasSuffix(string(rest), "data: [DONE]\n\n") || strings.Contains(string(rest), `"error"`) {
		t.Errorf("the running stream did not finish cleanly: %v, ends %q", err, string(rest[max(0, len(rest)-200):]))
	}
	if code := p.wait(30 * time.Second); code != 0 {
		t.Errorf("exit code %d after draining, want 0; stderr %s", code, p.err())
	}
}

// The npm openai client (scripts/openai-node, `npm ci` there) streams a
// chat and a completion; what it assembles equals the whole answers.
// Skipped where node or the installed package is missing.
func TestServeNodeClient(t *testing.T) {
	dir := filepath.Join("..", "..", "scripts", "openai-node")
	node, err := exec.LookPath("node")
	if _, statErr := os.Stat(filepath.Join(dir, "node_modules", "openai")); err != nil || statErr != nil {
		t.Skip("needs node and `npm ci` in scripts/openai-node")
	}
	_, base := startServe(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "stream.mjs", base)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var got struct {
		Chat struct {
			Text, Role, Finish string
			IDs                int
			Usage              struct {
				CompletionTokens int `json:"completion_tokens"`
			}
		}
		Completion struct{ Text, Finish string }
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	whole := func(path, body string) string {
		res, err := http.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var c struct {
			Choices []struct {
				Text    string
				Message struct{ Content string }
			}
		}
		if err := json.NewDecoder(res.Body).Decode(&c); err != nil || len(c.Choices) != 1 {
			t.Fatalf("%s: %v", path, err)
		}
		return c.Choices[0].Text + c.Choices[0].Message.Content
	}
	chat := whole("/v1/chat/completions", `{"messages":[{"role":"user","content":"Tell me a story"}],"max_tokens":16,"temperature":0}`)
	text := whole("/v1/completions", `{"prompt":"Once upon a time","max_tokens":16,"temperature":0}`)
	if got.Chat.Text != chat || got.Chat.Role != "assistant" || got.Chat.IDs != 1 || got.Chat.Finish == "" || got.Chat.Usage.CompletionTokens == 0 {
		t.Errorf("node chat %+v; whole answer %q", got.Chat, chat)
	}
	if got.Completion.Text != text || got.Completion.Finish == "" {
		t.Errorf("node completion %+v; whole answer %q", got.Completion, text)
	}
}
