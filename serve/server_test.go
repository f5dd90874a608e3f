package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// Every bad field is a 400 that names it in param; unsupported features
// say so; unknown fields are ignored.
func TestRequestErrorsNameTheField(t *testing.T) {
	_, ts := startServer(t, newFake(4), Config{}, nil)
	chat := ts.URL + "/v1/chat/completions"
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	cases := []struct {
		url, body, param string
		code             any
	}{
		{chat, `{` + msgs + `,"temperature":"hot"}`, "temperature", nil},
		{chat, `{` + msgs + `,"temperature":-1}`, "temperature", nil},
		{chat, `{` + msgs + `,"top_p":0}`, "top_p", nil},
		{chat, `{` + msgs + `,"top_k":-2}`, "top_k", nil},
		{chat, `{` + msgs + `,"min_p":1.5}`, "min_p", nil},
		{chat, `{` + msgs + `,"repetition_penalty":0}`, "repetition_penalty", nil},
		{chat, `{` + msgs + `,"seed":1.5}`, "seed", nil},
		{chat, `{` + msgs + `,"n":0}`, "n", nil},
		{chat, `{` + msgs + `,"max_tokens":0}`, "max_tokens", nil},
		{chat, `{` + msgs + `,"max_completion_tokens":-3}`, "max_completion_tokens", nil},
		{chat, `{` + msgs + `,"stop":["a","b","c","d","e"]}`, "stop", nil},
		{chat, `{` + msgs + `,"stop":7}`, "stop", nil},
		{chat, `{` + msgs + `,"stop_token_ids":[999]}`, "stop_token_ids", nil},
		{chat, `{` + msgs + `,"ignore_eos":"yes"}`, "ignore_eos", nil},
		{chat, `{` + msgs + `,"logprobs":true,"top_logprobs":21}`, "top_logprobs", nil},
		{chat, `{` + msgs + `,"top_logprobs":2}`, "top_logprobs", nil},
		{chat, `{` + msgs + `,"stream_options":{"include_usage":true}}`, "stream_options", nil},
		{chat, `{` + msgs + `,"stream":true,"stream_options":{"include_usage":1}}`, "stream_options.include_usage", nil},
		{chat, `{` + msgs + `,"user":5}`, "user", nil},
		{chat, `{` + msgs + `,"tools":[{"type":"function","function":{"name":"f"}}]}`, "tools", "unsupported_parameter"},
		{chat, `{` + msgs + `,"response_format":{"type":"json_object"}}`, "response_format", "unsupported_parameter"},
		{chat, `{` + msgs + `,"logit_bias":{"5":1}}`, "logit_bias", "unsupported_parameter"},
		{chat, `{` + msgs + `,"presence_penalty":0.5}`, "presence_penalty", nil},
		{chat, `{"messages":[]}`, "messages", nil},
		{chat, `{"messages":[{"role":"wizard","content":"x"}]}`, "messages[0].role", nil},
		{chat, `{"messages":[{"role":"user"}]}`, "messages[0].content", nil},
		{chat, `{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, `messages[0].content[0].type "image_url"`, "unsupported_parameter"},
		{chat, `{` + msgs + `,"max_tokens":1000}`, "messages", "context_length_exceeded"},
		{ts.URL + "/v1/completions", `{"prompt":"hi","logprobs":21}`, "logprobs", nil},
		{ts.URL + "/v1/completions", `{"prompt":[300]}`, "prompt", nil},
		{ts.URL + "/v1/completions", `{"prompt":{}}`, "prompt", nil},
		{ts.URL + "/v1/completions", `{"prompt":"hi","max_tokens":200}`, "prompt", "context_length_exceeded"},
		{ts.URL + "/v1/completions", `{"prompt":"hi","echo":true}`, "echo", "unsupported_parameter"},
	}
	for _, c := range cases {
		r := post(t, c.url, c.body)
		if r.status != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400 (%s)", c.body, r.status, r.body)
			continue
		}
		msg, typ, param, code := errorObject(t, r)
		if param != c.param || typ != "invalid_request_error" || code != c.code {
			t.Errorf("%s: param %v type %s code %v, want param %s code %v (%s)", c.body, param, typ, code, c.param, c.code, msg)
		}
	}
	// Bad JSON names no field.
	r := post(t, chat, `{"messages":`)
	if _, _, param, _ := errorObject(t, r); r.status != 400 || param != nil {
		t.Errorf("bad JSON: status %d param %v", r.status, param)
	}
	// Unknown fields and the no-op values of unsupported ones are fine.
	r = post(t, chat, `{`+msgs+`,"max_tokens":3,"frobnicate":{"x":1},"tool_choice":"none","response_format":{"type":"text"},"logit_bias":{},"presence_penalty":0}`)
	if r.status != 200 {
		t.Errorf("extras: status %d: %s", r.status, r.body)
	}
}

// The non-streamed chat answer has OpenAI's shape; the text is the fake
// model's, byte for byte; n = 2 gives two choices with their own seeds.
func TestChatCompletionShape(t *testing.T) {
	f := newFake(4)
	_, ts := startServer(t, f, Config{ModelName: "m"}, nil)
	r := post(t, ts.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":4,"n":2,"temperature":1,"seed":3}`)
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var got chatCompletion
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	prompt, _ := f.TokenizeChat([]Message{{"user", "hi"}})
	if got.Object != "chat.completion" || !strings.HasPrefix(got.ID, "chatcmpl-") || got.Model != "m" || len(got.Choices) != 2 {
		t.Fatalf("shape: %s", r.body)
	}
	for k, ch := range got.Choices {
		want := ""
		for step := 0; step < 4; step++ {
			want += string(rune(next(prompt, Sampling{Temperature: 1, Seed: int64(3 + k)}, step)))
		}
		if ch.Index != k || ch.Message.Role != "assistant" || ch.Message.Content != want || ch.FinishReason != "length" {
			t.Errorf("choice %d = %+v, want content %q, length", k, ch, want)
		}
	}
	u := got.Usage
	if u.PromptTokens != len(prompt) || u.CompletionTokens != 8 || u.TotalTokens != len(prompt)+8 {
		t.Errorf("usage %+v, want prompt %d, completion 8", u, len(prompt))
	}
	if !bytes.Contains(r.body, []byte(`"prompt_tokens_details":{"cached_tokens":0}`)) || !bytes.Contains(r.body, []byte(`"logprobs":null`)) {
		t.Errorf("body lacks cached_tokens or a null logprobs: %s", r.body)
	}
}

// A stream: data events, the role first, one id and created throughout,
// usage null on every chunk then a last chunk with no choices and the
// usage, and [DONE]. The deltas concatenate to the whole answer.
func TestChatStreamIncludeUsage(t *testing.T) {
	_, ts := startServer(t, newFake(4), Config{}, nil)
	body := `{"messages":[{"role":"user","content":"hi"}],"max_tokens":6,"stream":true,"stream_options":{"include_usage":true}}`
	whole := post(t, ts.URL+"/v1/chat/completions", strings.Replace(body, `"stream":true,"stream_options":{"include_usage":true}`, `"stream":false`, 1))
	var want chatCompletion
	json.Unmarshal(whole.body, &want)
	r := post(t, ts.URL+"/v1/chat/completions", body)
	if ct := r.header.Get("Content-Type"); r.status != 200 || ct != "text/event-stream" {
		t.Fatalf("status %d content type %q", r.status, ct)
	}
	events := sseEvents(t, r.body)
	var id string
	var created int64
	var text strings.Builder
	finishes := 0
	for i, ev := range events[:len(events)-1] {
		var raw map[string]json.RawMessage
		var c chatChunk
		if err := json.Unmarshal([]byte(ev), &c); err != nil || json.Unmarshal([]byte(ev), &raw) != nil {
			t.Fatalf("event %d %q: %v", i, ev, err)
		}
		if i == 0 {
			id, created = c.ID, c.Created
			if c.Choices[0].Delta.Role != "assistant" {
				t.Errorf("first chunk has no role: %s", ev)
			}
		} else if c.ID != id || c.Created != created || c.Object != "chat.completion.chunk" {
			t.Errorf("event %d: id/created/object changed: %s", i, ev)
		}
		last := i == len(events)-2
		if last != (string(raw["usage"]) != "null") {
			t.Errorf("event %d: usage %s (last=%v)", i, raw["usage"], last)
		}
		if last {
			if len(c.Choices) != 0 || !strings.Contains(ev, `"completion_tokens":6`) {
				t.Errorf("usage chunk %s", ev)
			}
			continue
		}
		text.WriteString(c.Choices[0].Delta.Content)
		if c.Choices[0].FinishReason != nil {
			finishes++
		}
	}
	if text.String() != want.Choices[0].Message.Content || finishes != 1 {
		t.Errorf("streamed %q with %d finishes; whole answer %q", text.String(), finishes, want.Choices[0].Message.Content)
	}
	// Without include_usage, chunks have no usage key at all.
	r = post(t, ts.URL+"/v1/chat/completions", strings.Replace(body, `,"stream_options":{"include_usage":true}`, "", 1))
	if bytes.Contains(r.body, []byte(`"usage"`)) {
		t.Errorf("usage sent without include_usage: %s", r.body)
	}
}

// Stop strings never leak, even split across tokens, in either mode; the
// finish reason is stop.
func TestStopStringHeldBack(t *testing.T) {
	f := newFake(4)
	_, ts := startServer(t, f, Config{}, nil)
	prompt, _ := f.Tokenize("x", true)
	full := ""
	for step := 0; step < 8; step++ {
		full += string(rune(next(prompt, Sampling{}, step)))
	}
	stop := full[3:5] // two tokens: split across a token boundary
	want := full[:3]
	for _, stream := range []bool{false, true} {
		r := post(t, ts.URL+"/v1/completions", fmt.Sprintf(`{"prompt":"x","max_tokens":8,"temperature":0,"stop":%q,"stream":%v}`, stop, stream))
		var text, reason string
		if stream {
			for _, ev := range sseEvents(t, r.body) {
				var c textCompletion
				if ev != "[DONE]" && json.Unmarshal([]byte(ev), &c) == nil {
					text += c.Choices[0].Text
					if c.Choices[0].FinishReason != nil {
						reason = *c.Choices[0].FinishReason
					}
				}
			}
		} else {
			var c textCompletion
			json.Unmarshal(r.body, &c)
			text, reason = c.Choices[0].Text, *c.Choices[0].FinishReason
		}
		if text != want || reason != "stop" {
			t.Errorf("stream=%v: text %q reason %q, want %q stop (full %q, stop %q)", stream, text, reason, want, full, stop)
		}
	}
}

// ModelName is the checkpoint's file or directory name without its
// extension, as /v1/models lists a model served without a name.
func TestModelName(t *testing.T) {
	for in, want := range map[string]string{
		"../shared/models/stories260K.bin": "stories260K",
		"models/hf/stories260K/":           "stories260K",
		"stories260K (built in)":           "stories260K",
		"model.q8_0.gguf":                  "model.q8_0",
		".hidden":                          ".hidden",
	} {
		if got := ModelName(in); got != want {
			t.Errorf("ModelName(%q) = %q, want %q", in, got, want)
		}
	}
}
