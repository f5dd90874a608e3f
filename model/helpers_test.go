package model

import (
	"os"
	"testing"

	"github.com/stride-lm/stride/tensor"
	"github.com/stride-lm/stride/tensor/testfixture"
)

// tinyConfig is a small GQA shape used to build test models.
func tinyConfig(shared bool) Config {
	return Config{Dim: 16, HiddenDim: 24, NLayers: 2, NHeads: 4, NKVHeads: 2, VocabSize: 300, SeqLen: 8,
		RopeTheta: 10000, NormEps: 1e-5, SharedClassifier: shared}
}

func mustSynth(t testing.TB, c Config, seed uint64) *Model {
	t.Helper()
	m, err := Synthesize(c, seed)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sameModel(t testing.TB, a, b *Model) {
	t.Helper()
	if a.Config != b.Config {
		t.Fatalf("config %+v vs %+v", a.Config, b.Config)
	}
	testfixture.SameTensor(t, "embedding", a.Weights.TokenEmbedding, b.Weights.TokenEmbedding)
	testfixture.SameTensor(t, "classifier", a.Weights.Classifier, b.Weights.Classifier)
	testfixture.SameTensor(t, "final norm", a.Weights.FinalNorm, b.Weights.FinalNorm)
	for l := range a.Weights.Layers {
		x, y := a.Weights.Layers[l], b.Weights.Layers[l]
		testfixture.SameTensor(t, "attn norm", x.AttnNorm, y.AttnNorm)
		testfixture.SameTensor(t, "wqkv", x.WQKV, y.WQKV)
		testfixture.SameTensor(t, "wo", x.WO, y.WO)
		testfixture.SameTensor(t, "ffn norm", x.FFNNorm, y.FFNNorm)
		testfixture.SameTensor(t, "w1", x.W1, y.W1)
		testfixture.SameTensor(t, "w2", x.W2, y.W2)
		testfixture.SameTensor(t, "w3", x.W3, y.W3)
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// cloneModel is an independent copy of m's float weights (no tensor
// shared, the shared classifier still shared).
func cloneModel(t testing.TB, m *Model) *Model {
	t.Helper()
	c := func(x *tensor.Tensor) *tensor.Tensor {
		y, err := x.Clone()
		if err != nil {
			t.Fatal(err)
		}
		return y
	}
	out := &Model{Config: m.Config}
	w, o := m.Weights, &out.Weights
	o.TokenEmbedding, o.FinalNorm = c(w.TokenEmbedding), c(w.FinalNorm)
	o.Classifier = o.TokenEmbedding
	if w.Classifier != w.TokenEmbedding {
		o.Classifier = c(w.Classifier)
	}
	for _, L := range w.Layers {
		o.Layers = append(o.Layers, Layer{AttnNorm: c(L.AttnNorm), WQKV: c(L.WQKV), WO: c(L.WO), FFNNorm: c(L.FFNNorm),
			W1: c(L.W1), W2: c(L.W2), W3: c(L.W3)})
	}
	return out
}

// quantizedCopy is an independent F32 copy of m quantized to Q8_0 with
// group size gs, as --weights q8_0 does at load.
func quantizedCopy(t testing.TB, m *Model, gs int) *Model {
	t.Helper()
	q := cloneModel(t, m)
	if err := QuantizeQ8_0(q, gs); err != nil {
		t.Fatal(err)
	}
	return q
}
