package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stride-lm/stride/model/engine"
)

// Hugging Face checkpoint directories through the CLI: the fixtures are
// ../shared/models/hf/stories260K (float32) and stories260K-bf16, the
// weights of stories260K.bin in transformers' layout, run with tok512.bin.

func idsOf(t *testing.T, s string) []int {
	t.Helper()
	var ids []int
	for _, f := range strings.Fields(s) {
		v, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("id %q: %v", f, err)
		}
		ids = append(ids, v)
	}
	return ids
}

// generate --checkpoint DIR prints llama2.c's golden text and ids, and
// with a prompt, greedy or sampled, the .bin's ids.
func TestHFDirectoryGenerate(t *testing.T) {
	models := sharedModels(t)
	dir := filepath.Join(models, "hf", "stories260K")
	tok := filepath.Join(models, "tok512.bin")
	want, err := os.ReadFile(filepath.Join(models, "golden", "stories260K.greedy.txt"))
	if err != nil {
		t.Fatal(err)
	}
	wantIDs, err := os.ReadFile(filepath.Join(models, "golden", "stories260K.greedy.ids"))
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"generate", "--checkpoint", dir, "--tokenizer", tok, "--temperature", "0", "--steps", "256"}
	code, out, errs := cli(t, args...)
	if code != 0 || out != string(want) {
		t.Fatalf("exit %d (%s): text differs from llama2.c's:\n got %q\nwant %q", code, errs, out, want)
	}
	code, out, errs = cli(t, append(args, "--output", "ids")...)
	if code != 0 || !slices.Equal(idsOf(t, out), idsOf(t, string(wantIDs))) {
		t.Fatalf("exit %d (%s): ids differ from the golden ids", code, errs)
	}
	for _, c := range [][]string{
		{"--temperature", "0"},
		{"--temperature", "1.0", "--topp", "0.9", "--seed", "42"},
		{"--temperature", "1.3", "--topp", "0.8", "--seed", "7"},
	} {
		gen := append([]string{"generate", "--tokenizer", tok, "--prompt", "Once upon a time, a little girl", "--steps", "200", "--output", "ids"}, c...)
		code, bin, errs := cli(t, append(gen, "--checkpoint", filepath.Join(models, "stories260K.bin"))...)
		if code != 0 {
			t.Fatalf("%v on the .bin: exit %d: %s", c, code, errs)
		}
		code, got, errs := cli(t, append(gen, "--checkpoint", dir)...)
		if code != 0 {
			t.Fatalf("%v on the directory: exit %d: %s", c, code, errs)
		}
		// The directory also stops at its EOS (2); the .bin at BOS only.
		w, g := idsOf(t, bin), idsOf(t, got)
		if i := slices.Index(w, 2); i >= 0 {
			w = w[:i]
		}
		if !slices.Equal(g, w) {
			t.Errorf("%v: directory ids differ from the .bin's:\n got %v\nwant %v", c, g, w)
		}
	}
	// The bf16 directory generates too, its weights kept as bf16 views.
	code, out, errs = cli(t, "generate", "--checkpoint", filepath.Join(models, "hf", "stories260K-bf16"), "--tokenizer", tok,
		"--weights", "bf16", "--temperature", "0", "--steps", "40", "--output", "ids")
	if code != 0 || len(idsOf(t, out)) != 40 {
		t.Fatalf("bf16: exit %d: %s %s", code, out, errs)
	}
}

// Prompts with a common prefix share its KV blocks on a directory model
// as on any other, and sharing changes no id. (--max-batch 1 runs them
// one after the other: sharing inside one batch is the engine's.)
func TestHFDirectoryPrefixSharing(t *testing.T) {
	models := sharedModels(t)
	pf := filepath.Join(t.TempDir(), "prompts.txt")
	prefix := "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends."
	if err := os.WriteFile(pf, []byte(prefix+" One day\n"+prefix+" The sun\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(share string) []seqOutput {
		code, out, errs := cli(t, "generate", "--checkpoint", filepath.Join(models, "hf", "stories260K"),
			"--tokenizer", filepath.Join(models, "tok512.bin"), "--prompts", pf, "--steps", "80", "--temperature", "0",
			"--block-size", "4", "--max-batch", "1", "--prefix-sharing="+share, "--output", "json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var res []seqOutput
		dec := json.NewDecoder(strings.NewReader(out))
		for dec.More() {
			var r seqOutput
			if err := dec.Decode(&r); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			res = append(res, r)
		}
		if len(res) != 2 {
			t.Fatalf("%d results", len(res))
		}
		return res
	}
	shared, alone := run("true"), run("false")
	if shared[0].CachedTokens+shared[1].CachedTokens < 16 {
		t.Errorf("prefix sharing cached %d + %d prompt tokens, want a shared prefix of at least 16", shared[0].CachedTokens, shared[1].CachedTokens)
	}
	for i := range shared {
		if alone[i].CachedTokens != 0 || !slices.Equal(shared[i].IDs, alone[i].IDs) {
			t.Errorf("sequence %d: ids with sharing %v, without %v (cached %d)", i, shared[i].IDs, alone[i].IDs, alone[i].CachedTokens)
		}
	}
}

// compare, trace and bench run on a directory.
func TestHFDirectoryCompareTraceBench(t *testing.T) {
	models := sharedModels(t)
	dir := filepath.Join(models, "hf", "stories260K")
	code, out, errs := cli(t, "compare", "--checkpoint", dir, "--tokenizer", filepath.Join(models, "tok512.bin"),
		"--steps", "24", "--prompt", "Once upon")
	if code != 0 || !regexp.MustCompile(`tokens identical\s+yes`).MatchString(out) {
		t.Fatalf("compare: exit %d: %s\n%s", code, errs, out)
	}
	traces := traceJSON(t, "--checkpoint", dir, "--seq", "4")
	if len(traces) == 0 || !strings.Contains(traces[0].Title, "H=8 KVH=4 D=8") {
		t.Fatalf("trace title %q, want stories260K's heads", traces[0].Title)
	}
	code, out, errs = cli(t, "bench", "--checkpoint", dir, "--tests", "pp16,tg8", "--reps", "1", "--threads", "1", "--output", "json")
	if code != 0 {
		t.Fatalf("bench: exit %d: %s", code, errs)
	}
	var rows []engine.BenchRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 2 {
		t.Fatalf("bench rows %v %s", err, out)
	}
	for _, r := range rows {
		if r.Mean <= 0 || r.Params != 260032 || r.Weights != "F32" {
			t.Errorf("bench row %+v", r)
		}
	}
	// The bf16 directory runs (and is reported) as stored.
	code, out, errs = cli(t, "bench", "--checkpoint", filepath.Join(models, "hf", "stories260K-bf16"), "--tests", "tg4", "--reps", "1",
		"--threads", "1", "--output", "json")
	if err := json.Unmarshal([]byte(out), &rows); code != 0 || err != nil || len(rows) != 1 || rows[0].Weights != "BF16" {
		t.Errorf("bench on the bf16 directory: exit %d (%s), rows %+v", code, errs, rows)
	}
}

// The float32 directory's perplexity is llama.cpp's figure for the same
// weights as GGUF (within the 0.05% the GGUF reader meets); the bf16
// directory reports its own, a little above.
func TestHFDirectoryPerplexity(t *testing.T) {
	models := sharedModels(t)
	text := filepath.Join(models, "golden", "stories260K.sampled-text.txt")
	tok := filepath.Join(models, "tok512.bin")
	ppl := func(dir string, ctx int, extra ...string) float64 {
		code, out, errs := cli(t, append([]string{"perplexity", "--checkpoint", filepath.Join(models, "hf", dir), "--tokenizer", tok,
			"--ctx", strconv.Itoa(ctx), text}, extra...)...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", dir, code, errs)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		m := finalRE.FindStringSubmatch(lines[len(lines)-1])
		if m == nil {
			t.Fatalf("%s: last line %q", dir, lines[len(lines)-1])
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		return v
	}
	for _, c := range llamaCppPPL[:2] { // stories260K-f32.gguf at ctx 64 and 256
		if got := ppl("stories260K", c.ctx); math.Abs(got-c.ppl)/c.ppl > 0.0005 {
			t.Errorf("ctx %d: PPL %.4f, llama.cpp %.4f on the same weights", c.ctx, got, c.ppl)
		}
	}
	bf := ppl("stories260K-bf16", 64, "--weights", "bf16")
	t.Logf("stories260K-bf16 perplexity at ctx 64: %.4f (float32: %.4f)", bf, llamaCppPPL[0].ppl)
	// Without --weights a directory runs as stored: bf16, the same figure.
	if def := ppl("stories260K-bf16", 64); def != bf {
		t.Errorf("bf16 directory: PPL %.4f by default, %.4f with --weights bf16", def, bf)
	}
	if rel := (bf - llamaCppPPL[0].ppl) / llamaCppPPL[0].ppl; rel < -0.01 || rel > 0.03 {
		t.Errorf("bf16 PPL %.4f is %.2f%% from float32's %.4f", bf, 100*rel, llamaCppPPL[0].ppl)
	}
}

// export --checkpoint DIR writes a llama2.c file that generates what the
// directory generates, and (with tok512.bin as the vocabulary) a GGUF
// that is llama.cpp's own conversion of stories260K byte for byte.
func TestHFDirectoryExport(t *testing.T) {
	models := sharedModels(t)
	dir := filepath.Join(models, "hf", "stories260K")
	out := filepath.Join(t.TempDir(), "from-hf.bin")
	if code, stdout, errs := cli(t, "export", "--checkpoint", dir, "--out", out); code != 0 || !strings.Contains(stdout, "260032 params") {
		t.Fatalf("export: exit %d: %s %s", code, stdout, errs)
	}
	gen := []string{"generate", "--tokenizer", filepath.Join(models, "tok512.bin"), "--prompt", "Once upon a time",
		"--steps", "120", "--temperature", "0.8", "--seed", "5", "--output", "ids"}
	_, a, _ := cli(t, append(gen, "--checkpoint", dir)...)
	code, b, errs := cli(t, append(gen, "--checkpoint", out)...)
	if code != 0 {
		t.Fatalf("generate from the export: exit %d: %s", code, errs)
	}
	// The export stops at BOS only; the directory also at its EOS (2).
	w := idsOf(t, b)
	if i := slices.Index(w, 2); i >= 0 {
		w = w[:i]
	}
	if got := idsOf(t, a); len(got) == 0 || !slices.Equal(got, w) {
		t.Fatalf("export generates differently:\n dir    %v\n export %v", got, w)
	}
	gg := filepath.Join(t.TempDir(), "from-hf.gguf")
	if code, stdout, errs := cli(t, "export", "--checkpoint", dir, "--tokenizer", filepath.Join(models, "tok512.bin"),
		"--format", "gguf", "--out", gg); code != 0 {
		t.Fatalf("export gguf: exit %d: %s %s", code, stdout, errs)
	}
	got, _ := os.ReadFile(gg)
	want, err := os.ReadFile(filepath.Join(models, "gguf", "stories260K-f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || !bytes.Equal(got, want) {
		t.Errorf("the directory's GGUF export (%d bytes) is not llama.cpp's stories260K-f32.gguf (%d bytes)", len(got), len(want))
	}
}

// A broken directory is one line and exit status 1.
func TestHFDirectoryBad(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"architectures":["GPT2LMHeadModel"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := cli(t, "generate", "--checkpoint", dir, "--steps", "4")
	if code != 1 || !strings.Contains(errs, "architecture [GPT2LMHeadModel] is not supported") || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}

// A directory with a tokenizer.json (and tokenizer_config.json) uses it
// when no --tokenizer is given: a two-merge BPE turns "abab" into two
// "ab" tokens (id 5) after its BOS, which generate feeds as the prompt.
func TestHFDirectoryTokenizerJSON(t *testing.T) {
	dir := hfDirWithTokenizer(t, `"a":3,"b":4,"ab":5},"merges":["a b"]`, true)
	code, out, errs := cli(t, "generate", "--checkpoint", dir, "--prompt", "abab", "--steps", "6", "--temperature", "0", "--output", "ids")
	if ids := idsOf(t, out); code != 0 || len(ids) != 6 || ids[0] != 5 || ids[1] != 5 {
		t.Fatalf("exit %d (%s): ids %v, want the prompt [5 5] first", code, errs, ids)
	}
}

// A tokenizer that adds no BOS (Qwen's) makes the prompt's first id a text
// token, which the engine feeds first and does not report (as run.c does
// with BOS): generate must still print it, in every output format, the
// streamed text and with several prompts.
func TestGenerateKeepsFirstTokenWithoutBOS(t *testing.T) {
	// "a" and "b" have no merge: "ab" is two tokens, 3 then 4.
	dir := hfDirWithTokenizer(t, `"a":3,"b":4},"merges":[]`, false)
	base := []string{"generate", "--checkpoint", dir, "--steps", "4", "--temperature", "0"}
	code, out, errs := cli(t, append(base, "--prompt", "ab", "--output", "ids")...)
	if ids := idsOf(t, out); code != 0 || len(ids) < 2 || ids[0] != 3 || ids[1] != 4 {
		t.Fatalf("ids: exit %d (%s): %v, want the prompt [3 4] first", code, errs, ids)
	}
	code, out, errs = cli(t, append(base, "--prompt", "ab")...)
	if code != 0 || !strings.HasPrefix(out, "ab") {
		t.Fatalf("streamed text: exit %d (%s): %q, want it to start with the prompt \"ab\"", code, errs, out)
	}
	code, out, errs = cli(t, append(base, "--prompt", "ab", "--output", "json")...)
	var o struct {
		IDs  []int  `json:"ids"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal([]byte(out), &o); code != 0 || err != nil || len(o.IDs) < 2 || o.IDs[0] != 3 || !strings.HasPrefix(o.Text, "ab") {
		t.Fatalf("json: exit %d (%s, %v): %q", code, errs, err, out)
	}
	code, out, errs = cli(t, append(base, "--prompt", "ab", "--prompt", "ba")...)
	if code != 0 || !strings.Contains(out, "\nab") || !strings.Contains(out, "\nba") {
		t.Fatalf("two prompts: exit %d (%s): %q, want both prompts' text whole", code, errs, out)
	}
}

// hfDirWithTokenizer is a Hugging Face directory of the shared
// stories260K weights with a small BPE tokenizer.json (<unk> <s> </s>
// then the vocab entries and merges of rest) and a tokenizer_config.json
// whose add_bos_token is addBOS.
func hfDirWithTokenizer(t *testing.T, rest string, addBOS bool) string {
	t.Helper()
	models := sharedModels(t)
	dir := t.TempDir()
	for _, f := range []string{"config.json", "model.safetensors"} {
		if err := os.Symlink(filepath.Join(models, "hf", "stories260K", f), filepath.Join(dir, f)); err != nil {
			t.Skipf("no symlinks here: %v", err)
		}
	}
	tj := `{"version":"1.0","added_tokens":[{"id":0,"content":"<unk>","special":true},{"id":1,"content":"<s>","special":true},` +
		`{"id":2,"content":"</s>","special":true}],"normalizer":null,"pre_tokenizer":null,"post_processor":null,"decoder":null,` +
		`"model":{"type":"BPE","unk_token":"<unk>","byte_fallback":false,"vocab":{"<unk>":0,"<s>":1,"</s>":2,` + rest + `}}`
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(tj), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`{"add_bos_token":%v,"bos_token":"<s>"}`, addBOS)
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Issue 25 row 10 (Hugging Face): a tokenizer.json with an id past the
// embedding's 512 rows is refused, naming both sizes, instead of its ids
// being dropped; one with fewer ids than rows loads (transformers pads
// embeddings: Qwen2.5 has 151,665 tokens over 151,936 rows).
func TestHFTokenizerLargerThanEmbedding(t *testing.T) {
	dir := hfDirWithTokenizer(t, `"a":3,"b":4,"ab":600},"merges":["a b"]`, true)
	code, _, errs := cli(t, "generate", "--checkpoint", dir, "--prompt", "ab", "--steps", "2")
	if code != 1 || !strings.Contains(errs, "has 601 tokens, the model only 512") || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
		t.Fatalf("exit %d, stderr %q; want one line naming 601 and 512", code, errs)
	}
	dir = hfDirWithTokenizer(t, `"a":3,"b":4},"merges":[]`, true)
	if code, _, errs := cli(t, "generate", "--checkpoint", dir, "--prompt", "ab", "--steps", "2"); code != 0 {
		t.Fatalf("a 5-token vocabulary over 512 rows: exit %d, %s", code, errs)
	}
}
