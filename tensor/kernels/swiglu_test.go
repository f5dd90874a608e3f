package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// swigluInputs: a fine sweep of [-100, 100], the range edges, specials and
// random values, with gates of both signs.
func swigluInputs() (z, gate []float32) {
	for i := 0; i <= 200000; i++ {
		z = append(z, float32(-100+200*float64(i)/200000))
	}
	z = append(z, 0, float32(math.Copysign(0, -1)), 17.999, 18, 18.001, -88.72, -88.73, -89, -89.001, 87.5, 100,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.MaxFloat32, -math.MaxFloat32, 1e-40, -1e-40)
	rng := rand.New(rand.NewPCG(31, 32))
	for i := 0; i < 50000; i++ {
		z = append(z, float32(rng.NormFloat64()*8))
	}
	gate = make([]float32, len(z))
	for i := range gate {
		gate[i] = 1.5 - float32(i%3)
	}
	return z, gate
}

// TestSwiGLUMatchesFloat64 checks SwiGLU (every implementation) against
// silu computed in float64 with math.Exp: within 1 ulp, and exact for all
// but a handful of arguments (run.c's expf is correctly rounded; ours is
// within 4e-14 before rounding).
func TestSwiGLUMatchesFloat64(t *testing.T) {
	z, gate := swigluInputs()
	withImpl(t, func(t *testing.T, impl Impl) {
		hb := append([]float32(nil), z...)
		if err := SwiGLU(hb, gate); err != nil {
			t.Fatal(err)
		}
		off := 0
		for i, zi := range z {
			e := float32(math.Exp(-float64(zi)))
			want := zi * (1 / (1 + e)) * gate[i]
			got := hb[i]
			if math.IsNaN(float64(want)) {
				if !math.IsNaN(float64(got)) {
					t.Fatalf("SwiGLU(%v)·%v = %v, want NaN", zi, gate[i], got)
				}
				continue
			}
			if got == want {
				continue
			}
			if d := math.Float32bits(got) - math.Float32bits(want); d != 1 && d != 1<<32-1 {
				t.Fatalf("SwiGLU(%v)·%v = %v, want %v", zi, gate[i], got, want)
			}
			off++
		}
		if off > 5 {
			t.Fatalf("%d of %d results are 1 ulp off", off, len(z))
		}
	})
}

// TestSwiGLUSIMDMatchesGeneric: the AVX-512 kernel is bit-identical to the
// portable loop, on every length 0–40 (the tail of n mod 8 is Go's) and on
// the full sweep.
func TestSwiGLUSIMDMatchesGeneric(t *testing.T) {
	if !available[ImplAVX512] {
		t.Skip("no AVX-512 on this CPU: the SwiGLU kernel is not used here")
	}
	prev := CurrentImpl()
	defer func() { _ = SetImpl(prev) }()
	z, gate := swigluInputs()
	check := func(z, gate []float32) {
		want := append([]float32(nil), z...)
		swigluGeneric(want, gate)
		got := append([]float32(nil), z...)
		_ = SetImpl(ImplAVX512)
		if err := SwiGLU(got, gate); err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("n=%d: SwiGLU(%v)·%v = %v (avx512), %v (generic)", len(z), z[i], gate[i], got[i], want[i])
			}
		}
	}
	for n := 0; n <= 40; n++ {
		check(z[100000:100000+n], gate[:n])
	}
	check(z, gate)
}

func TestSwiGLUShortGate(t *testing.T) {
	hb := []float32{1, 2, 3}
	if err := SwiGLU(hb, []float32{1, 2}); err == nil {
		t.Fatal("a gate shorter than the input should be an error")
	}
	if hb[0] != 1 || hb[2] != 3 {
		t.Fatalf("input changed on error: %v", hb)
	}
}

func ExampleSwiGLU() {
	hb := []float32{0, 1, -1, 20}
	gate := []float32{1, 1, 1, 2}
	_ = SwiGLU(hb, gate)
	fmt.Printf("%.4f\n", hb)
	// Output: [0.0000 0.7311 -0.2689 40.0000]
}
