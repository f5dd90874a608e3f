package layoutexpr

import (
	"strings"
	"testing"
)

// TestGridSeedExamples: the --grid of the seed's examples. Each grid cell
// is offset + Σ i·stride, derived by hand from the seed's printed strides
// (CuTe prints (4,3):(1,4) the same way: column j reads 4j + i).
func TestGridSeedExamples(t *testing.T) {
	cases := []struct {
		prog string
		step int
		want string
	}{
		{"arange(12).view(3,4).t()", 3, `(4,3):(1,4) offset 0
      0    1    2
   +----+----+----+
 0 |  0 |  4 |  8 |
   +----+----+----+
 1 |  1 |  5 |  9 |
   +----+----+----+
 2 |  2 |  6 | 10 |
   +----+----+----+
 3 |  3 |  7 | 11 |
   +----+----+----+
`},
		// x[1:, 1:3]: offset 5, the seed's example.
		{"arange(12).view(3,4)[1:, 1:3]", 3, `(2,2):(4,1) offset 5
      0    1
   +----+----+
 0 |  5 |  6 |
   +----+----+
 1 |  9 | 10 |
   +----+----+
`},
		// bias.expand(4, 3): stride 0, every row reads the same cells.
		{"empty(3).expand(4,3)", 2, `(4,3):(0,1) offset 0
     0   1   2
   +---+---+---+
 0 | 0 | 1 | 2 |
   +---+---+---+
 1 | 0 | 1 | 2 |
   +---+---+---+
 2 | 0 | 1 | 2 |
   +---+---+---+
 3 | 0 | 1 | 2 |
   +---+---+---+
`},
		// arange(6).unfold(0, 3, 1): overlapping windows, strides (1, 1).
		{"arange(6).unfold(0,3,1)", 2, `(4,3):(1,1) offset 0
     0   1   2
   +---+---+---+
 0 | 0 | 1 | 2 |
   +---+---+---+
 1 | 1 | 2 | 3 |
   +---+---+---+
 2 | 2 | 3 | 4 |
   +---+---+---+
 3 | 3 | 4 | 5 |
   +---+---+---+
`},
		// permute(2, 0, 1) of (2, 3, 4): strides (1, 12, 4), as 2-d slices.
		{"empty(2,3,4).permute(2,0,1)", 2, `(4,2,3):(1,12,4) offset 0
[0, :, :]
      0    1    2
   +----+----+----+
 0 |  0 |  4 |  8 |
   +----+----+----+
 1 | 12 | 16 | 20 |
   +----+----+----+
[1, :, :]
      0    1    2
   +----+----+----+
 0 |  1 |  5 |  9 |
   +----+----+----+
 1 | 13 | 17 | 21 |
   +----+----+----+
[2, :, :]
      0    1    2
   +----+----+----+
 0 |  2 |  6 | 10 |
   +----+----+----+
 1 | 14 | 18 | 22 |
   +----+----+----+
[3, :, :]
      0    1    2
   +----+----+----+
 0 |  3 |  7 | 11 |
   +----+----+----+
 1 | 15 | 19 | 23 |
   +----+----+----+
`},
	}
	for _, c := range cases {
		rows, err := Eval(c.prog)
		if err != nil {
			t.Fatal(err)
		}
		if got := Grid(rows[c.step-1]); got != c.want {
			t.Errorf("%s step %d:\n%s\nwant:\n%s", c.prog, c.step, got, c.want)
		}
	}
	// A large view is summarised: first and last indices around "..".
	rows, _ := Eval("empty(4096, 4096).t()")
	g := Grid(rows[1])
	if n := strings.Count(g, "\n"); n > 40 || !strings.Contains(g, "..") || !strings.Contains(g, "16773120") {
		t.Errorf("summary of a 4096×4096 view (%d lines):\n%s", n, g)
	}
}
