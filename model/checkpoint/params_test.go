package checkpoint_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/checkpoint"
	"github.com/stride-lm/stride/model/gguf"
	"github.com/stride-lm/stride/tensor"
	"github.com/stride-lm/stride/tensor/kernels"
	"github.com/stride-lm/stride/tensor/testfixture"
)

// storedParams counts the elements of every parameter tensor src holds
// (rope_freqs is a table computed from the config, not a parameter), and
// whether it stores output.weight.
func storedParams(t *testing.T, src model.Source) (int64, bool) {
	t.Helper()
	c := src.Config()
	names := []string{model.TensorTokenEmbd, model.TensorOutputNorm, model.TensorOutput}
	for l := 0; l < c.NLayers; l++ {
		for _, f := range []string{model.TensorAttnNorm, model.TensorAttnQ, model.TensorAttnK, model.TensorAttnV,
			model.TensorAttnQBias, model.TensorAttnKBias, model.TensorAttnVBias, model.TensorAttnOutput,
			model.TensorFFNNorm, model.TensorFFNGate, model.TensorFFNUp, model.TensorFFNDown} {
			names = append(names, fmt.Sprintf(f, l))
		}
	}
	var n int64
	hasOutput := false
	for _, name := range names {
		rt, err := src.Tensor(name)
		if errors.Is(err, model.ErrTensorNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		hasOutput = hasOutput || name == model.TensorOutput
		e := int64(1)
		for _, d := range rt.Shape {
			e *= int64(d)
		}
		n += e
	}
	return n, hasOutput
}

// Config.Params is the element count of the tensors a checkpoint really
// stores, for every format of the shared models (GQA, tied and untied
// classifiers) and for a Qwen2-style model with q/k/v biases and an
// untied classifier.
func TestParamsCountsStoredTensors(t *testing.T) {
	paths := []string{"models/stories260K.bin", "models/gguf/stories260K-f32.gguf", "models/gguf/stories260K-q8_0.gguf",
		"models/gguf/synthetic-k256-q4_k_m.gguf", "models/hf/stories260K", "models/hf/stories260K-bf16"}
	for _, rel := range paths {
		src, err := checkpoint.OpenSource(testfixture.File(t, rel), model.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, hasOutput := storedParams(t, src)
		c := src.Config()
		if hasOutput == c.SharedClassifier {
			t.Errorf("%s: output.weight stored %v but shared classifier %v", rel, hasOutput, c.SharedClassifier)
		}
		if c.Params() != got {
			t.Errorf("%s: Config.Params %d, the stored tensors hold %d", rel, c.Params(), got)
		}
		src.Close()
	}
	t.Run("qwen2 biases", func(t *testing.T) {
		c := model.Config{Dim: 32, HiddenDim: 48, NLayers: 2, NHeads: 4, NKVHeads: 2, VocabSize: 300, SeqLen: 16,
			RopeTheta: 1e6, NormEps: 1e-6, RopeStyle: model.RopeNeox}
		m, err := model.Synthesize(c, 3)
		if err != nil {
			t.Fatal(err)
		}
		for i := range m.Weights.Layers {
			if m.Weights.Layers[i].BQKV, err = tensor.Zeros(nil, tensor.F32, c.QKVRows()); err != nil {
				t.Fatal(err)
			}
		}
		m.Config.QKVBias = true
		var buf bytes.Buffer
		if err := gguf.WriteModel(&buf, m, gguf.ExportOptions{Type: kernels.TypeF32}); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), "qwen2.gguf")
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		src, err := checkpoint.OpenSource(p, model.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		got, _ := storedParams(t, src)
		sc := src.Config()
		if !sc.QKVBias || sc.SharedClassifier || sc.NKVHeads != 2 {
			t.Fatalf("config %+v: want biases, untied classifier, 2 KV heads", sc)
		}
		if sc.Params() != got {
			t.Errorf("Config.Params %d, the stored tensors hold %d", sc.Params(), got)
		}
	})
}
