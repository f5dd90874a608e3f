package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// expSubInputs: scores spanning the cut, the row max itself, NaN, and
// random rows of every length 0–70 (the AVX-512 tail is masked).
func expSubInputs(rng *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(rng.NormFloat64() * 12)
	}
	return s
}

// TestExpSubMatchesFloat64: every value within 1.2e-7 relative of
// exp(x − mx) in float64 (0 below ExpCut), the sum within rounding, per
// implementation.
func TestExpSubMatchesFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	withImpl(t, func(t *testing.T, impl Impl) {
		for n := 0; n <= 70; n++ {
			s := expSubInputs(rng, n)
			mx := float32(0)
			for _, x := range s {
				mx = max(mx, x)
			}
			in := append([]float32(nil), s...)
			sum := ExpSub(s, mx)
			var want float64
			for i, x := range in {
				d := float64(x - mx)
				e := 0.0
				if d >= ExpCut {
					e = math.Exp(d)
				}
				want += float64(s[i])
				if diff := math.Abs(float64(s[i]) - e); diff > 1.2e-7*e {
					t.Fatalf("n=%d: exp(%v − %v) = %v, float64 %v", n, x, mx, s[i], e)
				}
			}
			if math.Abs(float64(sum)-want) > 1e-6*(1+want) {
				t.Fatalf("n=%d: sum %v, values add to %v", n, sum, want)
			}
		}
		s := []float32{0, float32(math.NaN()), -100}
		ExpSub(s, 0)
		if s[0] != 1 || !math.IsNaN(float64(s[1])) || s[2] != 0 {
			t.Fatalf("ExpSub([0 NaN -100], 0) = %v, want [1 NaN 0]", s)
		}
	})
}

// TestExpSubSIMDMatchesGeneric: the AVX-512 values are the portable
// loop's bit for bit, over a fine sweep of [−50, 0].
func TestExpSubSIMDMatchesGeneric(t *testing.T) {
	if !available[ImplAVX512] {
		t.Skip("no AVX-512 on this CPU: the ExpSub kernel is not used here")
	}
	prev := CurrentImpl()
	defer func() { _ = SetImpl(prev) }()
	_ = SetImpl(ImplAVX512)
	s := make([]float32, 500001)
	for i := range s {
		s[i] = float32(-50 * float64(i) / 500000)
	}
	want := append([]float32(nil), s...)
	expSubGeneric(want, 0)
	ExpSub(s, 0)
	for i := range s {
		if math.Float32bits(s[i]) != math.Float32bits(want[i]) {
			t.Fatalf("x = %v: avx512 %v, generic %v", float32(-50*float64(i)/500000), s[i], want[i])
		}
	}
}

func ExampleExpSub() {
	row := []float32{2, 1, 0}
	sum := ExpSub(row, 2) // softmax numerators against the row max
	fmt.Printf("%.4f %.4f\n", row, sum)
	// Output: [1.0000 0.3679 0.1353] 1.5032
}

func BenchmarkExpSub(b *testing.B) {
	rng := rand.New(rand.NewPCG(53, 54))
	src := expSubInputs(rng, 512)
	s := make([]float32, 512)
	withImplB(b, func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			copy(s, src)
			ExpSub(s, 40)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/512, "ns/value")
	})
}

func withImplB(b *testing.B, f func(b *testing.B)) {
	prev := CurrentImpl()
	defer func() { _ = SetImpl(prev) }()
	for _, impl := range Available() {
		_ = SetImpl(impl)
		b.Run(impl.String(), f)
	}
}
