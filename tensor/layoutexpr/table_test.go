package layoutexpr

import (
	"image/png"
	"strings"
	"testing"
)

// WriteTable prints PyTorch's facts per step: the seed's t() of a (3,4)
// tensor has strides (1,4) and is not contiguous; contiguous() copies
// 12 int64s. A float32-only program has no dtype column, a program with
// variables gets a var column (and names storages by them), and a
// failing last row (view(6) of the transpose, which PyTorch refuses) is
// left out.
func TestWriteTable(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"arange(12).view(3,4).t().contiguous()", `step  op             dtype  shape   strides  offset  contiguous  storage         copied
1     arange(12)     int64  [12]    [1]      0       True        new             0 B
2     .view(3,4)     int64  [3, 4]  [4, 1]   0       True        shared(step 1)  0 B
3     .t()           int64  [4, 3]  [1, 4]   0       False       shared(step 1)  0 B
4     .contiguous()  int64  [4, 3]  [3, 1]   0       True        new             96 B
`},
		{"x = empty(2, 3)\ny = x.t()\nz = y.view(6)", `step  var  op           shape   strides  offset  contiguous  storage    copied
1     x    empty(2, 3)  [2, 3]  [3, 1]   0       True        new        0 B
2     y    .t()         [3, 2]  [1, 3]   0       False       shared(x)  0 B
`},
	} {
		rows, err := Eval(tc.src)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := WriteTable(&b, rows); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("%q:\n%s\nwant:\n%s", tc.src, b.String(), tc.want)
		}
	}
}

// DrawPNG's picture is a PNG of the Picture's size at 96 dpi.
func TestDrawPNG(t *testing.T) {
	rows, err := Eval("arange(12).view(3,4).t()")
	if err != nil {
		t.Fatal(err)
	}
	b, err := DrawPNG(rows)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := png.DecodeConfig(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	p := NewPicture(rows)
	if w, h := int(p.W.Dots(96)+0.5), int(p.H.Dots(96)+0.5); cfg.Width != w || cfg.Height != h {
		t.Errorf("PNG %d×%d, want the picture's %d×%d", cfg.Width, cfg.Height, w, h)
	}
}
