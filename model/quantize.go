package model

import (
	"fmt"

	"github.com/stride-lm/stride/tensor"
	"github.com/stride-lm/stride/tensor/kernels"
)

// QuantizeQ8_0 quantizes every weight matrix of m (embedding, WQKV, WO,
// W1, W2, W3 and the classifier; norms stay float32) to Q8_0: int8 values
// with one float32 scale per groupSize consecutive weights, scale =
// max|w|/127, as llama2.c's version-2 export does. groupSize 0 picks the
// largest of 64, 32, 16, … that divides every matrix's width (as
// Q8GroupSize does for a version-2 export), so groups never straddle rows.
// The kernels then read about a quarter of the float32 bytes per token.
func QuantizeQ8_0(m *Model, groupSize int) error {
	c := m.Config
	if groupSize == 0 {
		groupSize = Q8GroupSize(c, defaultGroupSize)
	}
	if m.Quantized == nil {
		m.Quantized = map[*tensor.Tensor]*kernels.Matrix{}
	}
	quant := func(name string, t *tensor.Tensor) error {
		if _, done := m.Quantized[t]; done {
			return nil
		}
		sh := t.Shape()
		if len(sh) != 2 {
			return fmt.Errorf("quantize %s: want a matrix, got shape %v", name, sh)
		}
		data, err := t.Float32s()
		if err != nil {
			return fmt.Errorf("quantize %s: %w", name, err)
		}
		q, err := kernels.QuantizeQ8_0(sh[0], sh[1], data, groupSize)
		if err != nil {
			return fmt.Errorf("quantize %s: %w", name, err)
		}
		m.Quantized[t] = q
		return nil
	}
	w := &m.Weights
	if err := quant("token_embedding", w.TokenEmbedding); err != nil {
		return err
	}
	if err := quant("classifier", w.Classifier); err != nil {
		return err
	}
	for l := range w.Layers {
		lw := &w.Layers[l]
		for _, p := range []struct {
			name string
			t    *tensor.Tensor
		}{{"wqkv", lw.WQKV}, {"wq", lw.WQ}, {"wk", lw.WK}, {"wv", lw.WV}, {"wo", lw.WO}, {"w1", lw.W1}, {"w2", lw.W2}, {"w3", lw.W3}} {
			if p.t == nil {
				continue // WQKV, or WQ/WK/WV, whichever the layer does not use
			}
			if err := quant(fmt.Sprintf("layer %d %s", l, p.name), p.t); err != nil {
				return err
			}
		}
	}
	return nil
}

// defaultGroupSize is llama2.c export.py's default Q8_0 group size.
const defaultGroupSize = 64

// Q8GroupSize returns the Q8_0 group size to use for c: want (64 when
// want ≤ 0) halved until it divides dim and hidden_dim, which is
// export.py's backoff extended to hidden_dim (export.py checks only dim,
// which would let w2's groups straddle rows when hidden_dim is not a
// multiple). It is at least 1. stories260K (dim 64, hidden_dim 172) gets 4.
func Q8GroupSize(c Config, want int) int {
	if want <= 0 {
		want = defaultGroupSize
	}
	for want > 1 && (c.Dim%want != 0 || c.HiddenDim%want != 0) {
		want /= 2
	}
	return want
}
