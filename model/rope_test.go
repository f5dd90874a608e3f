package model

import (
	"math"
	"math/rand"
	"testing"

	"github.com/stride-lm/stride/attention"
	"github.com/stride-lm/stride/tensor"
)

// ropeRef rotates one head (float64) as the RoPE definitions say: pair j
// of the first nrot dimensions, (2j, 2j+1) for NORM and (j, j+nrot/2) for
// NEOX, turns by pos·scale/(factor_j·θ^(2j/nrot)).
func ropeRef(x []float64, pos int, style RopeStyle, nrot int, theta, scale float64, factors []float32) []float64 {
	out := append([]float64(nil), x...)
	half := nrot / 2
	for j := 0; j < half; j++ {
		f := 1.0
		if factors != nil {
			f = float64(factors[j])
		}
		ang := float64(pos) * scale / (f * math.Pow(theta, float64(2*j)/float64(nrot)))
		a, b := 2*j, 2*j+1
		if style == RopeNeox {
			a, b = j, j+half
		}
		out[a] = x[a]*math.Cos(ang) - x[b]*math.Sin(ang)
		out[b] = x[a]*math.Sin(ang) + x[b]*math.Cos(ang)
	}
	return out
}

func TestRopeAgainstFloat64(t *testing.T) {
	const heads, hs = 3, 16
	positions := []int{0, 1, 7, 100, 511}
	llama3 := Llama3FreqFactors(500000, hs, 8, 1, 4, 64)
	cases := []struct {
		name    string
		style   RopeStyle
		theta   float64
		nrot    int
		scale   float64 // RopeScale (divides positions)
		factors []float32
	}{
		{"norm", RopeNorm, 10000, 0, 0, nil},
		{"neox", RopeNeox, 1e6, 0, 0, nil},
		{"norm partial", RopeNorm, 10000, 8, 0, nil},
		{"neox partial", RopeNeox, 10000, 8, 0, nil},
		{"norm linear scaling", RopeNorm, 10000, 0, 4, nil},
		{"norm llama3 factors", RopeNorm, 500000, 0, 0, llama3},
		{"neox llama3 factors", RopeNeox, 500000, 0, 0, llama3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{Dim: heads * hs, HiddenDim: 8, NLayers: 1, NHeads: heads, NKVHeads: heads, VocabSize: 8,
				SeqLen: 512, RopeTheta: tc.theta, NormEps: 1e-5, RopeStyle: tc.style, RopeDim: tc.nrot, RopeScale: tc.scale}
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			r, err := newRope(c, tc.factors)
			if err != nil {
				t.Fatal(err)
			}
			// x is a strided view, as q is inside the fused QKV buffer:
			// tokens 2·heads·hs apart, the second half unused.
			T := len(positions)
			rng := rand.New(rand.NewSource(1))
			buf := make([]float32, T*2*heads*hs)
			for i := range buf {
				buf[i] = float32(rng.NormFloat64())
			}
			orig := append([]float32(nil), buf...)
			full := tensor.Must(tensor.WrapFloat32(nil, buf, T, 2*heads*hs))
			nar := tensor.Must(full.Narrow(1, 0, heads*hs))
			x := tensor.Must(nar.View(T, heads, hs))
			r.apply(x, positions)
			scale := 1.0
			if tc.scale > 0 {
				scale = 1 / tc.scale
			}
			nrot := c.RopeDims()
			var worst float64
			for ti, pos := range positions {
				for h := 0; h < heads; h++ {
					base := ti*2*heads*hs + h*hs
					in := make([]float64, hs)
					for d := range in {
						in[d] = float64(orig[base+d])
					}
					want := ropeRef(in, pos, tc.style, nrot, tc.theta, scale, tc.factors)
					for d := range want {
						got := float64(buf[base+d])
						if d >= nrot && got != in[d] {
							t.Fatalf("pos %d head %d dim %d beyond n_rot changed", pos, h, d)
						}
						worst = math.Max(worst, math.Abs(got-want[d]))
					}
				}
				// The unused half of each token row is untouched.
				for i := ti*2*heads*hs + heads*hs; i < (ti+1)*2*heads*hs; i++ {
					if buf[i] != orig[i] {
						t.Fatalf("apply wrote outside the view at %d", i)
					}
				}
			}
			// float32 angles at pos ≤ 511: |Δangle| ≲ 511·2⁻²⁴·4.
			if worst > 2e-4 {
				t.Errorf("max |stride − float64| = %g", worst)
			}
		})
	}
}

// NORM and NEOX are the same rotation on different pairs: permuting a
// head's dimensions so that (j, j+half) become (2j, 2j+1) turns one into
// the other exactly (that permutation is what llama.cpp's converter
// applies to Hugging Face q and k weights).
func TestRopeNeoxIsPermutedNorm(t *testing.T) {
	const hs = 8
	c := Config{Dim: hs, HiddenDim: 8, NLayers: 1, NHeads: 1, NKVHeads: 1, VocabSize: 8, SeqLen: 64, RopeTheta: 10000, NormEps: 1e-5}
	norm, _ := newRope(c, nil)
	c.RopeStyle = RopeNeox
	neox, _ := newRope(c, nil)
	x := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	perm := make([]float32, hs) // perm[2j] = x[j], perm[2j+1] = x[j+half]
	for j := 0; j < hs/2; j++ {
		perm[2*j], perm[2*j+1] = x[j], x[j+hs/2]
	}
	a := tensor.Must(tensor.WrapFloat32(nil, x, 1, 1, hs))
	b := tensor.Must(tensor.WrapFloat32(nil, perm, 1, 1, hs))
	neox.apply(a, []int{37})
	norm.apply(b, []int{37})
	for j := 0; j < hs/2; j++ {
		if x[j] != perm[2*j] || x[j+hs/2] != perm[2*j+1] {
			t.Fatalf("pair %d: neox (%g, %g), permuted norm (%g, %g)", j, x[j], x[j+hs/2], perm[2*j], perm[2*j+1])
		}
	}
}

// Llama 3.1's published scaling (θ 500000, head_dim 128, factor 8, low 1,
// high 4, original context 8192): the fastest pairs keep their frequency,
// the slowest are divided by 8, and the band between (wavelengths 2048 to
// 8192 positions) is interpolated, monotonically.
func TestLlama3FreqFactors(t *testing.T) {
	f := Llama3FreqFactors(500000, 128, 8, 1, 4, 8192)
	if len(f) != 64 {
		t.Fatalf("%d factors", len(f))
	}
	for j, v := range f {
		freq := 1 / math.Pow(500000, float64(2*j)/128)
		wl := 2 * math.Pi / freq
		switch {
		case wl < 2048 && v != 1:
			t.Errorf("pair %d (wavelength %.0f) factor %g, want 1", j, wl, v)
		case wl > 8192 && v != 8:
			t.Errorf("pair %d (wavelength %.0f) factor %g, want 8", j, wl, v)
		case wl >= 2048 && wl <= 8192:
			// smooth = (8192/wl − 1)/3; factor = 1/((1−smooth)/8 + smooth)
			s := (8192/wl - 1) / 3
			if want := 1 / ((1-s)/8 + s); math.Abs(float64(v)-want) > 1e-5*want {
				t.Errorf("pair %d factor %g, want %g", j, v, want)
			}
		}
		if j > 0 && v < f[j-1] {
			t.Errorf("factors not monotone at %d", j)
		}
	}
	if f[0] != 1 || f[63] != 8 {
		t.Errorf("ends %g, %g", f[0], f[63])
	}
}

func TestRopeRejectsBadFactors(t *testing.T) {
	c := Config{Dim: 8, HiddenDim: 8, NLayers: 1, NHeads: 1, NKVHeads: 1, VocabSize: 8, SeqLen: 4, RopeTheta: 10000, NormEps: 1e-5}
	if _, err := newRope(c, []float32{1, 1}); err == nil {
		t.Error("2 factors for 4 pairs accepted")
	}
	if _, err := newRope(c, []float32{1, 0, 1, 1}); err == nil {
		t.Error("a zero factor accepted")
	}
	c.RopeDim = 6
	if _, err := newRope(c, nil); err != nil {
		t.Errorf("n_rot 6 of 8: %v", err)
	}
	c.RopeDim = 10
	if c.Validate() == nil {
		t.Error("n_rot beyond head_dim validated")
	}
}

// The RoPE variants and Qwen2's q/k/v biases through the whole forward
// pass, against the float64 reference (reference_test.go), on both
// projections and both attention paths, with a batched prefill.
func TestForwardVariantsMatchFloat64Reference(t *testing.T) {
	base := Config{Dim: 32, HiddenDim: 48, NLayers: 2, NHeads: 4, NKVHeads: 2, VocabSize: 40, SeqLen: 32,
		RopeTheta: 10000, NormEps: 1e-6}
	cases := []struct {
		name    string
		mod     func(*Config)
		factors bool
	}{
		{"qwen2 neox with biases", func(c *Config) { c.RopeStyle, c.RopeTheta, c.QKVBias = RopeNeox, 1e6, true }, false},
		{"llama3 rope_freqs", func(c *Config) { c.RopeTheta = 500000 }, true},
		{"partial rope, linear scaling", func(c *Config) { c.RopeDim, c.RopeScale = 4, 2 }, false},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.mod(&c)
			bias := c.QKVBias
			c.QKVBias = false // Synthesize fills no biases; they are added below
			m, err := Synthesize(c, uint64(200+i))
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewSource(int64(i)))
			if bias {
				m.Config.QKVBias = true
				for l := range m.Weights.Layers {
					b := make([]float32, c.QKVRows())
					for j := range b {
						b[j] = float32(rng.NormFloat64())
					}
					m.Weights.Layers[l].BQKV = tensor.Must(tensor.WrapFloat32(nil, b, len(b)))
				}
			}
			if tc.factors {
				f := Llama3FreqFactors(c.RopeTheta, c.HeadDim(), 8, 1, 4, 8)
				m.Weights.RopeFreqs = tensor.Must(tensor.WrapFloat32(nil, f, len(f)))
			}
			tokens := []int{1, 5, 9, 13, 2, 7, 30, 3, 11, 17, 23, 29}
			ref := newRefModel(t, m).forward(tokens)
			for _, proj := range []Projection{FusedQKV, SeparateQKV} {
				for _, path := range []attention.Path{attention.NewFused(attention.Options{}), attention.NewNaive(attention.Options{})} {
					f, err := NewForward(m, ForwardOptions{Projection: proj, Path: path})
					if err != nil {
						t.Fatal(err)
					}
					pos := make([]int, len(tokens))
					for p := range pos {
						pos[p] = p
					}
					b, _, err := attention.NewLinearBatch([]int{len(tokens)}, []int{len(tokens)}, 4)
					if err != nil {
						t.Fatal(err)
					}
					rows := []int{0, 5, 11}
					logits, err := f.Run(tokens, pos, b, denseCaches(t, m.Config, 4, 3), rows)
					f.Close()
					if err != nil {
						t.Fatal(err)
					}
					for ri, r := range rows {
						for v := 0; v < c.VocabSize; v++ {
							got, want := float64(logits[ri*c.VocabSize+v]), ref[r][v]
							if math.Abs(got-want) > 1e-4*math.Max(1, math.Abs(want)) {
								t.Fatalf("proj=%d path=%T row %d vocab %d: got %g, want %g", proj, path, r, v, got, want)
							}
						}
					}
				}
			}
		})
	}
}
