package model

import (
	"fmt"
	"math"

	"github.com/stride-lm/stride/tensor"
)

// This file is rotary position embedding (RoPE) in the two layouts GGUF
// models use, with their frequencies. A head's rotated dimensions are
// split into pairs; pair j turns by the angle pos·freq_j, where
//
//	freq_j = scale / (factor_j · θ^(2j/n_rot))
//
// θ is the frequency base (rope.freq_base: 10000 for Llama 2, 500000 for
// Llama 3, 1e6 for Qwen2), n_rot the rotated width (rope.dimension_count,
// usually head_dim), scale the linear position scaling (1/rope.scaling.factor
// for type "linear", else 1) and factor_j the per-pair frequency factor
// (1, or the rope_freqs tensor through which llama.cpp stores Llama 3's
// scaling). Dimensions beyond n_rot pass through unrotated.

// RopeStyle is which dimensions of a head form a rotated pair.
type RopeStyle int

const (
	// RopeNorm pairs consecutive dimensions (2j, 2j+1): llama2.c and
	// ggml's LLAMA_ROPE_TYPE_NORM (architecture llama). It is the zero
	// value, so every llama2.c checkpoint gets it.
	RopeNorm RopeStyle = iota
	// RopeNeox pairs dimension j with j + n_rot/2 (GPT-NeoX's "rotate
	// half"): ggml's LLAMA_ROPE_TYPE_NEOX (architecture qwen2, and every
	// Hugging Face checkpoint before llama.cpp's converter permutes q, k).
	RopeNeox
)

// String names the style as llama.cpp's logs do.
func (s RopeStyle) String() string {
	switch s {
	case RopeNorm:
		return "norm"
	case RopeNeox:
		return "neox"
	}
	return fmt.Sprintf("RopeStyle(%d)", int(s))
}

// rope is a model's rotation: its pair layout and, per position and pair,
// cos and sin of the angle. The tables cover only the positions used so
// far (reserve, grow): a header may claim a seq_len of 2^20 while a run
// uses a few hundred positions. Every entry is computed the same way
// whatever the table's size, so the values do not depend on how it grew.
type rope struct {
	style    RopeStyle
	headDim  int
	half     int       // pairs per head: n_rot/2
	freqs    []float32 // [half] angle per position of each pair
	maxPos   int       // seq_len: the tables never grow beyond it
	n        int       // positions the tables cover now
	cos, sin []float32 // [n, half]
}

// newRope builds the rotation of c. factors, when not nil, are the
// per-pair frequency factors (Weights.RopeFreqs, n_rot/2 of them).
//
// The frequencies are computed as run.c computes them, in float32
// (freq = 1/powf(θ, 2j/n_rot), angle = pos·freq, cosf, sinf), so a
// llama2.c checkpoint and its GGUF conversion rotate bit for bit alike.
// ggml instead multiplies θ^(-2/n_rot) up pair by pair; the two differ in
// the last bits of the angles, far below what perplexity can see.
func newRope(c Config, factors []float32) (*rope, error) {
	hs := c.HeadDim()
	nrot := c.RopeDims()
	if nrot <= 0 || nrot > hs || nrot%2 != 0 {
		return nil, fmt.Errorf("config: rope dimension count %d must be even and in (0, head_dim=%d]", nrot, hs)
	}
	half := nrot / 2
	if factors != nil && len(factors) != half {
		return nil, fmt.Errorf("model: rope_freqs has %d factors, want n_rot/2 = %d", len(factors), half)
	}
	r := &rope{style: c.RopeStyle, headDim: hs, half: half, freqs: make([]float32, half), maxPos: c.SeqLen}
	scale := float32(1)
	if c.RopeScale > 0 && c.RopeScale != 1 {
		scale = float32(1 / c.RopeScale)
	}
	for j := 0; j < half; j++ {
		freq := float32(1.0 / float32(math.Pow(c.RopeTheta, float64(float32(2*j)/float32(nrot)))))
		if factors != nil {
			if !(factors[j] > 0) || math.IsInf(float64(factors[j]), 0) {
				return nil, fmt.Errorf("model: rope_freqs factor %d is %g, must be positive and finite", j, factors[j])
			}
			freq /= factors[j]
		}
		r.freqs[j] = freq * scale
	}
	return r, nil
}

// reserve makes the tables cover positions 0 … n−1 (capped at seq_len),
// so that steps over them allocate nothing.
func (r *rope) reserve(n int) {
	n = min(n, r.maxPos)
	if n > r.n {
		r.tables(n)
	}
}

// grow makes the tables cover a step's positions, doubling them so that
// a run that never reserved grows them O(log n) times.
func (r *rope) grow(positions []int) {
	top := 0
	for _, p := range positions {
		top = max(top, p+1)
	}
	if top > r.n {
		r.reserve(max(top, 2*r.n))
	}
}

// tables fills cos and sin for positions [0, n).
func (r *rope) tables(n int) {
	r.n = n
	r.cos = make([]float32, n*r.half)
	r.sin = make([]float32, n*r.half)
	for j, freq := range r.freqs {
		for pos := 0; pos < n; pos++ {
			val := float32(pos) * freq
			r.cos[pos*r.half+j] = float32(math.Cos(float64(val)))
			r.sin[pos*r.half+j] = float32(math.Sin(float64(val)))
		}
	}
}

// apply rotates, for every token row t and head h of x ([T, heads, D],
// any strides, F32), each pair (a, b) of dimensions by positions[t]·freq_j:
//
//	a' = a·cos − b·sin
//	b' = a·sin + b·cos
//
// with (a, b) = (x[2j], x[2j+1]) for RopeNorm and (x[j], x[j+n_rot/2])
// for RopeNeox, in place through the view's strides. The tables must cover
// the positions (grow).
func (r *rope) apply(x *tensor.Tensor, positions []int) {
	heads, _ := x.Size(1)
	st0, _ := x.Stride(0)
	st1, _ := x.Stride(1)
	st2, _ := x.Stride(2)
	half := r.half
	// Dimension offsets of a pair's two members: (2j, 2j+1) or (j, j+half).
	step, other := 2*st2, st2
	if r.style == RopeNeox {
		step, other = st2, half*st2
	}
	data := x.Storage().Float32s()
	for t, pos := range positions {
		cs := r.cos[pos*half : (pos+1)*half]
		sn := r.sin[pos*half : (pos+1)*half]
		for h := 0; h < heads; h++ {
			base := x.Offset() + t*st0 + h*st1
			for j := 0; j < half; j++ {
				i0 := base + j*step
				i1 := i0 + other
				v0, v1 := data[i0], data[i1]
				data[i0] = v0*cs[j] - v1*sn[j]
				data[i1] = v0*sn[j] + v1*cs[j]
			}
		}
	}
}

// Llama3FreqFactors returns the per-pair frequency factors of Llama 3.1's
// RoPE scaling ("rope_type": "llama3" in a Hugging Face config), as
// llama.cpp's converter computes the rope_freqs tensor: pairs whose
// wavelength 2π/freq_j is shorter than origCtx/highFreqFactor keep their
// frequency (factor 1), those longer than origCtx/lowFreqFactor are slowed
// by factor, and those between are interpolated smoothly.
func Llama3FreqFactors(theta float64, nrot int, factor, lowFreqFactor, highFreqFactor float64, origCtx int) []float32 {
	lowWavelen := float64(origCtx) / lowFreqFactor
	highWavelen := float64(origCtx) / highFreqFactor
	out := make([]float32, nrot/2)
	for j := range out {
		// The converter computes the base frequencies in float32 (torch).
		freq := float64(float32(1 / math.Pow(theta, float64(2*j)/float64(nrot))))
		wavelen := 2 * math.Pi / freq
		switch {
		case wavelen < highWavelen:
			out[j] = 1
		case wavelen > lowWavelen:
			out[j] = float32(factor)
		default:
			smooth := (float64(origCtx)/wavelen - lowFreqFactor) / (highFreqFactor - lowFreqFactor)
			out[j] = float32(1 / ((1-smooth)/factor + smooth))
		}
	}
	return out
}
