package hf

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/gguf"
	"github.com/stride-lm/stride/tensor/kernels"
)

// A directory exported as GGUF (gguf.WriteModel) reads back as the same
// model: the synthetic Qwen2 one as architecture qwen2 (NEOX, biases),
// the Llama 3 one as llama with its frequency factors as rope_freqs
// (un-permuted to NORM, as llama.cpp's converter writes Llama). Both give
// the directory's logits bit for bit.
func TestExportGGUFReadsBack(t *testing.T) {
	for _, c := range []struct {
		name string
		spec synthSpec
		arch string
	}{{"qwen2", qwen2Spec, "qwen2"}, {"llama3", llama3Spec, "llama"}} {
		dir, _ := writeSynth(t, c.spec)
		m, _ := load(t, dir, RotaryAuto, model.LoadOptions{})
		pieces := make([]string, c.spec.vocab)
		scores := make([]float32, c.spec.vocab)
		for i := range pieces {
			pieces[i] = fmt.Sprintf("t%d", i)
		}
		vocab, err := gguf.VocabFromLlama2c(pieces, scores)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := gguf.WriteModel(&buf, m, gguf.ExportOptions{Type: kernels.TypeF32, Vocab: vocab}); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		path := filepath.Join(t.TempDir(), "m.gguf")
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		src, err := gguf.OpenSource(path)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if src.Arch() != c.arch {
			t.Errorf("%s: exported as %s, want %s", c.name, src.Arch(), c.arch)
		}
		gm, err := model.FromSource(src, model.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer gm.Close()
		tokens := []int{1, 4, 9, 16, 25, 36, 7, 3, 30, 2, 11, 13}
		if a, b := logits(t, m, tokens), logits(t, gm, tokens); !slices.Equal(a, b) {
			t.Errorf("%s: the GGUF's logits differ from the directory's (max |Δ| %g)", c.name, maxDiff(a, b))
		}
	}
}
