package model

import (
	"fmt"
	"math"

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

	// RopeStyle is the pair layout of the rotation: RopeNorm (consecutive
	// pairs, llama2.c and GGUF llama) or RopeNeox (halves, GGUF qwen2).
	RopeStyle RopeStyle
	// RopeDim is the number of dimensions of each head that RoPE rotates
	// (GGUF rope.dimension_count); 0 means all of them (HeadDim).
	RopeDim int
	// RopeScale is the linear position scaling factor (GGUF
	// rope.scaling.factor with rope.scaling.type "linear"): positions are
	// divided by it. 0 or 1 means no scaling. Llama 3's per-frequency
	// scaling is Weights.RopeFreqs instead.
	RopeScale float64
	// QKVBias is true when the q, k and v projections add a bias
	// (Qwen2: blk.N.attn_q/k/v.bias), held in Layer.BQKV.
	QKVBias bool

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

// RopeDims is the rotated width of a head: RopeDim, or HeadDim when 0.
func (c Config) RopeDims() int {
	if c.RopeDim == 0 {
		return c.HeadDim()
	}
	return c.RopeDim
}

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
	if c.RopeStyle != RopeNorm && c.RopeStyle != RopeNeox {
		return fmt.Errorf("config: unknown rope style %d", int(c.RopeStyle))
	}
	if r := c.RopeDims(); r < 0 || r > c.HeadDim() || r%2 != 0 {
		return fmt.Errorf("config: rope dimension count %d must be even and at most head_dim (%d)", r, c.HeadDim())
	}
	if c.RopeScale < 0 || math.IsNaN(c.RopeScale) || math.IsInf(c.RopeScale, 0) {
		return fmt.Errorf("config: rope scaling factor must be finite and >= 0 (got %g)", c.RopeScale)
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
	if c.QKVBias {
		per += int64(c.QKVRows())
	}
	n := v*d + l*per + d
	if !c.SharedClassifier {
		n += v * d
	}
	return n
}
