package testfixture

import (
	"math"
	"slices"
	"testing"
)

// This file is the bit-for-bit comparison of tensors that the round-trip
// and golden tests of several packages share (a model written and read
// back, a checkpoint in two formats). It names no tensor type, so that
// this package still imports only the standard library: any type with
// these methods (tensor.Tensor has them) is compared.

// Floats is what Float32Bits reads: the elements as float32, row-major.
type Floats interface {
	Float32s() ([]float32, error)
}

// ShapedFloats is what SameTensor compares: the elements, the shape and
// the dtype (of whatever comparable type the tensor type uses).
type ShapedFloats[D comparable] interface {
	Floats
	Shape() []int
	DType() D
}

// Float32Bits returns the float32 bit patterns of x in row-major order,
// failing t when x cannot be read as float32.
func Float32Bits(t testing.TB, x Floats) []uint32 {
	t.Helper()
	v, err := x.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]uint32, len(v))
	for i, f := range v {
		out[i] = math.Float32bits(f)
	}
	return out
}

// SameTensor fails t unless a and b have the same shape, dtype and bits
// (bits, not values: -0 differs from 0 and a NaN is compared by its
// payload), naming the first element that differs.
func SameTensor[D comparable, T ShapedFloats[D]](t testing.TB, name string, a, b T) {
	t.Helper()
	if !slices.Equal(a.Shape(), b.Shape()) || a.DType() != b.DType() {
		t.Fatalf("%s: %v %v vs %v %v", name, a.Shape(), a.DType(), b.Shape(), b.DType())
	}
	x, y := Float32Bits(t, a), Float32Bits(t, b)
	for i := range x {
		if x[i] != y[i] {
			t.Fatalf("%s: element %d differs: %#x vs %#x", name, i, x[i], y[i])
		}
	}
}
