package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Target is an OpenAI-compatible server under test.
type Target struct {
	// API is the base URL as OpenAI's clients take it, ending in /v1.
	API string
	// Root is the server's root, where /tokenize lives.
	Root string
	// Model is the model field every request sends.
	Model string
	// Chat selects /v1/chat/completions (one user message) over
	// /v1/completions.
	Chat bool
	// APIKey, when set, is sent as a bearer token.
	APIKey string
	// Client sends the requests.
	Client *http.Client
}

// NewTarget returns the target at base, given as OpenAI's clients take it
// (http://host:port/v1) or as the server's root (http://host:port);
// conns bounds the client's idle connections kept for reuse.
func NewTarget(base, apiKey string, conns int) (*Target, error) {
	u, err := url.Parse(strings.TrimSpace(base))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--base-url %q is not an http:// or https:// URL", base)
	}
	u.RawQuery, u.Fragment = "", ""
	api := strings.TrimRight(u.String(), "/")
	root := strings.TrimSuffix(api, "/v1")
	if root == api {
		api += "/v1"
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = conns+4, conns+4
	tr.DisableCompression = true
	// Idle connections are dropped before a server would drop them
	// (cpp-httplib under llama-server: 5 s; uvicorn: 5 s), so a request
	// seldom goes out on a connection the server is closing.
	tr.IdleConnTimeout = 2 * time.Second
	return &Target{API: api, Root: root, APIKey: apiKey, Client: &http.Client{Transport: tr}}, nil
}

// Close closes the target's idle connections.
func (t *Target) Close() { t.Client.CloseIdleConnections() }

// post sends a JSON body to url.
func (t *Target) post(ctx context.Context, url string, body any) (*http.Response, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return t.do(req)
}

func (t *Target) do(req *http.Request) (*http.Response, error) {
	if t.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+t.APIKey)
	}
	resp, err := t.Client.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) {
			return nil, fmt.Errorf("cannot reach %s: %v", t.Root, op.Err)
		}
		return nil, err
	}
	return resp, nil
}

// getJSON decodes the JSON answer of a 200, or returns the status and
// the error message.
func decodeAnswer(resp *http.Response, what string, v any) error {
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("%s: %v", what, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d: %s", what, resp.StatusCode, httpMessage(body))
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%s: the answer is not the JSON expected: %v", what, err)
	}
	return nil
}

// httpMessage is an error body's message, cut to one line.
func httpMessage(body []byte) string {
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && len(e.Error) > 0 {
		var s string
		if json.Unmarshal(e.Error, &s) == nil {
			return s
		}
		return errorMessage(e.Error)
	}
	msg := strings.Join(strings.Fields(string(body)), " ")
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return msg
}

// Models returns the ids of the server's /v1/models, in its order.
func (t *Target) Models(ctx context.Context) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.API+"/models", nil)
	if err != nil {
		return nil, err
	}
	resp, err := t.do(req)
	if err != nil {
		return nil, err
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := decodeAnswer(resp, "GET "+t.API+"/models", &list); err != nil {
		return nil, err
	}
	ids := make([]string, len(list.Data))
	for i, m := range list.Data {
		ids[i] = m.ID
	}
	return ids, nil
}

// Count returns the number of tokens the server's /tokenize counts for a
// prompt, special tokens (BOS) included. The body carries vLLM's and
// Stride's field (prompt, add_special_tokens) and llama.cpp's (content,
// add_special), and the answer is read as either (count, or the length
// of tokens).
func (t *Target) Count(ctx context.Context, text string) (int, error) {
	resp, err := t.post(ctx, t.Root+"/tokenize", map[string]any{
		"model": t.Model, "prompt": text, "add_special_tokens": true, "content": text, "add_special": true})
	if err != nil {
		return 0, err
	}
	var ans struct {
		Count  *int              `json:"count"`
		Tokens []json.RawMessage `json:"tokens"`
	}
	if err := decodeAnswer(resp, "POST "+t.Root+"/tokenize", &ans); err != nil {
		return 0, err
	}
	if ans.Count != nil {
		return *ans.Count, nil
	}
	return len(ans.Tokens), nil
}

// Send streams one request for p and measures it on now's clock. Every
// failure is in the record's Status, never an error.
func (t *Target) Send(ctx context.Context, p Prompt, ignoreEOS bool, start time.Time, now func() time.Time) Record {
	body := map[string]any{"model": t.Model, "max_tokens": p.OutputLen, "stream": true,
		"stream_options": map[string]any{"include_usage": true}, "temperature": 0}
	url := t.API + "/completions"
	if t.Chat {
		url = t.API + "/chat/completions"
		body["messages"] = []map[string]string{{"role": "user", "content": p.Text}}
	} else {
		body["prompt"] = p.Text
	}
	if ignoreEOS {
		body["ignore_eos"] = true
	}
	rec := Record{Index: p.Index}
	var sent time.Time
	var resp *http.Response
	var err error
	for try := 0; ; try++ {
		sent = now()
		var reused bool
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}
		resp, err = t.post(httptrace.WithClientTrace(ctx, trace), url, body)
		// A kept-alive connection the server closed as the request went
		// out on it fails with no answer at all (EOF, or net/http's
		// "server closed idle connection"): the server did not take the
		// request, so it is sent again, timed from the new try, at most
		// twice. A new connection's failure is the server's.
		if err == nil || !reused || try == 2 || ctx.Err() != nil {
			break
		}
	}
	rec.Start = sent.Sub(start)
	if err != nil {
		return failed(ctx, rec, "error", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		rec.Status, rec.Err = strconv.Itoa(resp.StatusCode), httpMessage(b)
		return rec
	}
	return readStream(ctx, rec, resp.Body, sent, now)
}

// readStream measures one answer's event stream.
func readStream(ctx context.Context, rec Record, body io.Reader, sent time.Time, now func() time.Time) Record {
	var text strings.Builder
	var last time.Time
	var u *usage
	done := false
	sse := newSSEReader(body)
	end := func(status, msg string) Record {
		rec.Latency = now().Sub(sent)
		rec.TTFT = min(rec.TTFT, rec.Latency)
		rec.Status, rec.Err = status, msg
		if ctx.Err() != nil && status != "" {
			rec.Status = "cancelled"
		}
		return rec
	}
	for {
		data, err := sse.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return end("error", err.Error())
		}
		at := now()
		ev, err := parseEvent(data)
		if err != nil {
			return end("stream error", err.Error())
		}
		if ev.errMsg != "" {
			return end("stream error", ev.errMsg)
		}
		if ev.done {
			done = true
			break
		}
		if ev.usage != nil {
			u = ev.usage
		}
		if ev.content == "" {
			continue
		}
		if last.IsZero() {
			rec.TTFT = at.Sub(sent)
		} else {
			rec.ITL = append(rec.ITL, at.Sub(last))
		}
		last = at
		text.WriteString(ev.content)
	}
	rec.Text = text.String()
	if last.IsZero() {
		rec.TTFT = time.Duration(math.MaxInt64) // the whole latency: end cuts it
	}
	switch {
	case u == nil && !done:
		return end("error", "the stream ended before its usage and [DONE]")
	case u == nil:
		return end("missing usage", "the stream carried no usage (stream_options.include_usage)")
	}
	rec.PromptLen, rec.OutputLen = *u.PromptTokens, *u.CompletionTokens
	return end("", "")
}

// failed records a request that got no complete answer: cancelled when
// ctx ended, else status.
func failed(ctx context.Context, rec Record, status string, err error) Record {
	if ctx.Err() != nil {
		status = "cancelled"
	}
	rec.Status, rec.Err = status, err.Error()
	return rec
}
