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

// TestSoftmaxLastDimInPlace runs softmax through a transposed view (rows
// along a stride-4 dim) against a float64 reference, with logits large
// enough that exp overflows without max-subtraction.
func TestSoftmaxLastDimInPlace(t *testing.T) {
	led := NewLedger()
	base := Must(Randn(led, F32, 7, 3, 5, 4))
	if err := ScaleInPlace(base, 50); err != nil {
		t.Fatal(err)
	}
	x := Must(base.Transpose(1, 2)) // [3, 4, 5], rows run along a stride-4 dim
	want := refSoftmax(t, x)
	if err := SoftmaxLastDimInPlace(x); err != nil {
		t.Fatal(err)
	}
	got := x.mustF32(t)
	closeTo(t, "softmax_ in place", got, want, 1e-6)
	for r := 0; r < len(got); r += 5 {
		var s float64
		for _, v := range got[r : r+5] {
			s += float64(v)
		}
		if math.Abs(s-1) > 1e-6 {
			t.Fatalf("row %d sums to %v", r/5, s)
		}
	}
}

func TestSoftmaxRefusesOverlapAndSkipsMeta(t *testing.T) {
	led := NewLedger()
	e := Must(Must(arange(led, F32, 3)).Expand(4, 3))
	err := SoftmaxLastDimInPlace(e)
	if err == nil || !strings.Contains(err.Error(), "more than one element of the written-to tensor refers to a single memory location") {
		t.Fatalf("softmax_ on an expanded tensor: %v", err)
	}
	m := Must(Meta(F32, 2, 32, 4096, 4096))
	if err := SoftmaxLastDimInPlace(m); err != nil {
		t.Fatal(err)
	}
}
