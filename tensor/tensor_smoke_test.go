package tensor

import "testing"

func TestSmokeSeedBasics(t *testing.T) {
	ctx := NewContext()
	x := Must(Must(Arange(ctx, F32, 12)).Reshape(3, 4))
	if got := FormatInts(x.Strides()); got != "[4, 1]" {
		t.Fatalf("strides %s", got)
	}
	xt := Must(x.T())
	if xt.IsContiguous() {
		t.Fatal("t() contiguous")
	}
	if _, err := xt.View(12); err == nil {
		t.Fatal("view(12) of t() succeeded")
	}
	s := Must(Must(x.Slice(0, 1, 4, 1)).Slice(1, 1, 3, 1))
	if s.Offset() != 5 {
		t.Fatalf("offset %d", s.Offset())
	}
	before := ctx.Stats()
	c := Must(xt.Contiguous())
	d := ctx.Stats().Sub(before)
	if d.BytesCopied != 48 || d.CopyOps != 1 || FormatInts(c.Strides()) != "[3, 1]" {
		t.Fatalf("contiguous: %v %v", d, c)
	}
	p := Must(Must(Meta(F32, 2, 3, 4)).Permute(2, 0, 1))
	v, err := p.View(4, 6)
	if err != nil || FormatInts(v.Strides()) != "[1, 4]" {
		t.Fatalf("permute view: %v %v", v, err)
	}
}
