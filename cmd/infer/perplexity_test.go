package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// llama.cpp's figures (llama-perplexity -c CTX -b CTX on the sampled
// text, commit c392e50), from ../shared/models/README.md.
var llamaCppPPL = []struct {
	file      string
	ctx       int
	ppl, errs float64
}{
	{"gguf/stories260K-f32.gguf", 64, 3.3607, 0.15656},
	{"gguf/stories260K-f32.gguf", 256, 2.9944, 0.12376},
	{"gguf/stories260K-q8_0.gguf", 64, 3.3690, 0.15724},
	{"gguf/stories260K-q8_0.gguf", 256, 2.9993, 0.12415},
	{"gguf/synthetic-k256-f32.gguf", 128, 533.3969, 5.37222},
	{"gguf/synthetic-k256-q8_0.gguf", 128, 533.5823, 5.36929},
	{"gguf/synthetic-k256-q4_0.gguf", 128, 530.9792, 5.33164},
	{"gguf/synthetic-k256-q4_k_m.gguf", 128, 536.9026, 5.42325},
	{"gguf/synthetic-k256-q6_k.gguf", 128, 533.6619, 5.38219},
}

var finalRE = regexp.MustCompile(`^Final estimate: PPL = ([0-9.]+) \+/- ([0-9.]+)$`)

// Stride's perplexity agrees with llama.cpp's within 0.05% (the issue's
// bound) and prints the same last line. llama-perplexity keeps K and V in
// F16 (its default cache type), so these runs do too (--kv-dtype f16); the
// weights run as stored, with ggml's activation rounding.
func TestPerplexityMatchesLlamaCpp(t *testing.T) {
	models := sharedModels(t)
	text := filepath.Join(models, "golden", "stories260K.sampled-text.txt")
	tok := filepath.Join(models, "tok512.bin")
	for _, c := range llamaCppPPL {
		t.Run(c.file+"/"+strconv.Itoa(c.ctx), func(t *testing.T) {
			code, out, errs := cli(t, "perplexity", "--kv-dtype", "f16", "--checkpoint", filepath.Join(models, c.file), "--tokenizer", tok,
				"--ctx", strconv.Itoa(c.ctx), text)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			m := finalRE.FindStringSubmatch(lines[len(lines)-1])
			if m == nil {
				t.Fatalf("last line %q", lines[len(lines)-1])
			}
			ppl, _ := strconv.ParseFloat(m[1], 64)
			se, _ := strconv.ParseFloat(m[2], 64)
			if rel := math.Abs(ppl-c.ppl) / c.ppl; rel > 0.0005 {
				t.Errorf("PPL %.4f, llama.cpp %.4f: %.3f%% apart (bound 0.05%%)", ppl, c.ppl, 100*rel)
			}
			if rel := math.Abs(se-c.errs) / c.errs; rel > 0.01 {
				t.Errorf("± %.5f, llama.cpp %.5f", se, c.errs)
			}
			if !strings.Contains(errs, "[1]") {
				t.Errorf("no per-chunk progress on stderr: %q", errs)
			}
		})
	}
}

// The JSON output has the keys and llama.cpp's chunk arithmetic:
// 2066 tokens in chunks of 256 are 8 chunks of 127 scored tokens.
func TestPerplexityJSONAndInputs(t *testing.T) {
	models := sharedModels(t)
	textPath := filepath.Join(models, "golden", "stories260K.sampled-text.txt")
	args := []string{"perplexity", "--checkpoint", filepath.Join(models, "gguf", "stories260K-f32.gguf"),
		"--tokenizer", filepath.Join(models, "tok512.bin"), "--ctx", "256", "--output", "json"}
	code, out, errs := cli(t, append(args, "-f", textPath)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	for _, k := range []string{"ppl", "ppl_stderr", "nll", "tokens_scored", "chunks", "ctx"} {
		if _, ok := got[k]; !ok {
			t.Errorf("key %q missing from %s", k, out)
		}
	}
	if got["chunks"] != 8.0 || got["tokens_scored"] != 8.0*127 || got["ctx"] != 256.0 {
		t.Errorf("chunks %v, tokens_scored %v, ctx %v; want 8, 1016, 256", got["chunks"], got["tokens_scored"], got["ctx"])
	}
	if nll := got["nll"].(float64); math.Abs(math.Exp(nll)-got["ppl"].(float64)) > 1e-9 {
		t.Errorf("ppl %v is not exp(nll %v)", got["ppl"], nll)
	}
	// The text on stdin gives the same figure.
	text, err := os.ReadFile(textPath)
	if err != nil {
		t.Fatal(err)
	}
	code2, out2, errs2 := cliStdin(t, string(text), args...)
	if code2 != 0 || out2 != out {
		t.Errorf("stdin: exit %d, %q (%s); want %q", code2, out2, errs2, out)
	}
	// Too short a text is one clear line.
	code3, _, errs3 := cliStdin(t, "Once upon a time.", args...)
	if code3 != 1 || !strings.Contains(errs3, "needs at least 512") || strings.Count(strings.TrimSpace(errs3), "\n") > 1 {
		t.Errorf("short text: exit %d, %q", code3, errs3)
	}
}

// cliStdin is cli with stdin read from a file holding in (cobra reads
// os.Stdin when no reader is set).
func cliStdin(t *testing.T, in string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "stdin")
	if err := os.WriteFile(p, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	old := os.Stdin
	os.Stdin = f
	defer func() { os.Stdin = old }()
	return cli(t, args...)
}

// On the F32 GGUF, generate gives the golden ids and the llama2.c file's
// ids (greedy with a prompt, sampled with run.c's sampler); a file that
// is neither format is refused in one line.
func TestGenerateGGUFLikeLlama2c(t *testing.T) {
	models := sharedModels(t)
	golden, err := os.ReadFile(filepath.Join(models, "golden", "stories260K.greedy.ids"))
	if err != nil {
		t.Fatal(err)
	}
	tok := filepath.Join(models, "tok512.bin")
	gg := filepath.Join(models, "gguf", "stories260K-f32.gguf")
	bin := filepath.Join(models, "stories260K.bin")
	ids := func(ckpt string, extra ...string) string {
		args := append([]string{"generate", "--checkpoint", ckpt, "--tokenizer", tok, "--output", "ids"}, extra...)
		code, out, errs := cli(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		return strings.Join(strings.Fields(out), " ")
	}
	if got := ids(gg, "--temperature", "0", "--steps", "256"); got != strings.Join(strings.Fields(string(golden)), " ") {
		t.Errorf("greedy GGUF ids differ from the golden ids:\n%s", got)
	}
	for _, extra := range [][]string{
		{"--temperature", "0", "--prompt", "Once upon a time"},
		{"--temperature", "1", "--topp", "0.9", "--seed", "42", "--prompt", "Lily"},
		{"--temperature", "0.8", "--topp", "0.95", "--seed", "7"},
	} {
		if a, b := ids(gg, extra...), ids(bin, extra...); a != b {
			t.Errorf("%v: GGUF %q, .bin %q", extra, a, b)
		}
	}
	bad := filepath.Join(t.TempDir(), "model.gguf")
	if err := os.WriteFile(bad, []byte("GGUF\x07\x00\x00\x00not really"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := cli(t, "generate", "--checkpoint", bad, "--steps", "4")
	if code != 1 || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, "model.gguf") {
		t.Errorf("bad GGUF: exit %d, %q; want one line naming the file", code, errs)
	}
}

// infer export --format gguf: stories260K.bin with tok512.bin as f32 is
// llama.cpp's own conversion byte for byte; a q8_0 export reads back and
// scores as llama.cpp's Q8_0 file does.
func TestExportGGUF(t *testing.T) {
	models := sharedModels(t)
	dir := t.TempDir()
	f32 := filepath.Join(dir, "s.gguf")
	code, _, errs := cli(t, "export", "--checkpoint", filepath.Join(models, "stories260K.bin"),
		"--tokenizer", filepath.Join(models, "tok512.bin"), "--format", "gguf", "--out", f32)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	got, _ := os.ReadFile(f32)
	want, err := os.ReadFile(filepath.Join(models, "gguf", "stories260K-f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Error("the f32 export is not llama.cpp's stories260K-f32.gguf")
	}
	q8 := filepath.Join(dir, "q8.gguf")
	// Re-export the GGUF itself: its vocabulary comes along.
	if code, _, errs := cli(t, "export", "--checkpoint", f32, "--format", "gguf", "--type", "q8_0", "--out", q8); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	code, out, errs := cli(t, "perplexity", "--kv-dtype", "f16", "--checkpoint", q8, "--tokenizer", filepath.Join(models, "tok512.bin"),
		"--ctx", "256", "--output", "json", filepath.Join(models, "golden", "stories260K.sampled-text.txt"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r pplResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if math.Abs(r.PPL-2.9993)/2.9993 > 0.0005 {
		t.Errorf("q8_0 export PPL %.4f, llama.cpp's Q8_0 file 2.9993", r.PPL)
	}
	if code, _, errs := cli(t, "export", "--format", "legacy", "--type", "q8_0", "--out", filepath.Join(dir, "x.bin")); code != 1 || !strings.Contains(errs, "--type applies to --format gguf") {
		t.Errorf("--type with legacy: exit %d, %q", code, errs)
	}
}
