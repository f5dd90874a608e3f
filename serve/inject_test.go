package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stride-lm/stride/model/chat"
	"github.com/stride-lm/stride/model/gguf"
	"github.com/stride-lm/stride/model/tokenizer"
	"github.com/stride-lm/stride/tensor/testfixture"
)

// recordingBackend is EngineBackend's tokenization (a real tokenizer and
// chat template) with a Submit that records the prompt it is given and
// generates nothing: what the engine would have been asked to run.
type recordingBackend struct {
	*EngineBackend
	mu      sync.Mutex
	prompts [][]int
}

func (r *recordingBackend) Submit(ctx context.Context, g Generation) (Stream, error) {
	r.mu.Lock()
	r.prompts = append(r.prompts, slices.Clone(g.Prompt))
	r.mu.Unlock()
	st := &fakeStream{tokens: make(chan Token), done: make(chan struct{}), fin: Finish{Reason: "length", PromptTokens: len(g.Prompt)}}
	close(st.tokens)
	close(st.done)
	return st, nil
}

func (r *recordingBackend) Stats() Stats { return Stats{} }

func (r *recordingBackend) last() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.prompts[len(r.prompts)-1]
}

// npmFixture is a tokenizer.json of model/tokenizer's fixtures and its
// tokenizer_config.json's chat template, skipping when absent outside CI.
func npmFixture(t *testing.T, name string) (*tokenizer.Tokenizer, *chat.Template) {
	t.Helper()
	dir := filepath.Join("..", "model", "tokenizer", "testdata", "npm", name, "models")
	tj, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		if testfixture.InCI() {
			t.Fatalf("CI=true but %v (run scripts/fetch-test-tokenizers.sh)", err)
		}
		t.Skipf("skipping: %v (run scripts/fetch-test-tokenizers.sh)", err)
	}
	cj, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.FromJSON(tj, cj, name)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := chat.Load(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	return tok, tmpl
}

// injections are control tokens' spellings a user may type.
var injections = []string{"<|im_end|>", "<|im_start|>", "</s>", "<s>", "<|begin_of_text|>", "<|eot_id|>",
	"<|start_header_id|>", "<|end_header_id|>", "<|end_of_text|>", "<think>"}

// controlIDs are the ids of the spellings above that are control
// tokens of tok. Qwen3's <think> is not one: it is a user-defined token,
// matched in any text (as Hugging Face's tokenizers match it), so typing
// it gives the token, which is a word of the model's, not markup.
func controlIDs(tok *tokenizer.Tokenizer) map[int]string {
	ids := map[int]string{}
	for _, s := range injections {
		if id, ok := tok.ID(s); ok && tok.Type(id) == tokenizer.TypeControl {
			ids[id] = s
		}
	}
	return ids
}

// controlCount counts each control id in ids.
func controlCount(ids []int, control map[int]string) map[string]int {
	n := map[string]int{}
	for _, id := range ids {
		if s, ok := control[id]; ok {
			n[s]++
		}
	}
	return n
}

// Typed control tokens stay text through the server: a chat whose
// messages spell every control token holds exactly the control tokens of
// the same chat with plain text (the template's own markup), and the
// typed characters come back when the prompt is decoded; a completion
// prompt's text holds no control token but its BOS. Token-id prompts
// are taken as given, and ids outside the vocabulary are a 400. On
// Llama 3's and Qwen3's tokenizer.json, and a GGUF vocabulary (Llama's
// SentencePiece, with the zephyr template whose markup is </s>).
func TestTypedControlTokensStayText(t *testing.T) {
	type fixture struct {
		name string
		load func(t *testing.T) (*tokenizer.Tokenizer, *chat.Template)
	}
	for _, f := range []fixture{
		{"llama3", func(t *testing.T) (*tokenizer.Tokenizer, *chat.Template) { return npmFixture(t, "llama3") }},
		{"qwen3", func(t *testing.T) (*tokenizer.Tokenizer, *chat.Template) { return npmFixture(t, "qwen3") }},
		{"gguf-llama-spm", func(t *testing.T) (*tokenizer.Tokenizer, *chat.Template) {
			tok, err := gguf.OpenTokenizer(testfixture.File(t, "tokenizers/llama.cpp-vocab/ggml-vocab-llama-spm.gguf"))
			if err != nil {
				t.Fatal(err)
			}
			tmpl, err := chat.Load("zephyr")
			if err != nil {
				t.Fatal(err)
			}
			return tok, tmpl
		}},
	} {
		t.Run(f.name, func(t *testing.T) {
			tok, tmpl := f.load(t)
			rb := &recordingBackend{EngineBackend: &EngineBackend{codec: tok, tmpl: tmpl, maxLen: 1 << 16, vocab: tok.VocabSize()}}
			_, ts := startServer(t, rb, Config{}, nil)
			checkInjection(t, ts.URL, rb, tok)
		})
	}
}

func checkInjection(t *testing.T, url string, rb *recordingBackend, tok *tokenizer.Tokenizer) {
	control := controlIDs(tok)
	if len(control) < 2 {
		t.Fatalf("the vocabulary has only %v of the control spellings", control)
	}
	typed := "hi " + strings.Join(injections, " x ")
	chatOf := func(content string) string {
		b, _ := json.Marshal(map[string]any{"max_tokens": 1, "messages": []map[string]string{
			{"role": "system", "content": content}, {"role": "user", "content": content},
			{"role": "assistant", "content": content}, {"role": "user", "content": content}}})
		return string(b)
	}
	for _, route := range []string{"/v1/chat/completions", "/tokenize"} {
		var plain, injected []int
		for _, c := range []struct {
			content string
			ids     *[]int
		}{{"hi plain text", &plain}, {typed, &injected}} {
			r := post(t, url+route, chatOf(c.content))
			if r.status != 200 {
				t.Fatalf("%s: %d %s", route, r.status, r.body)
			}
			if route == "/tokenize" {
				var out struct{ Tokens []int }
				json.Unmarshal(r.body, &out)
				*c.ids = out.Tokens
			} else {
				*c.ids = rb.last()
			}
		}
		if got, want := controlCount(injected, control), controlCount(plain, control); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: typed control tokens became control tokens: %v, the template's markup alone %v", route, got, want)
		}
		text, _ := rb.Detokenize(injected)
		if n := strings.Count(text, typed); n != 4 {
			t.Errorf("%s: the typed text appears %d times in the decoded prompt, want 4: %q", route, n, text)
		}
	}
	r := post(t, url+"/v1/completions", fmt.Sprintf(`{"prompt":%q,"max_tokens":1}`, typed))
	if r.status != 200 {
		t.Fatalf("completion: %d %s", r.status, r.body)
	}
	ids := rb.last()
	if tok.AddBOS() && len(ids) > 0 && ids[0] == tok.BOS() {
		ids = ids[1:]
	}
	if n := controlCount(ids, control); len(n) != 0 {
		t.Errorf("completion prompt text holds control tokens %v", n)
	}
	// Token ids are taken as given: the only way to send a control token.
	ctl := slices.Sorted(func(yield func(int) bool) {
		for id := range control {
			if !yield(id) {
				return
			}
		}
	})
	body, _ := json.Marshal(map[string]any{"prompt": ctl, "max_tokens": 1})
	if r := post(t, url+"/v1/completions", string(body)); r.status != 200 || !slices.Equal(rb.last(), ctl) {
		t.Errorf("id prompt %v: %d, submitted %v", ctl, r.status, rb.last())
	}
	for _, bad := range []int{tok.VocabSize(), -1, 1 << 40} {
		r := post(t, url+"/v1/completions", fmt.Sprintf(`{"prompt":[1,%d],"max_tokens":1}`, bad))
		if _, _, param, _ := errorObject(t, r); r.status != 400 || param != "prompt" {
			t.Errorf("out-of-vocabulary id %d: %d %s", bad, r.status, r.body)
		}
	}
}
