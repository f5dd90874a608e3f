package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// VecMat must be, bit for bit, a cleared dst plus one Axpy per row (what
// the attention tiles computed before it existed), and within float32
// rounding of the float64 product, for every row count, width (whole
// 16-lane chunks, groups of four chunks, and remainders) and stride.
func TestVecMatEqualsAxpyRows(t *testing.T) {
	withImpl(t, func(t *testing.T, impl Impl) {
		rng := rand.New(rand.NewPCG(3, 5))
		for _, D := range []int{1, 2, 7, 8, 16, 33} {
			for _, w := range []int{1, 15, 16, 17, 48, 64, 80, 128, 137} {
				stride := w + rng.IntN(20)
				a := randF32(rng, make([]float32, D))
				x := randF32(rng, make([]float32, (D-1)*stride+w))
				got := randF32(rng, make([]float32, w)) // overwritten, not accumulated into
				if err := VecMat(got, a, x, stride); err != nil {
					t.Fatal(err)
				}
				want := make([]float32, w)
				for d := range D {
					Axpy(a[d], x[d*stride:d*stride+w], want)
				}
				for j := range w {
					if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
						t.Fatalf("D=%d w=%d stride=%d: dst[%d] = %v, D Axpy calls give %v", D, w, stride, j, got[j], want[j])
					}
					var ref, mag float64
					for d := range D {
						p := float64(a[d]) * float64(x[d*stride+j])
						ref += p
						mag += math.Abs(p)
					}
					if err := math.Abs(float64(got[j]) - ref); err > 1e-6*mag+1e-30 {
						t.Fatalf("D=%d w=%d: dst[%d] = %v, float64 %v (|err| %g)", D, w, j, got[j], ref, err)
					}
				}
			}
		}
	})
}

func TestVecMatRejectsShortInput(t *testing.T) {
	dst := make([]float32, 16)
	if err := VecMat(dst, make([]float32, 2), make([]float32, 16+15), 16); err == nil {
		t.Fatal("VecMat accepted a matrix one value short")
	}
	if err := VecMat(dst, make([]float32, 2), make([]float32, 64), 8); err == nil {
		t.Fatal("VecMat accepted a stride narrower than dst")
	}
	if err := VecMat(dst, nil, nil, 16); err != nil || dst[0] != 0 {
		t.Fatalf("zero rows: err %v, dst[0] %v (want a cleared dst)", err, dst[0])
	}
}
