package tensor

import (
	"math"
	"testing"
)

// The references in the math tests (matmul_test.go, softmax_test.go) are
// written independently of the ops they check: plain index loops over
// At(), accumulated in float64. This file holds the helpers they share.

// unravel turns a row-major linear index into an index of shape.
func unravel(i int, shape []int) []int {
	idx := make([]int, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		idx[d] = i % shape[d]
		i /= shape[d]
	}
	return idx
}

// bcastIndex maps an index of the broadcast shape out to an index of a
// tensor of shape in (aligned right; size-1 dims read index 0).
func bcastIndex(idx, in []int) []int {
	r := make([]int, len(in))
	for k := range in {
		v := idx[len(idx)-len(in)+k]
		if in[k] == 1 {
			v = 0
		}
		r[k] = v
	}
	return r
}

func at(t *testing.T, x *Tensor, idx ...int) float64 {
	t.Helper()
	v, err := x.At(idx...)
	if err != nil {
		t.Fatalf("At%v: %v", idx, err)
	}
	return float64(v)
}

// closeTo checks got against want with a tolerance scaled by the
// magnitude of the terms (float32 accumulation error grows with k).
func closeTo(t *testing.T, name string, got []float32, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d elements, want %d", name, len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(float64(got[i]) - want[i]); d > tol*(1+math.Abs(want[i])) || math.IsNaN(float64(got[i])) {
			t.Fatalf("%s: element %d = %v, want %v", name, i, got[i], want[i])
		}
	}
}

func randn(led *Ledger, seed uint64, shape ...int) *Tensor {
	return Must(Randn(led, F32, seed, shape...))
}

func (x *Tensor) mustF32(t *testing.T) []float32 {
	t.Helper()
	v, err := x.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}
