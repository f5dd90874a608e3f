package tensor

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// refUnravel turns a row-major flat index into a multi-index of shape.
func refUnravel(flat int, shape []int) []int {
	idx := make([]int, len(shape))
	for k := len(shape) - 1; k >= 0; k-- {
		idx[k] = flat % shape[k]
		flat /= shape[k]
	}
	return idx
}

// refAt reads x at idx through At, as float64.
func refAt(tb testing.TB, x *Tensor, idx []int) float64 {
	tb.Helper()
	v, err := x.At(idx...)
	if err != nil {
		tb.Fatal(err)
	}
	return float64(v)
}

// refNumel is the product of shape.
func refNumel(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}

// coreRandomInput returns a random tensor of a random shape with ndim
// dims, sometimes transposed so that it is not contiguous.
func coreRandomInput(tb testing.TB, r *rand.Rand, led *Ledger, ndim int) *Tensor {
	shape := make([]int, ndim)
	for i := range shape {
		shape[i] = 1 + r.IntN(3)
	}
	x := coreMust(tb)(Randn(led, F32, r.Uint64(), shape...))
	if ndim >= 2 && r.IntN(2) == 0 {
		a, b := r.IntN(ndim), r.IntN(ndim)
		x = coreMust(tb)(x.Transpose(a, b))
	}
	return x
}

func TestRepeatAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		led := NewLedger()
		x := coreRandomInput(t, r, led, r.IntN(4))
		reps := make([]int, x.Dim()+r.IntN(2))
		for i := range reps {
			reps[i] = r.IntN(4) // includes 0: an empty result
		}
		before := led.Stats()
		y, err := x.Repeat(reps...)
		if err != nil {
			t.Fatalf("trial %d: %v.Repeat(%v): %v", trial, x.Shape(), reps, err)
		}
		lead := len(reps) - x.Dim()
		pad := append(slices.Repeat([]int{1}, lead), x.Shape()...)
		want := make([]int, len(reps))
		for i := range reps {
			want[i] = pad[i] * reps[i]
		}
		if !slices.Equal(y.Shape(), want) || !y.IsContiguous() || SharesStorage(x, y) {
			t.Fatalf("trial %d: Repeat(%v) of %v: %v, want a new contiguous %v", trial, reps, x.Shape(), y, want)
		}
		for f := range refNumel(want) {
			oi := refUnravel(f, want)
			ii := make([]int, x.Dim())
			for k := range ii {
				ii[k] = oi[k+lead] % pad[k+lead]
			}
			if got, w := refAt(t, y, oi), refAt(t, x, ii); got != w {
				t.Fatalf("trial %d: Repeat(%v)%v = %v, want x%v = %v", trial, reps, oi, got, ii, w)
			}
		}
		d := led.Stats().Sub(before)
		if d.Allocations != 1 || d.BytesCopied != int64(y.Nbytes()) || d.CopyOps != 1 {
			t.Fatalf("trial %d: accounting %v for %d bytes", trial, d, y.Nbytes())
		}
	}
}

func TestRepeatInterleaveAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 200 {
		led := NewLedger()
		x := coreRandomInput(t, r, led, 1+r.IntN(3))
		dim := r.IntN(x.Dim())
		if r.IntN(2) == 0 {
			dim -= x.Dim() // negative dims count from the end
		}
		reps := r.IntN(4)
		before := led.Stats()
		y, err := x.RepeatInterleave(reps, dim)
		if err != nil {
			t.Fatalf("trial %d: %v.RepeatInterleave(%d, %d): %v", trial, x.Shape(), reps, dim, err)
		}
		d := (dim + x.Dim()) % x.Dim()
		want := x.Shape()
		want[d] *= reps
		if !slices.Equal(y.Shape(), want) || !y.IsContiguous() {
			t.Fatalf("trial %d: shape %v, want %v", trial, y.Shape(), want)
		}
		for f := range refNumel(want) {
			oi := refUnravel(f, want)
			ii := slices.Clone(oi)
			ii[d] = oi[d] / reps
			if got, w := refAt(t, y, oi), refAt(t, x, ii); got != w {
				t.Fatalf("trial %d: out%v = %v, want x%v = %v", trial, oi, got, ii, w)
			}
		}
		if dd := led.Stats().Sub(before); dd.BytesCopied != int64(y.Nbytes()) || dd.CopyOps != 1 {
			t.Fatalf("trial %d: accounting %v", trial, dd)
		}
	}
}

func TestRepeatInterleaveHandBuilt(t *testing.T) {
	x := coreMust(t)(FromFloat32(nil, F32, []float32{1, 2, 3, 4}, 2, 2))
	coreValues(t, "rows", coreMust(t)(x.RepeatInterleave(2, 0)), []float32{1, 2, 1, 2, 3, 4, 3, 4})
	coreValues(t, "cols", coreMust(t)(x.RepeatInterleave(3, -1)), []float32{1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4})
	s := coreMust(t)(FromFloat32(nil, F32, []float32{7}))
	y := coreMust(t)(s.RepeatInterleave(3, 0))
	coreLayout(t, "0-dim", y, []int{3}, []int{1}, 0, true)
	coreValues(t, "0-dim", y, []float32{7, 7, 7})
	// Meta: the layout of the result without data or accounting.
	m := coreMust(t)(Meta(BF16, 1, 2, 4096, 128))
	mr := coreMust(t)(m.RepeatInterleave(4, 1))
	if !mr.IsMeta() || !slices.Equal(mr.Shape(), []int{1, 8, 4096, 128}) || mr.DType() != BF16 {
		t.Errorf("meta repeat_interleave: %v", mr)
	}
	_, err := x.RepeatInterleave(-1, 0)
	coreErrContains(t, "negative repeats", err, "repeat_interleave", "[2, 2]")
	_, err = x.RepeatInterleave(2, 2)
	coreErrContains(t, "dim out of range", err, "repeat_interleave", "[2, 2]", "Dimension out of range")
}

func TestRepeatHandBuiltAndErrors(t *testing.T) {
	x := coreMust(t)(FromFloat32(nil, F32, []float32{1, 2, 3, 4}, 2, 2))
	coreValues(t, "repeat(1,2)", coreMust(t)(x.Repeat(1, 2)), []float32{1, 2, 1, 2, 3, 4, 3, 4})
	coreValues(t, "repeat(2,1)", coreMust(t)(x.Repeat(2, 1)), []float32{1, 2, 3, 4, 1, 2, 3, 4})
	y := coreMust(t)(x.Repeat(2, 1, 1))
	coreLayout(t, "repeat(2,1,1)", y, []int{2, 2, 2}, []int{4, 2, 1}, 0, true)
	// Repeat(1,1) is still a copy (PyTorch's repeat always copies).
	z := coreMust(t)(x.Repeat(1, 1))
	if SharesStorage(x, z) {
		t.Error("Repeat(1,1) shares storage")
	}
	m := coreMust(t)(coreMust(t)(Meta(F32, 3, 1)).Repeat(1, 4096))
	if !m.IsMeta() || !slices.Equal(m.Shape(), []int{3, 4096}) {
		t.Errorf("meta repeat: %v", m)
	}
	_, err := x.Repeat(2)
	coreErrContains(t, "too few reps", err, "repeat", "can not be smaller", "[2, 2]")
	_, err = x.Repeat(1, -1)
	coreErrContains(t, "negative rep", err, "repeat", "negative", "[2, 2]")
	_, err = x.Repeat(1<<40, 1<<40)
	coreErrContains(t, "overflow", err, "repeat", "[2, 2]")
}
