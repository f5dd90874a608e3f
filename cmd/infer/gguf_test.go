package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stride-lm/stride/model/engine"
)

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
	var r engine.PerplexityResult
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

// The prefix cache on a GGUF: two prompts sharing a prefix give, run
// together with prefix sharing, the ids each gives alone without it.
func TestGGUFPrefixSharing(t *testing.T) {
	models := sharedModels(t)
	gg := filepath.Join(models, "gguf", "stories260K-q8_0.gguf")
	run := func(extra ...string) string {
		args := append([]string{"generate", "--checkpoint", gg, "--temperature", "0", "--steps", "80", "--block-size", "4", "--output", "ids"}, extra...)
		code, out, errs := cli(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		return out
	}
	a, b := "Once upon a time, there was a little dog", "Once upon a time, there was a little cat"
	together := run("--prompt", a, "--prompt", b)
	alone := run("--prompt", a, "--prefix-sharing=false") + run("--prompt", b, "--prefix-sharing=false")
	if together != alone {
		t.Errorf("with prefix sharing:\n%s\nalone:\n%s", together, alone)
	}
}
