package model

import (
	"errors"
	"fmt"
	"math"

	"github.com/stride-lm/stride/tensor"
	"github.com/stride-lm/stride/tensor/kernels"
)

// Layer holds one transformer block's weights. Matrices are row-major
// (out, in): out[i] = Σ_j W[i, j]·x[j], as in llama2.c.
type Layer struct {
	AttnNorm *tensor.Tensor // (dim)
	// WQKV is the fused QKV projection, ((n_heads + 2·n_kv_heads)·head_dim, dim):
	// the rows of wq, then of wk, then of wv. One matmul yields a token's
	// [q | k | v]; heads are then cut out of it by views.
	WQKV *tensor.Tensor
	// WQ, WK, WV are the q, k and v projections, (n_heads·head_dim, dim)
	// and (n_kv_heads·head_dim, dim), held apart instead of WQKV (which is
	// then nil) when the file stores them in different types, which no
	// single matrix can hold: a Q4_K_M GGUF keeps some layers' attn_v in
	// Q6_K. nil when WQKV is set.
	WQ, WK, WV *tensor.Tensor
	// BQKV is the fused bias of WQKV, ((n_heads + 2·n_kv_heads)·head_dim):
	// the q, k and v biases of architectures that have them (Qwen2), nil
	// for Llama.
	BQKV    *tensor.Tensor
	WO      *tensor.Tensor // (dim, n_heads·head_dim)
	FFNNorm *tensor.Tensor // (dim)
	W1      *tensor.Tensor // (hidden_dim, dim)  gate
	W2      *tensor.Tensor // (dim, hidden_dim)  down
	W3      *tensor.Tensor // (hidden_dim, dim)  up
}

// Weights holds every tensor of a model.
type Weights struct {
	TokenEmbedding *tensor.Tensor // (vocab_size, dim)
	Layers         []Layer
	FinalNorm      *tensor.Tensor // (dim)
	Classifier     *tensor.Tensor // (vocab_size, dim); TokenEmbedding itself when shared
	// RopeFreqs is (head_dim/2) per-pair frequency factors (llama.cpp's
	// rope_freqs, how GGUF stores Llama 3's RoPE scaling), nil when the
	// checkpoint has none.
	RopeFreqs *tensor.Tensor
}

// Model is a configuration with its weights.
type Model struct {
	Config  Config
	Weights Weights
	// Quantized maps a weight tensor to its Q8_0 form when the model
	// runs with Q8_0 weights: the kernels read the int8 values and group
	// scales instead of the tensor (which then only describes the shape).
	Quantized map[*tensor.Tensor]*kernels.Matrix

	// source is the mapped checkpoint FromSource built the weights from
	// (they view its mapping); nil when the weights are Go memory (read or
	// synthesized). Close closes it.
	source Source
	// mapped is the size of source's mapping (0: the weights are Go
	// memory) and copied the bytes FromSource copied out of it.
	mapped, copied int64
}

// Validate verifies that every tensor of m is present, has data (or a
// quantized form in m.Quantized) and has the shape m.Config implies (1-D
// norms, 2-D (out, in) matrices). Writers call it before writing a byte.
func (m *Model) Validate() error {
	if m == nil {
		return errors.New("nil model")
	}
	c := m.Config
	if err := c.Validate(); err != nil {
		return err
	}
	w := m.Weights
	check := func(t *tensor.Tensor, name string, shape ...int) error {
		if t == nil {
			return fmt.Errorf("%s is missing", name)
		}
		got := t.Shape()
		if !sameShape(got, shape) {
			return fmt.Errorf("%s has shape %s, want %s", name, tensor.FormatInts(got), tensor.FormatInts(shape))
		}
		if q, found := m.Quantized[t]; found {
			if err := q.Validate(); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if len(shape) != 2 || q.Rows != shape[0] || q.Cols != shape[1] {
				return fmt.Errorf("%s is quantized as (%d, %d), want %s", name, q.Rows, q.Cols, tensor.FormatInts(shape))
			}
			return nil
		}
		if t.IsMeta() {
			return fmt.Errorf("%s is a meta tensor (no data)", name)
		}
		return nil
	}
	if len(w.Layers) != c.NLayers {
		return fmt.Errorf("model has %d layers, config says %d", len(w.Layers), c.NLayers)
	}
	errs := []error{
		check(w.TokenEmbedding, "token embedding", c.VocabSize, c.Dim),
		check(w.FinalNorm, "final norm", c.Dim),
		check(w.Classifier, "classifier", c.VocabSize, c.Dim),
	}
	for l, L := range w.Layers {
		p := fmt.Sprintf("layer %d ", l)
		errs = append(errs,
			check(L.AttnNorm, p+"attention norm", c.Dim),
			checkQKV(check, L, p, c),
			check(L.WO, p+"WO", c.Dim, c.NHeads*c.HeadDim()),
			check(L.FFNNorm, p+"FFN norm", c.Dim),
			check(L.W1, p+"W1", c.HiddenDim, c.Dim),
			check(L.W2, p+"W2", c.Dim, c.HiddenDim),
			check(L.W3, p+"W3", c.HiddenDim, c.Dim))
		if L.BQKV != nil {
			errs = append(errs, check(L.BQKV, p+"BQKV", c.QKVRows()))
		}
	}
	if w.RopeFreqs != nil {
		errs = append(errs, check(w.RopeFreqs, "RoPE frequency factors", c.RopeDims()/2))
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// checkQKV checks the fused WQKV, or the three separate projections when
// it is nil.
func checkQKV(check func(*tensor.Tensor, string, ...int) error, L Layer, p string, c Config) error {
	if L.WQKV != nil || (L.WQ == nil && L.WK == nil && L.WV == nil) {
		return check(L.WQKV, p+"WQKV", c.QKVRows(), c.Dim)
	}
	return errors.Join(check(L.WQ, p+"WQ", c.NHeads*c.HeadDim(), c.Dim),
		check(L.WK, p+"WK", c.KVDim(), c.Dim), check(L.WV, p+"WV", c.KVDim(), c.Dim))
}

// QKVPart returns the tensor holding the rows of projection part (0 = q,
// 1 = k, 2 = v) of the layer and where they start in it: a row block of
// WQKV, or the whole of WQ, WK or WV when the layer keeps them apart.
func (L *Layer) QKVPart(c Config, part int) (t *tensor.Tensor, row0, rows int) {
	q, kv := c.NHeads*c.HeadDim(), c.KVDim()
	if L.WQKV == nil {
		return [3]*tensor.Tensor{L.WQ, L.WK, L.WV}[part], 0, [3]int{q, kv, kv}[part]
	}
	return L.WQKV, [3]int{0, q, q + kv}[part], [3]int{q, kv, kv}[part]
}

// describe is c's shape in one line, for errors.
func describe(c Config) string {
	shared := "unshared"
	if c.SharedClassifier {
		shared = "shared"
	}
	return fmt.Sprintf("dim %d, hidden_dim %d, n_layers %d, n_heads %d, n_kv_heads %d, vocab_size %d, seq_len %d, %s classifier",
		c.Dim, c.HiddenDim, c.NLayers, c.NHeads, c.NKVHeads, c.VocabSize, c.SeqLen, shared)
}

// HumanBytes formats a byte count with a binary unit ("1.5 GiB"), for
// errors that compare sizes.
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	f, u := float64(n), 0
	for f >= unit && u < 6 {
		f /= unit
		u++
	}
	return fmt.Sprintf("%.1f %ciB", f, "KMGTPE"[u-1])
}

// float32Bytes is the size of c's parameters as float32, computed in
// int64 with overflow checks: Validate bounds every field by 2^20, so one
// matrix is at most 2^40 floats, but a sum over layers could still wrap.
func float32Bytes(c Config) (int64, error) {
	mul := func(a, b int64) int64 {
		if a < 0 || b < 0 || (a != 0 && b > math.MaxInt64/a) {
			return -1
		}
		return a * b
	}
	add := func(a, b int64) int64 {
		if a < 0 || b < 0 || a > math.MaxInt64-b {
			return -1
		}
		return a + b
	}
	d, h, v := int64(c.Dim), int64(c.HiddenDim), int64(c.VocabSize)
	q, qkv := int64(c.NHeads*c.HeadDim()), int64(c.QKVRows())
	per := add(add(add(2*d, mul(qkv, d)), mul(d, q)), mul(3*d, h))
	n := add(add(mul(v, d), mul(int64(c.NLayers), per)), d)
	if !c.SharedClassifier {
		n = add(n, mul(v, d))
	}
	if n = mul(n, 4); n < 0 {
		return 0, errors.New("the sizes it declares overflow a 64-bit byte count")
	}
	return n, nil
}

// allocWeights allocates every tensor of a model with config c: matrices in
// c.WeightDType, norms in F32. The classifier is the embedding itself when
// shared.
func allocWeights(led *tensor.Ledger, c Config) (*Model, error) {
	dt := c.WeightDType
	var firstErr error
	mk := func(dt tensor.DType, shape ...int) *tensor.Tensor {
		if firstErr != nil {
			return nil
		}
		t, err := tensor.Empty(led, dt, shape...)
		if err != nil {
			firstErr = err
		}
		return t
	}
	hs := c.HeadDim()
	m := &Model{Config: c}
	w := &m.Weights
	w.TokenEmbedding = mk(dt, c.VocabSize, c.Dim)
	w.Layers = make([]Layer, c.NLayers)
	for l := range w.Layers {
		w.Layers[l] = Layer{
			AttnNorm: mk(tensor.F32, c.Dim),
			WQKV:     mk(dt, c.QKVRows(), c.Dim),
			WO:       mk(dt, c.Dim, c.NHeads*hs),
			FFNNorm:  mk(tensor.F32, c.Dim),
			W1:       mk(dt, c.HiddenDim, c.Dim),
			W2:       mk(dt, c.Dim, c.HiddenDim),
			W3:       mk(dt, c.HiddenDim, c.Dim),
		}
	}
	w.FinalNorm = mk(tensor.F32, c.Dim)
	if c.SharedClassifier {
		w.Classifier = w.TokenEmbedding
	} else {
		w.Classifier = mk(dt, c.VocabSize, c.Dim)
	}
	if firstErr != nil {
		return nil, firstErr
	}
	return m, nil
}
