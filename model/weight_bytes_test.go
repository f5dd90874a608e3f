package model

import (
	"testing"

	"github.com/stride-lm/stride/attention"
	"github.com/stride-lm/stride/tensor"
)

// TestWeightBytesCountsEveryMatrix checks WeightBytes against the bytes the
// config implies (float32 weights: every projection, the classifier, the
// norms), for the fused layout and for q, k and v held apart, which a
// mixed-type GGUF produces and which WeightBytes once counted as zero.
func TestWeightBytesCountsEveryMatrix(t *testing.T) {
	c := Config{Dim: 32, HiddenDim: 48, NLayers: 2, NHeads: 4, NKVHeads: 2, VocabSize: 40, SeqLen: 32,
		RopeTheta: 10000, NormEps: 1e-5}
	perLayer := c.QKVRows()*c.Dim + c.Dim*c.NHeads*c.HeadDim() + 3*c.HiddenDim*c.Dim + 2*c.Dim
	want := int64(4 * (c.NLayers*perLayer + c.VocabSize*c.Dim + c.Dim))

	m, err := Synthesize(c, 7)
	if err != nil {
		t.Fatal(err)
	}
	if got := weightBytesOf(t, m); got != want {
		t.Fatalf("fused WQKV: WeightBytes = %d, want %d", got, want)
	}
	qDim, kvDim := c.NHeads*c.HeadDim(), c.KVDim()
	for l := range m.Weights.Layers {
		lw := &m.Weights.Layers[l]
		rows := func(start, n int) *tensor.Tensor {
			w, err := lw.WQKV.Narrow(0, start, n)
			if err != nil {
				t.Fatal(err)
			}
			w, err = w.Contiguous()
			if err != nil {
				t.Fatal(err)
			}
			return w
		}
		lw.WQ, lw.WK, lw.WV = rows(0, qDim), rows(qDim, kvDim), rows(qDim+kvDim, kvDim)
		lw.WQKV = nil
	}
	if got := weightBytesOf(t, m); got != want {
		t.Fatalf("WQ, WK, WV apart: WeightBytes = %d, want %d", got, want)
	}
}

func weightBytesOf(t *testing.T, m *Model) int64 {
	t.Helper()
	f, err := NewForward(m, ForwardOptions{Projection: FusedQKV, Path: attention.NewFused(attention.Options{Threads: 1}), Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return f.WeightBytes()
}
