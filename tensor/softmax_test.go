package tensor

import (
	"math"
	"strings"
	"testing"
)

// refSoftmax is softmax of each last-dim row of x in float64.
func refSoftmax(t *testing.T, x *Tensor) []float64 {
	shape := x.Shape()
	n := shape[len(shape)-1]
	var out []float64
	rows := x.Numel() / n
	for r := 0; r < rows; r++ {
		lead := unravel(r, shape[:len(shape)-1])
		row := make([]float64, n)
		mx := math.Inf(-1)
		for j := range row {
			row[j] = at(t, x, append(append([]int(nil), lead...), j)...)
			mx = math.Max(mx, row[j])
		}
		var s float64
		for j := range row {
			row[j] = math.Exp(row[j] - mx)
			s += row[j]
		}
		for j := range row {
			out = append(out, row[j]/s)
		}
	}
	return out
}

func TestSoftmax(t *testing.T) {
	led := NewLedger()
	base := Must(Randn(led, F32, 7, 3, 5, 4))
	// Large logits: without max-subtraction exp overflows to +Inf.
	if err := ScaleInPlace(base, 50); err != nil {
		t.Fatal(err)
	}
	x := Must(base.Transpose(1, 2)) // rows run along a stride-4 dim
	want := refSoftmax(t, x)
	got, err := Softmax(x)
	if err != nil {
		t.Fatal(err)
	}
	if !got.IsContiguous() || FormatInts(got.Shape()) != "[3, 4, 5]" {
		t.Fatalf("softmax result %v", got)
	}
	closeTo(t, "softmax", got.mustF32(t), want, 1e-6)
	sums := Must(SumDim(got, -1)).mustF32(t)
	for i, s := range sums {
		if math.Abs(float64(s)-1) > 1e-6 {
			t.Fatalf("row %d sums to %v", i, s)
		}
	}

	// In place through the same transposed view: the underlying storage
	// now holds the softmax of the columns.
	if err := SoftmaxLastDimInPlace(x); err != nil {
		t.Fatal(err)
	}
	closeTo(t, "softmax_ in place", x.mustF32(t), want, 1e-6)
}

func TestSoftmaxRefusesOverlapAndSkipsMeta(t *testing.T) {
	led := NewLedger()
	e := Must(Must(Arange(led, F32, 3)).Expand(4, 3))
	err := SoftmaxLastDimInPlace(e)
	if err == nil || !strings.Contains(err.Error(), "more than one element of the written-to tensor refers to a single memory location") {
		t.Fatalf("softmax_ on an expanded tensor: %v", err)
	}
	m := Must(Meta(F32, 2, 32, 4096, 4096))
	if err := SoftmaxLastDimInPlace(m); err != nil {
		t.Fatal(err)
	}
	s, err := Softmax(m)
	if err != nil || !s.IsMeta() || FormatInts(s.Shape()) != "[2, 32, 4096, 4096]" {
		t.Fatalf("meta softmax %v %v", s, err)
	}
}
