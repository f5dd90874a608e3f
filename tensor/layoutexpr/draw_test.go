package layoutexpr

import (
	"html"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var (
	svgText = regexp.MustCompile(`<text [^>]*>([^<]*)</text>`)
	svgFill = regexp.MustCompile(`<path d="[^"]*" style="fill:#[0-9A-F]{6}" />`)
)

// texts returns the text elements of an SVG, in document order.
func texts(svg string) []string {
	var out []string
	for _, m := range svgText.FindAllStringSubmatch(svg, -1) {
		out = append(out, html.UnescapeString(m[1]))
	}
	return out
}

// TestSVGStructure: the picture of arange(12).view(3,4).t() has one
// filled cell per storage element and per view coordinate of each step
// (3 steps × (12 storage + 12 grid) = 72), and the grid of the transpose
// reads storage 0, 4, 8 / 1, 5, 9 / ... (offset + i·1 + j·4).
func TestSVGStructure(t *testing.T) {
	b, err := SVG("arange(12).view(3,4).t()")
	if err != nil {
		t.Fatal(err)
	}
	svg := string(b)
	if !strings.HasPrefix(svg, "<?xml") || !strings.HasSuffix(strings.TrimSpace(svg), "</svg>") {
		t.Fatalf("not an SVG document:\n%.200s", svg)
	}
	if n := len(svgFill.FindAllString(svg, -1)); n != 72 {
		t.Errorf("%d filled cells, want 72", n)
	}
	tx := texts(svg)
	i := slices.IndexFunc(tx, func(s string) bool { return strings.HasPrefix(s, "step 3  .t()") })
	if i < 0 {
		t.Fatalf("no step 3 title in %q", tx)
	}
	tx = tx[i+1:]
	// The storage strip: label, then cells 0..11.
	if tx[0] != "storage (shared(step 1))" {
		t.Fatalf("strip label %q", tx[0])
	}
	for k := 0; k < 12; k++ {
		if tx[1+k] != strconv.Itoa(k) {
			t.Fatalf("strip cell %d shows %q", k, tx[1+k])
		}
	}
	// Then the column headers 0 1 2, and per row its label and 3 cells.
	grid := tx[13:]
	if !slices.Equal(grid[:3], []string{"0", "1", "2"}) {
		t.Fatalf("column headers %q", grid[:3])
	}
	grid = grid[3:]
	for r := 0; r < 4; r++ {
		row := grid[r*4 : r*4+4] // row label, 3 cells
		want := []string{strconv.Itoa(r), strconv.Itoa(r), strconv.Itoa(r + 4), strconv.Itoa(r + 8)}
		if !slices.Equal(row, want) {
			t.Fatalf("grid row %d = %q, want label and cells %q", r, row, want)
		}
	}
}

// TestSVGSummarisesLargeTensors: a 4096×4096 view draws a bounded number
// of cells, with ellipses, and its strip is cut.
func TestSVGSummarisesLargeTensors(t *testing.T) {
	b, err := SVG("x = empty(4096, 4096); y = x.t()")
	if err != nil {
		t.Fatal(err)
	}
	svg := string(b)
	if n := len(svgFill.FindAllString(svg, -1)); n > 2*(drawStrip+11*11) {
		t.Errorf("%d filled cells for a 16M-element view", n)
	}
	tx := texts(svg)
	if !slices.Contains(tx, "…") || !slices.Contains(tx, "… 16777216 cells") || !slices.Contains(tx, "16773120") {
		t.Errorf("summary texts %q", tx)
	}
}

// TestSVGCopyShowsBothStorages: a copying step draws its input's storage
// strip and its new storage.
func TestSVGCopyShowsBothStorages(t *testing.T) {
	b, err := SVG("empty(2,3).t().contiguous()")
	if err != nil {
		t.Fatal(err)
	}
	tx := texts(string(b))
	i := slices.IndexFunc(tx, func(s string) bool { return strings.HasPrefix(s, "step 3") })
	if i < 0 || tx[i+1] != "input storage" || !slices.Contains(tx[i:], "storage (new)") {
		t.Fatalf("copy panel texts %q", tx[i:])
	}
}
