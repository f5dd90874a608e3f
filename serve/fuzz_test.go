package serve

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stride-lm/stride/tensor/testfixture"
)

// Seeds of the decoders' fuzz targets: valid requests with every field,
// and the kinds of wrong ones.
var (
	chatSeeds = []string{
		`{"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}],"max_tokens":8,"temperature":0.7,"top_p":0.9,"top_k":40,"min_p":0.05,"repetition_penalty":1.1,"seed":3,"stop":["\n","END"],"stop_token_ids":[2],"ignore_eos":false,"n":2,"logprobs":true,"top_logprobs":3,"stream":true,"stream_options":{"include_usage":true},"user":"u"}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],"max_completion_tokens":4}`,
		`{"messages":[{"role":"developer","content":"x"},{"role":"assistant","content":"y"},{"role":"user","content":"z"}],"stop":"q"}`,
		`{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function"}]}`,
		`{"messages":[{"role":"tool","content":"hi"}]}`,
		`{"messages":[{"role":"user","content":"hi"}],"temperature":"x"}`,
		`{"messages":[{"role":"user","content":"hi"}],"n":1e400}`,
		`{"messages":"hi"}`,
		`[1,2]`,
		`{"messages":[{"role":"user","content":"hi"}],"top_logprobs":5}`,
		`{`,
	}
	completionSeeds = []string{
		`{"model":"m","prompt":"Once upon a time","max_tokens":16,"temperature":0,"logprobs":2,"stop":["."],"n":2,"stream":true,"stream_options":{"include_usage":false},"return_tokens_as_token_ids":true}`,
		`{"prompt":["a","b"],"max_tokens":1}`,
		`{"prompt":[1,2,3]}`,
		`{"prompt":[[1,2],[3]]}`,
		`{"prompt":[[]]}`,
		`{"prompt":"x","echo":true}`,
		`{"prompt":"x","best_of":1,"suffix":null,"logit_bias":{}}`,
		`{"prompt":"x","logprobs":99}`,
		`{"prompt":{"a":1}}`,
		`{"prompt":"x","max_tokens":-1}`,
		`null`,
	}
)

func seedCorpus(seeds []string) map[string][]byte {
	want := map[string][]byte{}
	for i, s := range seeds {
		want[fmt.Sprintf("seed-%02d", i)] = testfixture.CorpusEntry([]byte(s))
	}
	return want
}

// The committed corpora hold the seeds above.
func TestFuzzCorpusCurrent(t *testing.T) {
	testfixture.CheckCorpus(t, filepath.Join("testdata", "fuzz", "FuzzChatRequest"), seedCorpus(chatSeeds), "TestFuzzCorpusCurrent")
	testfixture.CheckCorpus(t, filepath.Join("testdata", "fuzz", "FuzzCompletionRequest"), seedCorpus(completionSeeds), "TestFuzzCorpusCurrent")
}

// checkDecoded holds a decoder to its contract on any input: no panic; an
// error is a 400 with a message whose body is valid JSON; an accepted
// request is within every bound.
func checkDecoded(t *testing.T, g *genRequest, e *apiError) {
	if e != nil {
		if e.Status != 400 || e.Message == "" || !json.Valid(errorBody(e)) {
			t.Fatalf("error %+v", e)
		}
		return
	}
	switch {
	case g.n < 1 || g.n > maxN:
		t.Fatalf("n %d accepted", g.n)
	case len(g.stop) > maxStops:
		t.Fatalf("%d stops accepted", len(g.stop))
	case g.logprobs < -1 || g.logprobs > maxTopLogprobs:
		t.Fatalf("logprobs %d accepted", g.logprobs)
	case g.maxTokens < 0:
		t.Fatalf("max_tokens %d accepted", g.maxTokens)
	case g.sampling.Temperature < 0 || g.sampling.TopP <= 0 || g.sampling.TopP > 1 || g.sampling.TopK < 0:
		t.Fatalf("sampling %+v accepted", g.sampling)
	case g.includeUsage && !g.stream:
		t.Fatal("include_usage without stream accepted")
	case g.chat && len(g.messages) == 0, !g.chat && len(g.prompts) == 0:
		t.Fatal("a request with no prompt accepted")
	case len(g.model) > maxNameBytes || len(g.user) > maxNameBytes:
		t.Fatalf("model or user of %d, %d bytes accepted", len(g.model), len(g.user))
	case len(g.stopTokenIDs) > maxStopTokenIDs || len(g.messages) > maxMessages || len(g.prompts) > maxPrompts:
		t.Fatalf("%d stop ids, %d messages, %d prompts accepted", len(g.stopTokenIDs), len(g.messages), len(g.prompts))
	}
	for _, m := range g.messages {
		if m.Role != "system" && m.Role != "user" && m.Role != "assistant" {
			t.Fatalf("role %q accepted", m.Role)
		}
		if len(m.Content) > maxTextBytes {
			t.Fatalf("content of %d bytes accepted", len(m.Content))
		}
	}
	for _, p := range g.prompts {
		if len(p.text) > maxTextBytes {
			t.Fatalf("prompt of %d bytes accepted", len(p.text))
		}
	}
}

func FuzzChatRequest(f *testing.F) {
	for _, s := range chatSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		g, e := decodeChat(body)
		checkDecoded(t, g, e)
	})
}

func FuzzCompletionRequest(f *testing.F) {
	for _, s := range completionSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		g, e := decodeCompletion(body)
		checkDecoded(t, g, e)
		if e == nil {
			for _, p := range g.prompts {
				if p.ids != nil && len(p.ids) == 0 {
					t.Fatal("an empty id prompt accepted")
				}
			}
		}
	})
}
