package serve

import (
	"context"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// TestMidStreamErrorReachesOpenAIClient: the official Go client reads an
// error that happens after the stream started (the fake backend fails at
// its third token) as the stream's error, OpenAI's server_error object
// (whose message hides the cause, which the server logs), after the
// tokens that came before it: the `data: {"error": ...}` event
// is OpenAI's form, which llama.cpp's `error:` line is not.
func TestMidStreamErrorReachesOpenAIClient(t *testing.T) {
	_, ts := startServer(t, newFake(2), Config{}, nil)
	c := openai.NewClient(option.WithBaseURL(ts.URL+"/v1/"), option.WithAPIKey("-"), option.WithMaxRetries(0))
	st := c.Completions.NewStreaming(context.Background(), openai.CompletionNewParams{Model: "fake",
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("FAIL")}, MaxTokens: openai.Int(6)})
	chunks := 0
	for st.Next() {
		chunks++
	}
	err := st.Err()
	if err == nil || !strings.Contains(err.Error(), `"type":"server_error"`) || chunks == 0 {
		t.Fatalf("after %d chunks: error %v; want the server_error event after the first tokens", chunks, err)
	}
	t.Logf("%d chunks, then %v", chunks, err)
}
