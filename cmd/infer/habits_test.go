package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/engine"
)

// cliIn is cli with stdin as the command's standard input.
func cliIn(t testing.TB, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	old := processStdin
	processStdin = strings.NewReader(stdin)
	defer func() { processStdin = old }()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// ids runs generate --output ids and returns them, failing on a non-zero exit.
func genIDs(t *testing.T, stdin string, args ...string) []string {
	t.Helper()
	code, out, errs := cliIn(t, stdin, append([]string{"generate", "--output", "ids", "--temperature", "0"}, args...)...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errs)
	}
	return strings.Fields(out)
}

// TestPromptSources: a positional prompt, -p, -p -, stdin, -f and -f -
// all give the same sequence as --prompt; an empty stdin is no prompt.
func TestPromptSources(t *testing.T) {
	want := genIDs(t, "", "--prompt", "hello world", "--steps", "12")
	file := filepath.Join(t.TempDir(), "p.txt")
	os.WriteFile(file, []byte("hello world\n"), 0o644)
	for _, tc := range []struct {
		name, stdin string
		args        []string
	}{
		{"positional", "", []string{"hello world"}},
		{"positional words", "", []string{"hello", "world"}},
		{"-p", "", []string{"-p", "hello world"}},
		{"-p -", "hello world\n", []string{"-p", "-"}},
		{"stdin", "hello world\n", nil},
		{"-f", "", []string{"-f", file}},
		{"-f -", "hello world\n", []string{"-f", "-"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := genIDs(t, tc.stdin, append(tc.args, "--steps", "12")...); !slices.Equal(got, want) {
				t.Fatalf("got %v, want --prompt's %v", got, want)
			}
		})
	}
	if got, none := genIDs(t, "", "--steps", "12"), genIDs(t, "", "--prompt", "", "--steps", "12"); !slices.Equal(got, none) {
		t.Fatalf("empty stdin gave %v, want no prompt's %v", got, none)
	}
	// --prompts - reads one prompt per line.
	code, out, errs := cliIn(t, "abc\n\nhello\n", "generate", "--prompts", "-", "--steps", "8", "--output", "json", "--temperature", "0")
	if n := strings.Count(out, "\n"); code != 0 || n != 2 {
		t.Fatalf("--prompts -: exit %d (%s), %d lines: %s", code, errs, n, out)
	}
	code, _, errs = cliIn(t, "", "generate", "words", "--prompt", "x")
	if code != 1 || !strings.Contains(errs, "positional prompt") {
		t.Fatalf("positional and --prompt: exit %d, %q", code, errs)
	}
}

// TestShortFlagsMatchRunC: llama.cpp's -m, -n, --temp, -s, -t and -c
// drive the same generation as the long flags: run.c's greedy ids.
func TestShortFlagsMatchRunC(t *testing.T) {
	models := sharedModels(t)
	golden, err := os.ReadFile(filepath.Join(models, "golden", "stories260K.greedy.ids"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Fields(string(golden))[:20]
	got := genIDs(t, "", "-m", filepath.Join(models, "stories260K.bin"), "--tokenizer", filepath.Join(models, "tok512.bin"),
		"--temp", "0", "-n", "20", "-s", "7", "-t", "1", "-c", "128")
	if !slices.Equal(got, want) {
		t.Fatalf("-n 20 gave %v, want run.c's first 20 greedy ids %v", got, want)
	}
	// top-k 1 and min-p 1 at temperature 1 leave only the argmax: greedy.
	for _, f := range [][]string{{"--top-k", "1"}, {"--min-p", "1"}} {
		code, out, errs := cli(t, append([]string{"generate", "--model", filepath.Join(models, "stories260K.bin"), "--tokenizer", filepath.Join(models, "tok512.bin"),
			"--temperature", "1", "--seed", "3", "--steps", "20", "--output", "ids"}, f...)...)
		if code != 0 || !slices.Equal(strings.Fields(out), want) {
			t.Fatalf("%v at temperature 1: exit %d (%s): %s, want greedy %v", f, code, errs, out, want)
		}
	}
}

// TestContextSize: -n -1 runs to the end of the context set by -c and
// stops with finish_reason length; --steps and -n together are refused.
func TestContextSize(t *testing.T) {
	code, out, errs := cli(t, "generate", "-c", "40", "-n", "-1", "--temperature", "0.8", "-s", "2", "--output", "json", "-p", "abc")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var o seqOutput
	if err := json.Unmarshal([]byte(out), &o); err != nil {
		t.Fatal(err)
	}
	if o.FinishReason == "length" && len(o.IDs) != 40 || o.FinishReason != "length" && o.FinishReason != "eos" || len(o.IDs) > 40 {
		t.Fatalf("-c 40 -n -1: %d ids, finish %s", len(o.IDs), o.FinishReason)
	}
	// The KV pool follows the context, not seq_len: a 2^20-position
	// model gets 8 sequences of 4096 positions by default.
	a := newApp(defaultRegistry)
	c := model.Config{SeqLen: 1 << 20}
	n := contextSize(a, c, io.Discard)
	po := engine.Options{BlockSize: 16, Context: n}
	if nb := engine.KVPool(c, po).NumBlocks; n != 4096 || nb != engine.DefaultKVSequences*4096/16 {
		t.Fatalf("default context %d, pool %d blocks: want 4096 and %d", n, nb, engine.DefaultKVSequences*4096/16)
	}
	po = engine.Options{BlockSize: 16, KVMemory: 1 << 20, Context: n}
	if engine.KVPool(c, po).NumBlocks != 0 {
		t.Fatalf("an explicit kv_memory was overridden: %d blocks", engine.KVPool(c, po).NumBlocks)
	}
	t.Run("ctx_size above seq_len", func(t *testing.T) {
		t.Setenv("INFER_CTX_SIZE", "100")
		if n := contextSize(a, model.Config{SeqLen: 64}, io.Discard); n != 64 {
			t.Fatalf("ctx_size 100 on seq_len 64: %d", n)
		}
	})
	code, _, errs = cli(t, "generate", "--steps", "10", "-n", "3")
	if code != 1 || !strings.Contains(errs, "--n-predict") {
		t.Fatalf("--steps and -n: exit %d, %q", code, errs)
	}
}

func TestHabitsErrorsAndHints(t *testing.T) {
	code, _, errs := cli(t, "generate", "--prefix-sharing", "false")
	if code != 1 || !strings.Contains(errs, "--prefix-sharing=false") {
		t.Fatalf("--prefix-sharing false: exit %d, %q", code, errs)
	}
	if code, _, errs := cli(t, "generate", "--prefix-sharing=false", "-n", "2"); code != 0 {
		t.Fatalf("--prefix-sharing=false: exit %d, %s", code, errs)
	}
	code, out, _ := cli(t, "--version")
	if code != 0 || !strings.HasPrefix(out, "infer ") {
		t.Fatalf("--version: exit %d, %q", code, out)
	}
	code, out, _ = cli(t, "completion", "bash")
	if code != 0 || !strings.Contains(out, "bash completion") {
		t.Fatalf("completion bash: exit %d, %.80q", code, out)
	}
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(cfg, []byte("output: json\n"), 0o644)
	code, _, errs = cli(t, "generate", "--config", cfg)
	if code != 1 || !strings.Contains(errs, `"generate.output"`) {
		t.Fatalf("top-level output: exit %d, %q", code, errs)
	}
	t.Setenv("INFER_OUTPUT", "json")
	code, _, errs = cli(t, "generate", "-n", "2")
	if code != 0 || !strings.Contains(errs, "INFER_OUTPUT") || !strings.Contains(errs, "INFER_GENERATE_OUTPUT") {
		t.Fatalf("INFER_OUTPUT: exit %d, %q", code, errs)
	}
}

func TestTokenizerHint(t *testing.T) {
	models := sharedModels(t)
	code, _, errs := cli(t, "generate", "-m", filepath.Join(models, "stories260K.bin"), "-n", "3")
	if code != 0 || !strings.Contains(errs, "512 tokens") || !strings.Contains(errs, "--tokenizer") {
		t.Fatalf("exit %d, %q: want a hint naming --tokenizer", code, errs)
	}
	code, _, errs = cli(t, "generate", "-m", filepath.Join(models, "stories260K.bin"), "--tokenizer", filepath.Join(models, "tok512.bin"), "-n", "3")
	if code != 0 || strings.Contains(errs, "warning") {
		t.Fatalf("with a tokenizer: exit %d, %q", code, errs)
	}
}

// TestStopStrings: on stories260K at temperature 0 (run.c's greedy text)
// a stop string cuts the text just before its first occurrence in the
// generated text, streamed or in JSON, with finish_reason stop, and the
// sequence stops there.
func TestStopStrings(t *testing.T) {
	models := sharedModels(t)
	golden, err := os.ReadFile(filepath.Join(models, "golden", "stories260K.greedy.txt"))
	if err != nil {
		t.Fatal(err)
	}
	base := []string{"generate", "-m", filepath.Join(models, "stories260K.bin"), "--tokenizer", filepath.Join(models, "tok512.bin"),
		"--temperature", "0", "--steps", "256"}
	for _, stop := range []string{"Lily", "named Li", "park.", ", there"} {
		i := strings.Index(string(golden), stop)
		if i < 0 {
			t.Fatalf("golden text lacks %q", stop)
		}
		want := string(golden[:i])
		code, out, errs := cli(t, append(base, "--stop", stop, "--stop", "never occurs")...)
		if code != 0 || out != want+"\n" {
			t.Fatalf("--stop %q streamed: exit %d (%s)\n got %q\nwant %q", stop, code, errs, out, want+"\n")
		}
		code, out, errs = cli(t, append(base, "--stop", stop, "--output", "json")...)
		var o seqOutput
		if code != 0 || json.Unmarshal([]byte(out), &o) != nil {
			t.Fatalf("json: exit %d (%s): %s", code, errs, out)
		}
		if o.Text != want || o.FinishReason != "stop" || o.GeneratedTokens >= 255 {
			t.Fatalf("--stop %q json: text %q, finish %s, %d tokens", stop, o.Text, o.FinishReason, o.GeneratedTokens)
		}
	}
}

// TestJSONStatsAndTextStreaming: the JSON line of each sequence counts
// its tokens consistently with its ids, and several prompts in text mode
// print each sequence once.
func TestJSONStatsAndTextStreaming(t *testing.T) {
	code, out, errs := cli(t, "generate", "--checkpoint", "synthetic", "-p", "abc", "-p", "hello there", "--steps", "20", "--temperature", "0.9", "-s", "4", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	seen := map[int]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var o seqOutput
		var raw map[string]any
		if err := json.Unmarshal([]byte(line), &o); err != nil || json.Unmarshal([]byte(line), &raw) != nil {
			t.Fatalf("%q: %v", line, err)
		}
		for _, k := range []string{"prompt_tokens", "generated_tokens", "ttft_ms", "tokens_per_second", "finish_reason", "seq"} {
			if _, ok := raw[k]; !ok {
				t.Errorf("line %q lacks %q", line, k)
			}
		}
		wantPrompt := 1 + len([]byte(o.Prompt)) // the byte tokenizer: one id per byte, BOS first
		if o.PromptTokens != wantPrompt || o.GeneratedTokens != len(o.IDs)-(wantPrompt-1) || o.TTFTMillis < 0 || o.TokensPerSecond < 0 {
			t.Errorf("seq %d: %+v", o.Seq, o)
		}
		seen[o.Seq] = true
	}
	if len(seen) != 2 {
		t.Fatalf("sequences %v", seen)
	}
	code, out, errs = cli(t, "generate", "--checkpoint", "synthetic", "-p", "abc", "-p", "hello there", "-p", "x", "--steps", "20", "--temperature", "0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for i := 0; i < 3; i++ {
		if n := strings.Count(out, "=== sequence "+string(rune('0'+i))+" ==="); n != 1 {
			t.Fatalf("sequence %d printed %d times:\n%s", i, n, out)
		}
	}
}

// TestClosedStdinIsNoPrompt: the real binary with standard input closed
// (sh's <&-) runs with no prompt, exactly like </dev/null.
func TestClosedStdinIsNoPrompt(t *testing.T) {
	args := []string{"generate", "-n", "6", "--temp", "0", "--output", "ids"}
	var outs []string
	for _, redirect := range []string{"<&-", "</dev/null"} {
		c := exec.Command("sh", append([]string{"-c", `exec "$0" "$@" ` + redirect, os.Args[0]}, args...)...)
		c.Env = append(os.Environ(), asMainEnv+"=1")
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v: %s", redirect, err, out)
		}
		outs = append(outs, string(out))
	}
	if want := strings.Join(genIDs(t, "", "-n", "6"), " ") + "\n"; outs[0] != want || outs[1] != want {
		t.Fatalf("closed stdin %q, /dev/null %q, want no prompt's %q", outs[0], outs[1], want)
	}
}

// TestStdinOverCapIsOneError: standard input past maxInputBytes is one
// error line naming the cap for a prompt (generate). tokenize streams its
// text, so it has no such cap, but 16 MiB without a place to cut is one
// error line naming that limit.
func TestStdinOverCapIsOneError(t *testing.T) {
	tok := filepath.Join(t.TempDir(), "tokenizer.json")
	tj := `{"version":"1.0","added_tokens":[],"normalizer":null,"pre_tokenizer":null,"post_processor":null,"decoder":null,` +
		`"model":{"type":"BPE","unk_token":"<unk>","byte_fallback":false,"vocab":{"<unk>":0,"a":1},"merges":[]}}`
	if err := os.WriteFile(tok, []byte(tj), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := cliIn(t, "aa", "tokenize", "--tokenizer", tok); code != 0 || out != "1 1\n" {
		t.Fatalf("tokenize aa: exit %d (%s): %q, want \"1 1\"", code, errs, out)
	}
	big := strings.Repeat("a", maxInputBytes+1)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"generate", "-n", "2"}, "standard input is longer than 16777216 bytes"},
		{[]string{"tokenize", "--tokenizer", tok}, "no place to cut the text in 16 MiB"},
	} {
		code, out, errs := cliIn(t, big, c.args...)
		if code != 1 || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, c.want) {
			t.Errorf("%s: exit %d, stdout %.40q, stderr %q", c.args[0], code, out, errs)
		}
	}
}
