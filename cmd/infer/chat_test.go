package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var turnStats = regexp.MustCompile(`\[turn (\d+): (\d+) prompt tokens \((\d+) cached\), (\d+) generated, [0-9.]+ tok/s, (\w+)\]`)

// TestChatPiped: two piped lines are two turns; the first reply is the
// text generate continues run.c's rendering of the turn with; the
// second turn reuses the first one's KV blocks (cached > 0) and answers
// exactly as without prefix sharing; EOF ends with status 0.
func TestChatPiped(t *testing.T) {
	models := sharedModels(t)
	base := []string{"-m", filepath.Join(models, "stories260K.bin"), "--tokenizer", filepath.Join(models, "tok512.bin"),
		"--temperature", "0", "-n", "40"}
	code, out, errs := cliIn(t, "Hello\n\nTell me a story\n", append([]string{"chat"}, base...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	stats := turnStats.FindAllStringSubmatch(errs, -1)
	if len(stats) != 2 {
		t.Fatalf("want two statistics lines on stderr, got %q", errs)
	}
	if cached, _ := strconv.Atoi(stats[1][3]); cached == 0 {
		t.Errorf("turn 2 computed its whole prompt again: %s", stats[1][0])
	}
	replies := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	code, gen, errs := cli(t, append([]string{"generate", "-p", "[INST] Hello [/INST]"}, base...)...)
	if code != 0 || !strings.HasPrefix(gen, "[INST] Hello [/INST]") {
		t.Fatalf("generate: exit %d (%s): %q", code, errs, gen)
	}
	if want := strings.TrimPrefix(strings.TrimSuffix(gen, "\n"), "[INST] Hello [/INST]"); !strings.HasPrefix(out, want+"\n") {
		t.Errorf("first reply %q, want generate's continuation %q", replies[0], want)
	}
	code, noShare, errs := cliIn(t, "Hello\n\nTell me a story\n", append([]string{"chat", "--prefix-sharing=false"}, base...)...)
	if code != 0 || noShare != out {
		t.Errorf("without prefix sharing (exit %d, %s):\n%q\nwith:\n%q", code, errs, noShare, out)
	}
	if m := turnStats.FindAllStringSubmatch(errs, -1); len(m) != 2 || m[1][3] != "0" {
		t.Errorf("prefix sharing off still reports cached tokens: %q", errs)
	}
	// An empty stdin is a session without turns.
	if code, out, errs := cliIn(t, "", append([]string{"chat"}, base...)...); code != 0 || out != "" {
		t.Errorf("empty stdin: exit %d, %q, %q", code, out, errs)
	}
}

// qwenStyleDir is a Hugging Face directory of the shared stories260K
// weights with a Qwen-style tokenizer: no BOS (add_bos_token false),
// <|endoftext|>, <|im_start|> and <|im_end|> as special added tokens, one
// token per character of the conversation, and ChatML as its
// chat_template.
func qwenStyleDir(t *testing.T) string {
	t.Helper()
	models := sharedModels(t)
	dir := t.TempDir()
	for _, f := range []string{"config.json", "model.safetensors"} {
		if err := os.Symlink(filepath.Join(models, "hf", "stories260K", f), filepath.Join(dir, f)); err != nil {
			t.Skipf("no symlinks here: %v", err)
		}
	}
	vocab := map[string]int{"<|endoftext|>": 0, "<|im_start|>": 1, "<|im_end|>": 2}
	for _, c := range "abcdefghijklmnopqrstuvwxyz \n<|>_" {
		vocab[string(c)] = len(vocab)
	}
	added := `[{"id":0,"content":"<|endoftext|>","special":true},{"id":1,"content":"<|im_start|>","special":true},{"id":2,"content":"<|im_end|>","special":true}]`
	v, _ := json.Marshal(vocab)
	tj := `{"version":"1.0","added_tokens":` + added + `,"normalizer":null,"pre_tokenizer":null,"post_processor":null,"decoder":null,` +
		`"model":{"type":"BPE","unk_token":null,"byte_fallback":false,"vocab":` + string(v) + `,"merges":[]}}`
	tmpl, _ := json.Marshal(builtinChatML)
	cfg := `{"add_bos_token":false,"bos_token":null,"eos_token":"<|im_end|>","chat_template":` + string(tmpl) + `}`
	for name, body := range map[string]string{"tokenizer.json": tj, "tokenizer_config.json": cfg} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// builtinChatML is Qwen's ChatML template (the chatml built-in).
const builtinChatML = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"

// TestChatQwenStyleDirectory: a tokenizer without BOS chats as generate
// does (it failed with "BOS requested but the vocabulary has no BOS id"),
// the template's markers are one control id each, and a user who types
// "<|im_end|>" gets its ten characters' ids.
func TestChatQwenStyleDirectory(t *testing.T) {
	dir := qwenStyleDir(t)
	base := []string{"chat", "--checkpoint", dir, "-n", "4", "--temperature", "0"}
	// <|im_start|> user \n hi <|im_end|> \n <|im_start|> assistant \n:
	// 1 + 4 + 1 + 2 + 1 + 1 + 1 + 9 + 1 ids.
	for line, want := range map[string]string{"hi": "21", "hi<|im_end|>": "31"} {
		code, _, errs := cliIn(t, line+"\n", base...)
		m := turnStats.FindStringSubmatch(errs)
		if code != 0 || m == nil || m[2] != want {
			t.Errorf("%q: exit %d, %q; want %s prompt tokens", line, code, errs, want)
		}
	}
	// A second turn extends the first: its prompt holds the first one's
	// ids (cached), the reply and the new turn's markup as control ids.
	code, _, errs := cliIn(t, "hi\nhi\n", base...)
	m := turnStats.FindAllStringSubmatch(errs, -1)
	if code != 0 || len(m) != 2 {
		t.Fatalf("two turns: exit %d, %q", code, errs)
	}
	p1, _ := strconv.Atoi(m[0][2])
	p2, _ := strconv.Atoi(m[1][2])
	cached, _ := strconv.Atoi(m[1][3])
	if p2 <= p1 || cached == 0 {
		t.Errorf("turn 2: %d prompt tokens (%d cached) after turn 1's %d", p2, cached, p1)
	}
}
