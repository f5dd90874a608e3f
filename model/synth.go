package model

import (
	"fmt"
	"math"

	"github.com/stride-lm/stride/tensor"
)

// maxSynthBytes bounds the weights Synthesize will allocate (16 GiB), so a
// typo in a config file fails with a message instead of an OOM kill.
const maxSynthBytes = 16 << 30

// Synthesize builds a deterministic synthetic model of shape cfg from seed,
// with no file: the embedded default model and the benchmark shapes
// (stories15M: dim 288, hidden 768, 6 layers, 6 heads, vocab 32000,
// seq_len 256; stories110M: dim 768, hidden 2048, 12 layers, 12 heads,
// vocab 32000, seq_len 1024) use it. The allocations are not accounted; see
// SynthesizeIn.
//
// Matrices (out, in) hold approximately normal values with standard
// deviation 1/√in, so a matmul keeps activations at unit scale and the
// logits of the (shared or own) classifier have a spread of about 1: the
// sampled text is random but not uniform. Norm gains are 1 + U(-0.05, 0.05).
// Matrices are stored in cfg.WeightDType (rounded once from float32), norms
// in float32, as FromSource converts them.
//
// The same (cfg, seed) gives bit-identical weights on every machine: the
// values come from integer hashing (splitmix64) and a single float64
// multiply per element, never from math library functions whose last bit
// could differ between platforms.
func Synthesize(cfg Config, seed uint64) (*Model, error) {
	return SynthesizeIn(nil, cfg, seed)
}

// SynthesizeIn is Synthesize with the weights allocated in led.
func SynthesizeIn(led *tensor.Ledger, cfg Config, seed uint64) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("synthesize: %w", err)
	}
	// Bound the bytes with overflow-safe arithmetic before allocating.
	// The float32 bytes; half-precision weights need at most that much.
	need, err := float32Bytes(cfg)
	if err != nil {
		return nil, fmt.Errorf("synthesize: %w", err)
	}
	if need > maxSynthBytes {
		return nil, fmt.Errorf("synthesize: %s needs about %s of weights, beyond the %s limit",
			describe(cfg), HumanBytes(need), HumanBytes(maxSynthBytes))
	}
	m, err := allocWeights(led, cfg)
	if err != nil {
		return nil, fmt.Errorf("synthesize: %w", err)
	}
	// Each tensor gets its own stream, keyed by its position in this list,
	// so changing one shape does not shift the values of the others.
	stream := uint64(0)
	next := func() uint64 { stream++; return splitmix(seed ^ splitmix(stream)) }
	w := &m.Weights
	fillMatrix(w.TokenEmbedding, next())
	for l := range w.Layers {
		L := &w.Layers[l]
		fillNorm(L.AttnNorm, next())
		fillMatrix(L.WQKV, next())
		fillMatrix(L.WO, next())
		fillNorm(L.FFNNorm, next())
		fillMatrix(L.W1, next())
		fillMatrix(L.W2, next())
		fillMatrix(L.W3, next())
	}
	fillNorm(w.FinalNorm, next())
	if !cfg.SharedClassifier {
		fillMatrix(w.Classifier, next())
	}
	return m, nil
}

// splitmix is one step of SplitMix64's output function: a bijective
// 64-bit mixer, so distinct inputs give distinct, well-spread outputs.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// irwinHallSigma is the standard deviation of the sum of four independent
// uniform integers in [0, 65535]: √(4·(65536²−1)/12).
var irwinHallSigma = math.Sqrt(4 * (65536.0*65536.0 - 1) / 12)

// fillMatrix fills a contiguous (out, in) tensor with an Irwin–Hall(4)
// approximation of N(0, 1/in): each element splits one 64-bit hash into
// four 16-bit uniforms and sums them in integers, so the only float
// operation is the final scaling (math.Sqrt is exactly rounded by IEEE 754).
func fillMatrix(t *tensor.Tensor, key uint64) {
	shape := t.Shape()
	scale := 1 / math.Sqrt(float64(shape[len(shape)-1])) / irwinHallSigma
	st := t.Storage()
	for i := 0; i < st.Len(); i++ {
		h := splitmix(key + uint64(i)*0x9e3779b97f4a7c15)
		s := int64(h&0xffff) + int64(h>>16&0xffff) + int64(h>>32&0xffff) + int64(h>>48)
		st.Store(i, float32(float64(s-2*65535)*scale))
	}
}

// fillNorm fills a gain vector with 1 + U(-0.05, 0.05): close to the
// identity, but not exactly, so a test can tell the gains apart.
func fillNorm(t *tensor.Tensor, key uint64) {
	st := t.Storage()
	for i := 0; i < st.Len(); i++ {
		h := splitmix(key + uint64(i)*0x9e3779b97f4a7c15)
		u := float64(h>>11) / (1 << 53) // exact: a 53-bit integer over a power of two
		st.Store(i, float32(1+float64(0.1*u)-0.05))
	}
}
