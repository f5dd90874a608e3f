package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TransposeRows8 is a plain gather-and-transpose, for every row count
// around the kernel's blocks of eight, scattered and overlapping row
// offsets, a column stride wider than the rows, and on every Impl; it
// writes nothing outside its eight columns.
func TestTransposeRows8(t *testing.T) {
	withImpl(t, func(t *testing.T, impl Impl) {
		rng := rand.New(rand.NewPCG(11, 12))
		src := randF32(rng, make([]float32, 500))
		for _, m := range []int{1, 7, 8, 9, 16, 23, 64, 130} {
			n := m + rng.IntN(5)
			rows := make([]int, m)
			for j := range rows {
				rows[j] = rng.IntN(len(src) - 8 + 1)
			}
			dst := make([]float32, 8*n+3)
			for i := range dst {
				dst[i] = float32(math.NaN())
			}
			if err := TransposeRows8(dst, n, src, rows); err != nil {
				t.Fatal(err)
			}
			for x := 0; x < 8; x++ {
				for j := 0; j < n; j++ {
					got := dst[x*n+j]
					if j >= m {
						if !math.IsNaN(float64(got)) {
							t.Fatalf("m=%d: dst[%d·n+%d] written past the rows", m, x, j)
						}
						continue
					}
					if want := src[rows[j]+x]; math.Float32bits(got) != math.Float32bits(want) {
						t.Fatalf("m=%d: dst[%d·n+%d] = %v, want src[%d+%d] = %v", m, x, j, got, rows[j], x, want)
					}
				}
			}
			for _, v := range dst[8*n:] {
				if !math.IsNaN(float64(v)) {
					t.Fatalf("m=%d: wrote past the eighth column", m)
				}
			}
		}
	})
}

func TestTransposeRows8RejectsBadInput(t *testing.T) {
	src, dst := make([]float32, 16), make([]float32, 64)
	if err := TransposeRows8(dst, 8, src, []int{9}); err == nil {
		t.Error("accepted a row past src's end")
	}
	if err := TransposeRows8(dst, 8, src, []int{-1}); err == nil {
		t.Error("accepted a negative row")
	}
	if err := TransposeRows8(dst[:40], 8, src, []int{0, 1}); err == nil {
		t.Error("accepted a dst too short for eight columns")
	}
	if err := TransposeRows8(dst, 1, src, []int{0, 1}); err == nil {
		t.Error("accepted a stride narrower than the rows")
	}
}
