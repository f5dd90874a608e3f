package layoutexpr

import (
	"strings"
	"testing"

	"github.com/stride-lm/stride/tensor"
)

// TestIssueFamilies: the seven families of differences a check against
// PyTorch 1.13 found, each with the answer PyTorch printed (quoted in the
// issue); the recorded oracle covers them at random as well.
func TestIssueFamilies(t *testing.T) {
	cases := []struct {
		name, prog     string
		shape, strides string
		offset         int
		copied         int64
	}{
		{"0-d has shape []", "empty(5).select(0,-2)", "[]", "[]", 3, 0},
		{"empty slice keeps its offset", "empty(1).reshape(1,1,1,1,1).slice(-5,1,1,1)", "[0, 1, 1, 1, 1]", "[1, 1, 1, 1, 1]", 1, 0},
		{"empty slice keeps its offset (2)", "empty(5,3,4).permute(2,1,0).select(0,0).flatten(0,1).slice(0,7,7,2)", "[0]", "[2]", 7, 0},
		{"expand: new size-1 dim", "empty(3,5).expand(1,3,5)", "[1, 3, 5]", "[15, 5, 1]", 0, 0},
		{"flatten(d, d) is the input", "empty(1,3,5,1).permute(0,3,1,2).flatten(0,0)", "[1, 1, 3, 5]", "[15, 1, 5, 1]", 0, 0},
		{"clone preserves strides", "empty(2,3).t().clone()", "[3, 2]", "[1, 3]", 0, 24},
		{"to(dtype) positional", "empty(2,3).t().to(torch.float16)", "[3, 2]", "[1, 3]", 0, 12},
		{"arange is int64", "arange(12).view(3,4).t().contiguous()", "[4, 3]", "[3, 1]", 0, 96},
	}
	for _, c := range cases {
		rows, err := Eval(c.prog)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		r := rows[len(rows)-1]
		if r.Error != "" || tensor.FormatInts(r.Shape) != c.shape || tensor.FormatInts(r.Strides) != c.strides || r.Offset != c.offset || r.CopiedBytes != c.copied {
			t.Errorf("%s: %s → %v %v offset %d copied %d (%s), PyTorch %s %s offset %d copied %d",
				c.name, c.prog, r.Shape, r.Strides, r.Offset, r.CopiedBytes, r.Error, c.shape, c.strides, c.offset, c.copied)
		}
	}
	// JSON: a 0-d result is "shape": [], not null.
	rows, err := Eval("empty(5).select(0,-2)")
	b := MarshalRows(rows)
	if err != nil || !strings.Contains(string(b), `"shape":[],"strides":[],"offset":3`) {
		t.Errorf("0-d JSON: %s %v", b, err)
	}
}
