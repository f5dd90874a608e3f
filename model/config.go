package model

import (
	"fmt"

	"github.com/stride-lm/stride/tensor"
)

// Config is the architecture of a Llama-family model, with llama2.c's
// names.
type Config struct {
	Dim       int // transformer width (embedding size)
	HiddenDim int // SwiGLU inner width
	NLayers   int
	NHeads    int // query heads
	NKVHeads  int // key/value heads; NHeads % NKVHeads == 0 (GQA; == NHeads is MHA, 1 is MQA)
	VocabSize int
	SeqLen    int // maximum positions

	RopeTheta float64 // RoPE base, 10000 in llama2.c
	NormEps   float64 // RMSNorm epsilon, 1e-5 in llama2.c

	// SharedClassifier is true when the classifier reuses the token
	// embedding (a positive vocab_size in a legacy header).
	SharedClassifier bool

	WeightDType tensor.DType // storage dtype of the weight matrices
	KVDType     tensor.DType // storage dtype of the KV cache
}

// maxDim bounds every size a config or file may claim, so a corrupt header
// is rejected before anything is allocated.
const maxDim = 1 << 20

// HeadDim is the width of one head: Dim / NHeads.
func (c Config) HeadDim() int { return c.Dim / c.NHeads }

// KVDim is the width of K (or V) for one token: NKVHeads · HeadDim.
func (c Config) KVDim() int { return c.NKVHeads * c.HeadDim() }

// QKVRows is the row count of the fused QKV weight:
// (NHeads + 2·NKVHeads) · HeadDim.
func (c Config) QKVRows() int { return (c.NHeads + 2*c.NKVHeads) * c.HeadDim() }

// Group is the number of query heads sharing one KV head.
func (c Config) Group() int { return c.NHeads / c.NKVHeads }

// Validate checks the rules the forward pass relies on.
func (c Config) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"dim", c.Dim}, {"hidden_dim", c.HiddenDim}, {"n_layers", c.NLayers}, {"n_heads", c.NHeads},
		{"n_kv_heads", c.NKVHeads}, {"vocab_size", c.VocabSize}, {"seq_len", c.SeqLen}} {
		if f.v <= 0 {
			return fmt.Errorf("config: %s must be > 0 (got %d)", f.name, f.v)
		}
		if f.v > maxDim {
			return fmt.Errorf("config: %s = %d is beyond the supported maximum %d", f.name, f.v, maxDim)
		}
	}
	if c.Dim%c.NHeads != 0 {
		return fmt.Errorf("config: dim (%d) must be divisible by n_heads (%d)", c.Dim, c.NHeads)
	}
	if c.NHeads%c.NKVHeads != 0 {
		return fmt.Errorf("config: n_heads (%d) must be divisible by n_kv_heads (%d)", c.NHeads, c.NKVHeads)
	}
	if c.HeadDim()%2 != 0 {
		return fmt.Errorf("config: head_dim (%d) must be even for RoPE", c.HeadDim())
	}
	if c.RopeTheta <= 0 {
		return fmt.Errorf("config: rope_theta must be > 0 (got %g)", c.RopeTheta)
	}
	if c.NormEps <= 0 {
		return fmt.Errorf("config: norm_eps must be > 0 (got %g)", c.NormEps)
	}
	if c.WeightDType > tensor.BF16 || c.KVDType > tensor.BF16 {
		return fmt.Errorf("config: unknown dtype")
	}
	return nil
}

// Params returns the number of parameters (the classifier counted once
// when shared).
func (c Config) Params() int64 {
	d, h, l, v := int64(c.Dim), int64(c.HiddenDim), int64(c.NLayers), int64(c.VocabSize)
	per := 2*d + int64(c.QKVRows())*d + d*int64(c.NHeads*c.HeadDim()) + 3*d*h
	n := v*d + l*per + d
	if !c.SharedClassifier {
		n += v * d
	}
	return n
}
