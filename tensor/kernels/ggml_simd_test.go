package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGGMLVNNIMatchesAVX2: the VNNI kernels form the same int32 lanes as
// the AVX2 ones (VPDPBUSD for VPMADDUBSW+VPMADDWD), so every output has
// the same bits; and both agree with the generic kernels to rounding.
func TestGGMLVNNIMatchesAVX2(t *testing.T) {
	if !available[ImplAVX2] {
		t.Skip("no AVX2 on this CPU")
	}
	if simdGGMLDots[ImplAVX2].q8_0 == nil || simdGGMLDots[ImplAVX2].q4K == nil || simdGGMLDots[ImplAVX2].q6K == nil {
		t.Fatal("amd64 build without the ggml AVX2 kernels")
	}
	rng := rand.New(rand.NewPCG(11, 12))
	prev := CurrentImpl()
	defer func() { _ = SetImpl(prev) }()
	for _, typ := range ggmlTypes {
		rows, cols := 40, 1024
		m := newRandGGML(t, rng, typ, rows, cols)
		x := make([]float32, cols)
		randF32(rng, x)
		outs := map[Impl][]float32{}
		for _, impl := range Available() {
			if err := SetImpl(impl); err != nil {
				t.Fatal(err)
			}
			out := make([]float32, rows)
			if err := MatMul(nil, out, x, m, 1); err != nil {
				t.Fatal(err)
			}
			outs[impl] = out
		}
		ref, mag := refGGMLMatMul(m, x, 1)
		for impl, out := range outs {
			for i := range out {
				if d := math.Abs(float64(out[i]) - ref[i]); d > tol(cols, mag[i]) {
					t.Errorf("%v %v row %d: %g, float64 %g", typ, impl, i, out[i], ref[i])
				}
			}
		}
		if a, b := outs[ImplAVX2], outs[ImplAVX512]; a != nil && b != nil {
			for i := range a {
				if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
					t.Fatalf("%v row %d: avx512 %g, avx2 %g", typ, i, b[i], a[i])
				}
			}
		}
	}
}
