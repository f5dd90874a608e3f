package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stride-lm/stride/model/gguf"
)

// TestExportRoundTrip: the synthetic model exported and loaded back as a
// checkpoint generates exactly the same ids as the synthetic model itself.
func TestExportRoundTrip(t *testing.T) {
	out := filepath.Join(t.TempDir(), "tiny.bin")
	code, stdout, errs := cli(t, "export", "--checkpoint", "synthetic", "--out", out, "--synthetic.seq_len", "128")
	if code != 0 || !strings.Contains(stdout, "wrote") {
		t.Fatalf("export: exit %d %s %s", code, stdout, errs)
	}
	gen := []string{"generate", "--prompt", "abc", "--steps", "40", "--temperature", "0.9", "--seed", "3", "--output", "ids"}
	_, direct, _ := cli(t, append(gen, "--checkpoint", "synthetic", "--synthetic.seq_len", "128")...)
	code, loaded, errs := cli(t, append(gen, "--checkpoint", out)...)
	if code != 0 {
		t.Fatalf("generate from export: exit %d %s", code, errs)
	}
	if direct == "" || direct != loaded {
		t.Fatalf("exported model generates differently:\n synthetic %s\n exported  %s", direct, loaded)
	}
	// A second export of the loaded checkpoint is byte-identical.
	out2 := filepath.Join(t.TempDir(), "again.bin")
	if code, _, errs := cli(t, "export", "--checkpoint", out, "--out", out2); code != 0 {
		t.Fatalf("re-export: %s", errs)
	}
	a, _ := os.ReadFile(out)
	b, _ := os.ReadFile(out2)
	if len(a) == 0 || string(a) != string(b) {
		t.Fatalf("re-export differs (%d vs %d bytes)", len(a), len(b))
	}
}

func TestExportNeedsOut(t *testing.T) {
	code, _, errs := cli(t, "export")
	if code != 1 || !strings.Contains(errs, "--out") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	// An unwritable destination fails cleanly and leaves nothing behind.
	dir := filepath.Join(t.TempDir(), "missing", "x.bin")
	code, _, errs = cli(t, "export", "--out", dir)
	if code != 1 || !strings.Contains(errs, "export") {
		t.Fatalf("exit %d: %s", code, errs)
	}
}

// TestExportV2: --format v2 writes a Q8_0 checkpoint that generates
// exactly what quantizing at load (--weights q8_0) generates (the int8
// matrices are the same), and re-exports byte for byte.
func TestExportV2(t *testing.T) {
	dir := t.TempDir()
	shape := []string{"--checkpoint", "synthetic", "--synthetic.hidden_dim", "192", "--synthetic.seq_len", "128"}
	out := filepath.Join(dir, "q8.bin")
	code, stdout, errs := cli(t, append([]string{"export", "--format", "v2", "--out", out}, shape...)...)
	if code != 0 || !strings.Contains(stdout, "version 2, Q8_0 group size 64") {
		t.Fatalf("export: exit %d %s %s", code, stdout, errs)
	}
	gen := []string{"generate", "--prompt", "abc", "--steps", "40", "--temperature", "0.9", "--seed", "3", "--output", "ids"}
	_, atLoad, _ := cli(t, append(append(gen, "--weights", "q8_0"), shape...)...)
	code, fromFile, errs := cli(t, append(gen, "--checkpoint", out)...)
	if code != 0 {
		t.Fatalf("generate from v2: exit %d %s", code, errs)
	}
	if atLoad == "" || atLoad != fromFile {
		t.Fatalf("v2 checkpoint generates differently from --weights q8_0:\n q8_0 at load %s\n v2 file      %s", atLoad, fromFile)
	}
	again := filepath.Join(dir, "again.bin")
	if code, _, errs := cli(t, "export", "--checkpoint", out, "--format", "v2", "--out", again); code != 0 {
		t.Fatalf("re-export: %s", errs)
	}
	a, _ := os.ReadFile(out)
	b, _ := os.ReadFile(again)
	if len(a) == 0 || string(a) != string(b) {
		t.Fatalf("v2 re-export differs (%d vs %d bytes)", len(a), len(b))
	}
	// Bad group sizes fail cleanly and leave nothing behind.
	for _, args := range [][]string{{"--format", "v2", "--group-size", "48"}, {"--group-size", "8"}, {"--format", "v2", "--group-size", "-2"}} {
		bad := filepath.Join(dir, "bad.bin")
		code, _, errs := cli(t, append(append([]string{"export", "--out", bad}, args...), shape...)...)
		if code != 1 || !strings.Contains(errs, "group") {
			t.Fatalf("%v: exit %d %s", args, code, errs)
		}
		if _, err := os.Stat(bad); err == nil {
			t.Fatalf("%v: a failed export left %s behind", args, bad)
		}
	}
}

// A GGUF --tokenizer gives the export its tokenizer keys as they are: a
// byte-level BPE vocabulary keeps its model, pre-tokenizer, merges and
// special ids (rebuilt from pieces and scores it became a SentencePiece
// vocabulary without merges), and the file loads and generates. One of
// another size than the model's vocabulary is refused in one line.
func TestExportGGUFKeepsGGUFTokenizer(t *testing.T) {
	dir := t.TempDir()
	vocab := filepath.Join(dir, "vocab.gguf")
	var buf bytes.Buffer
	tokens := []string{"<|endoftext|>", "a", "b", "ab", "Ġ", "Ġab"}
	if err := gguf.Write(&buf, []gguf.KV{
		{Key: "general.architecture", Value: gguf.MustValue("llama")},
		{Key: "tokenizer.ggml.model", Value: gguf.MustValue("gpt2")},
		{Key: "tokenizer.ggml.pre", Value: gguf.MustValue("smollm")},
		{Key: "tokenizer.ggml.tokens", Value: gguf.MustValue(tokens)},
		{Key: "tokenizer.ggml.token_type", Value: gguf.MustValue([]int32{3, 1, 1, 1, 1, 1})},
		{Key: "tokenizer.ggml.merges", Value: gguf.MustValue([]string{"a b", "Ġ ab"})},
		{Key: "tokenizer.ggml.bos_token_id", Value: gguf.MustValue(uint32(0))},
		{Key: "tokenizer.ggml.eos_token_id", Value: gguf.MustValue(uint32(0))},
	}, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(vocab, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "m.gguf")
	export := []string{"export", "--checkpoint", "synthetic", "--synthetic.seq_len", "64", "--tokenizer", vocab, "--format", "gguf", "--out", out}
	if code, _, errs := cli(t, append(export, "--synthetic.vocab_size", "6")...); code != 0 {
		t.Fatalf("export: exit %d: %s", code, errs)
	}
	f, err := gguf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	model, _ := f.String("tokenizer.ggml.model")
	pre, _ := f.String("tokenizer.ggml.pre")
	merges, _ := f.Strings("tokenizer.ggml.merges")
	got, _ := f.Strings("tokenizer.ggml.tokens")
	bos, _ := f.Uint("tokenizer.ggml.bos_token_id")
	f.Close()
	if model != "gpt2" || pre != "smollm" || len(merges) != 2 || strings.Join(got, " ") != strings.Join(tokens, " ") || bos != 0 {
		t.Errorf("exported tokenizer: model %q pre %q merges %q tokens %q bos %d", model, pre, merges, got, bos)
	}
	// "a ab" is a (1) and, merged twice, Ġab (5); without
	// add_bos_token there is no BOS, so the ids line is the whole prompt,
	// 1 5, then the generated ids (--steps 4: three more).
	code, ids, errs := cli(t, "generate", "--checkpoint", out, "--prompt", "a ab", "--steps", "4",
		"--temperature", "0", "--output", "ids")
	if f := strings.Fields(ids); code != 0 || len(f) != 5 || f[0] != "1" || f[1] != "5" {
		t.Errorf("generate on the export: exit %d, ids %q, %s", code, ids, errs)
	}
	code, _, errs = cli(t, append(export, "--synthetic.vocab_size", "7")...)
	if code != 1 || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, "6 tokens") {
		t.Errorf("vocab size mismatch: exit %d, %q; want one line", code, errs)
	}
}
