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
// bound) and prints the same last line, with no flag beyond llama.cpp's
// own: llama-perplexity keeps K and V in F16 (its default cache type), and
// so does infer perplexity on a GGUF by default; the weights run as
// stored, with ggml's activation rounding.
func TestPerplexityMatchesLlamaCpp(t *testing.T) {
	models := sharedModels(t)
	text := filepath.Join(models, "golden", "stories260K.sampled-text.txt")
	tok := filepath.Join(models, "tok512.bin")
	for _, c := range llamaCppPPL {
		t.Run(c.file+"/"+strconv.Itoa(c.ctx), func(t *testing.T) {
			code, out, errs := cli(t, "perplexity", "--checkpoint", filepath.Join(models, c.file), "--tokenizer", tok,
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

// An explicit --kv-dtype wins over the GGUF default (an F32 cache gives
// another figure), and a llama2.c checkpoint keeps the F32 default.
func TestPerplexityKVDTypeDefault(t *testing.T) {
	models := sharedModels(t)
	text := filepath.Join(models, "golden", "stories260K.sampled-text.txt")
	tok := filepath.Join(models, "tok512.bin")
	ppl := func(args ...string) string {
		t.Helper()
		code, out, errs := cli(t, append(append([]string{"perplexity", "--tokenizer", tok, "--ctx", "64"}, args...), text)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		return strings.TrimSpace(out)
	}
	q8 := filepath.Join(models, "gguf", "stories260K-q8_0.gguf")
	def, f16, f32 := ppl("--checkpoint", q8), ppl("--checkpoint", q8, "--kv-dtype", "f16"), ppl("--checkpoint", q8, "--kv-dtype", "f32")
	if def != f16 {
		t.Errorf("GGUF default %q, --kv-dtype f16 %q: the default should be llama.cpp's F16 cache", def, f16)
	}
	if f32 == f16 {
		t.Errorf("--kv-dtype f32 gave the F16 figure %q: the flag was ignored", f32)
	}
	bin := filepath.Join(models, "stories260K.bin")
	if d, e := ppl("--checkpoint", bin), ppl("--checkpoint", bin, "--kv-dtype", "f32"); d != e {
		t.Errorf("llama2.c default %q, --kv-dtype f32 %q: the default should stay F32", d, e)
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
	old := processStdin
	processStdin = f
	defer func() { processStdin = old }()
	return cli(t, args...)
}
