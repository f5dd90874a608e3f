package tensor

import "testing"

// TestViewCornersMatchTorch pins the issue-15 corners with PyTorch 1.13's
// printed answers (the same cases are in the recorded oracle replayed by
// tensor/layoutexpr): empty slices keep their offset, and expand gives a
// new size-1 leading dim a real stride.
func TestViewCornersMatchTorch(t *testing.T) {
	x := Must(Meta(F32, 5, 3))
	for _, c := range []struct {
		start, end, off int
	}{{7, 9, 15}, {3, 1, 9}, {-9, 2, 0}} { // x[7:9], x[3:1], x[-9:2]
		s := Must(x.Slice(0, c.start, c.end, 1))
		if s.Offset() != c.off {
			t.Errorf("x[%d:%d] offset %d, PyTorch %d", c.start, c.end, s.Offset(), c.off)
		}
	}
	if s := Must(x.Slice(1, 5, maxNumel, 1)); s.Offset() != 3 { // x[:, 5:]
		t.Errorf("x[:, 5:] offset %d, PyTorch 3", s.Offset())
	}
	if s := Must(Must(Meta(F32, 0, 3)).Slice(1, 1, maxNumel, 1)); s.Offset() != 1 {
		t.Errorf("empty(0,3)[:, 1:] offset %d, PyTorch 1", s.Offset())
	}
	for _, c := range []struct {
		in, sizes []int
		strides   string
	}{
		{[]int{3, 5}, []int{1, 3, 5}, "[15, 5, 1]"},
		{[]int{3, 1}, []int{1, 1, 3, 1}, "[3, 3, 1, 1]"},
		{[]int{3, 1}, []int{2, 3, 4}, "[0, 1, 0]"},
		{[]int{1}, []int{2, 3}, "[0, 0]"},
		{[]int{}, []int{1, 1}, "[0, 0]"},
		{[]int{0, 3}, []int{2, 0, 3}, "[0, 3, 1]"},
	} {
		e := Must(Must(Meta(F32, c.in...)).Expand(c.sizes...))
		if got := FormatInts(e.Strides()); got != c.strides {
			t.Errorf("empty%v.expand%v strides %s, PyTorch %s", c.in, c.sizes, got, c.strides)
		}
	}
}
