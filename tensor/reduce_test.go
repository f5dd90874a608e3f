package tensor

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestArgmax(t *testing.T) {
	led := NewLedger()
	x := Must(FromFloat32(led, F32, []float32{1, 5, 2, 5, -1, 0}, 6))
	if i, err := Argmax(x); err != nil || i != 1 {
		t.Fatalf("argmax = %d %v, want the first maximum 1", i, err)
	}
	// Strided: elements 0, 2, 4 = 1, 2, -1.
	if i, err := Argmax(Must(x.Slice(0, 0, 6, 2))); err != nil || i != 1 {
		t.Fatalf("strided argmax = %d %v, want 1", i, err)
	}
	if _, err := Argmax(randn(led, 1, 2, 2)); err == nil {
		t.Fatal("argmax of a 2-D tensor succeeded")
	}
	if _, err := Argmax(Must(Empty(led, F32, 0))); err == nil {
		t.Fatal("argmax of an empty tensor succeeded")
	}
	if _, err := Argmax(Must(Meta(F32, 5))); !errors.Is(err, ErrMeta) {
		t.Fatalf("argmax of meta: %v", err)
	}
}

func TestSumDim(t *testing.T) {
	led := NewLedger()
	x := Must(randn(led, 1, 2, 3, 4).Permute(2, 0, 1)) // [4,2,3]
	for dim := -3; dim < 3; dim++ {
		got, err := SumDim(x, dim)
		if err != nil {
			t.Fatal(err)
		}
		d := (dim + 3) % 3
		shape := x.Shape()
		n := shape[d]
		outShape := append(append([]int(nil), shape[:d]...), shape[d+1:]...)
		if FormatInts(got.Shape()) != FormatInts(outShape) {
			t.Fatalf("sum dim %d shape %v", dim, got.Shape())
		}
		var want []float64
		for i := 0; i < got.Numel(); i++ {
			idx := unravel(i, outShape)
			var s float64
			for j := 0; j < n; j++ {
				full := append(append(append([]int(nil), idx[:d]...), j), idx[d:]...)
				s += at(t, x, full...)
			}
			want = append(want, s)
		}
		closeTo(t, fmt.Sprint("sum dim ", dim), got.mustF32(t), want, 1e-6)
	}
	if _, err := SumDim(x, 3); err == nil || !strings.Contains(err.Error(), "Dimension out of range") {
		t.Fatalf("sum dim 3: %v", err)
	}
}
