package tensor

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// The oracle for the overlap predicates is enumeration: list every
// element's storage offset (refOffsets) and compare them.

// refOverlaps reports by enumeration whether two elements share an offset.
func refOverlaps(shape, strides []int) bool {
	offs := refOffsets(shape, strides, 0)
	slices.Sort(offs)
	for i := 1; i < len(offs); i++ {
		if offs[i] == offs[i-1] {
			return true
		}
	}
	return false
}

// refDense reports by enumeration whether the offsets are exactly
// {min, …, min+numel-1}, each once.
func refDense(shape, strides []int) bool {
	offs := refOffsets(shape, strides, 0)
	slices.Sort(offs)
	for i := 1; i < len(offs); i++ {
		if offs[i] != offs[i-1]+1 {
			return false
		}
	}
	return true
}

// TestOverlapPredicatesRandomLayouts checks Overlaps and
// IsNonOverlappingAndDense against enumeration on random raw layouts.
func TestOverlapPredicatesRandomLayouts(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	for trial := range 5000 {
		shape := make([]int, r.IntN(4))
		strides := make([]int, len(shape))
		for i := range shape {
			shape[i] = r.IntN(5)
			strides[i] = r.IntN(10)
		}
		x := coreMust(t)(MetaStrided(F32, shape, strides, 0))
		if got, want := x.Overlaps(), refOverlaps(shape, strides); got != want {
			t.Fatalf("trial %d: Overlaps(%v/%v) = %v, enumeration %v", trial, shape, strides, got, want)
		}
		if got, want := x.IsNonOverlappingAndDense(), refDense(shape, strides); got != want {
			t.Fatalf("trial %d: IsNonOverlappingAndDense(%v/%v) = %v, enumeration %v", trial, shape, strides, got, want)
		}
		if err := x.CheckNoOverlap("add_"); (err != nil) != refOverlaps(shape, strides) {
			t.Fatalf("trial %d: CheckNoOverlap(%v/%v) = %v", trial, shape, strides, err)
		}
	}
}
