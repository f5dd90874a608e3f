package model

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"sort"
	"testing"
)

// bigRNG is run.c's xorshift64* with the state as a big.Int reduced modulo
// 2^64 after every step: an independent statement of the C semantics
// (unsigned long long shifts drop bits, the product wraps).
type bigRNG struct{ s *big.Int }

var two64 = new(big.Int).Lsh(big.NewInt(1), 64)

func (r *bigRNG) u32() uint64 {
	x := r.s
	x.Xor(x, new(big.Int).Rsh(x, 12))
	x.Xor(x, new(big.Int).Mod(new(big.Int).Lsh(x, 25), two64))
	x.Xor(x, new(big.Int).Rsh(x, 27))
	p := new(big.Int).Mul(x, new(big.Int).SetUint64(0x2545F4914F6CDD1D))
	p.Mod(p, two64)
	return new(big.Int).Rsh(p, 32).Uint64()
}

// coin is random_f32 in float64: the top 24 bits of the draw over 2^24.
func (r *bigRNG) coin() float64 { return float64(r.u32()>>8) / (1 << 24) }

func TestRNGMatchesReference(t *testing.T) {
	for _, seed := range []uint64{1, 42, 1234567890123, math.MaxUint64} {
		s := NewSampler(4, 1, 0, seed)
		ref := &bigRNG{new(big.Int).SetUint64(seed)}
		for i := 0; i < 2000; i++ {
			if i%2 == 0 {
				if got, want := s.randomU32(), ref.u32(); uint64(got) != want {
					t.Fatalf("seed %d draw %d: u32 %d, reference %d", seed, i, got, want)
				}
			} else if got, want := s.randomF32(), ref.coin(); float64(got) != want || got < 0 || got >= 1 {
				t.Fatalf("seed %d draw %d: coin %v, reference %v", seed, i, got, want)
			}
		}
	}
	// Seed 0 is a fixed point of xorshift, as in run.c.
	s := NewSampler(4, 1, 0, 0)
	for i := 0; i < 5; i++ {
		if c := s.randomF32(); c != 0 {
			t.Fatalf("seed 0 gave coin %v", c)
		}
	}
}

func TestArgmax(t *testing.T) {
	s := NewSampler(5, 0, 0.9, 1)
	for _, tc := range []struct {
		logits []float32
		want   int
	}{
		{[]float32{1, 3, 3, 2, -1}, 1},                  // first of a tie
		{[]float32{-5, -4, -4, -9, -4}, 1},              // all negative
		{[]float32{0, 0, 0, 0, 0}, 0},                   // all equal
		{[]float32{float32(math.NaN()), 1, 2, 2, 0}, 0}, // NaN first: > is never true
		{[]float32{1, float32(math.Inf(1)), 2, float32(math.Inf(1)), 0}, 1},
	} {
		in := append([]float32(nil), tc.logits...)
		if got := s.Sample(in); got != tc.want {
			t.Errorf("argmax %v = %d, want %d", tc.logits, got, tc.want)
		}
	}
}

func TestSampleMult(t *testing.T) {
	// Dyadic probabilities: every partial sum is exact in float32.
	p := []float32{0.125, 0.5, 0.25, 0.125}
	for _, tc := range []struct {
		coin float32
		want int
	}{{0, 0}, {0.1, 0}, {0.125, 1}, {0.6, 1}, {0.625, 2}, {0.874, 2}, {0.875, 3}, {0.99999994, 3}} {
		if got := sampleMult(p, tc.coin); got != tc.want {
			t.Errorf("coin %v: got %d, want %d", tc.coin, got, tc.want)
		}
	}
	// Rounding can leave the total below the coin: the last index.
	if got := sampleMult([]float32{0.25, 0.25}, 0.75); got != 1 {
		t.Errorf("short cdf: got %d", got)
	}
}

func TestSampleTopP(t *testing.T) {
	s := NewSampler(4, 1, 0.625, 1)
	// cutoff (1-0.625)/3 = 0.125 drops token 0; sorted: 1 (0.5), 2 (0.25),
	// 3 (0.1875); the cumulative sum first exceeds 0.625 at token 2, so the
	// nucleus is {1, 2} with mass 0.75, and r = coin·0.75.
	p := []float32{0.0625, 0.5, 0.25, 0.1875}
	for _, tc := range []struct {
		coin float32
		want int
	}{{0, 1}, {0.5, 1}, {0.66, 1}, {0.667, 2}, {0.99, 2}} {
		if got := s.sampleTopP(p, tc.coin); got != tc.want {
			t.Errorf("coin %v: got %d, want %d", tc.coin, got, tc.want)
		}
	}
	// Ties keep ascending token order (stable sort); the sum reaches 0.5
	// without exceeding it, so the nucleus takes a third token.
	s = NewSampler(4, 1, 0.5, 1)
	u := []float32{0.25, 0.25, 0.25, 0.25}
	for _, tc := range []struct {
		coin float32
		want int
	}{{0.1, 0}, {0.4, 1}, {0.7, 2}, {0.99, 2}} {
		if got := s.sampleTopP(u, tc.coin); got != tc.want {
			t.Errorf("uniform, coin %v: got %d, want %d", tc.coin, got, tc.want)
		}
	}
	// No candidate passes the cutoff (topp 0.1 < 1/n): the most probable.
	s = NewSampler(2, 1, 0.1, 1)
	if got := s.sampleTopP([]float32{0.5, 0.5}, 0.9); got != 0 {
		t.Errorf("empty nucleus: got %d", got)
	}
	// A single-token vocabulary.
	s = NewSampler(1, 1, 0.9, 1)
	if got := s.Sample([]float32{3}); got != 0 {
		t.Errorf("vocab 1: got %d", got)
	}
	if got := NewSampler(0, 1, 0.9, 1).Sample(nil); got != 0 {
		t.Errorf("empty: got %d", got)
	}
}

// refSample is a float64 statement of run.c's sampling for a whole
// sequence: softmax of logits/T, then plain or nucleus sampling with the
// big-integer RNG. It returns the token and how close the coin came to a
// decision boundary (float32 and float64 can only disagree near one).
func refSample(logits []float64, temp, topp float64, rng *bigRNG) (tok int, margin float64) {
	n := len(logits)
	mx := logits[0] / temp
	for _, v := range logits {
		mx = math.Max(mx, v/temp)
	}
	p := make([]float64, n)
	var sum float64
	for i, v := range logits {
		p[i] = math.Exp(v/temp - mx)
		sum += p[i]
	}
	for i := range p {
		p[i] /= sum
	}
	coin := rng.coin()
	idx := make([]int, 0, n)
	if topp <= 0 || topp >= 1 {
		for i := range p {
			idx = append(idx, i)
		}
	} else {
		for i := range p {
			if p[i] >= (1-topp)/float64(n-1) {
				idx = append(idx, i)
			}
		}
		sort.SliceStable(idx, func(a, b int) bool { return p[idx[a]] > p[idx[b]] })
		var cum float64
		for k, i := range idx {
			cum += p[i]
			if cum > topp {
				idx = idx[:k+1]
				break
			}
		}
	}
	var mass float64
	for _, i := range idx {
		mass += p[i]
	}
	r := coin * mass
	var cdf float64
	margin = math.Inf(1)
	tok = idx[len(idx)-1]
	found := false
	for _, i := range idx {
		cdf += p[i]
		margin = math.Min(margin, math.Abs(r-cdf))
		if !found && r < cdf {
			tok, found = i, true
		}
	}
	return tok, margin
}

func TestSampleMatchesFloat64Reference(t *testing.T) {
	const vocab, steps = 50, 3000
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, cfg := range []struct{ temp, topp float64 }{{1, 0}, {0.8, 1}, {0.8, 0.9}, {1.3, 0.5}, {0.5, 0.95}} {
		t.Run(fmt.Sprintf("T%g_p%g", cfg.temp, cfg.topp), func(t *testing.T) {
			const seed = 2024
			s := NewSampler(vocab, float32(cfg.temp), float32(cfg.topp), seed)
			ref := &bigRNG{new(big.Int).SetUint64(seed)}
			logits := make([]float32, vocab)
			l64 := make([]float64, vocab)
			skipped := 0
			for step := 0; step < steps; step++ {
				for i := range logits {
					logits[i] = float32(rnd.NormFloat64() * 3)
					l64[i] = float64(logits[i])
				}
				got := s.Sample(logits)
				want, margin := refSample(l64, cfg.temp, cfg.topp, ref)
				if margin < 1e-5 {
					skipped++ // float32 rounding may legitimately flip this draw
					continue
				}
				if got != want {
					t.Fatalf("step %d: sampled %d, float64 reference %d (margin %g)", step, got, want, margin)
				}
			}
			if skipped > steps/100 {
				t.Fatalf("%d of %d draws too close to call", skipped, steps)
			}
		})
	}
}

func TestSampleDoesNotAllocate(t *testing.T) {
	logits := make([]float32, 32000)
	work := make([]float32, len(logits))
	for i := range logits {
		logits[i] = float32(i%97) / 10
	}
	for _, topp := range []float32{0, 0.9} {
		s := NewSampler(len(logits), 0.9, topp, 7)
		allocs := testing.AllocsPerRun(20, func() {
			copy(work, logits)
			s.Sample(work)
		})
		if allocs != 0 {
			t.Errorf("topp %v: %v allocations per Sample", topp, allocs)
		}
	}
}

func TestSampleSoftmaxInPlace(t *testing.T) {
	s := NewSampler(3, 2, 0, 9)
	l := []float32{0, 2, 4}
	s.Sample(l)
	// softmax([0, 1, 2]) in float64.
	e := []float64{1, math.E, math.E * math.E}
	sum := e[0] + e[1] + e[2]
	for i := range l {
		if math.Abs(float64(l[i])-e[i]/sum) > 1e-7 {
			t.Fatalf("logits[%d] = %v after Sample, want probability %v", i, l[i], e[i]/sum)
		}
	}
}

// ExampleSampler shows greedy decoding: temperature 0 takes the argmax.
func ExampleSampler() {
	s := NewSampler(4, 0, 0, 1)
	fmt.Println(s.Sample([]float32{0.1, 2.5, -1, 2.5}))
	// Output: 1
}
