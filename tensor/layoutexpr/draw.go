//go:build !(js && wasm)

package layoutexpr

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/font/liberation"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Pictures of storage and views. Each row becomes one panel: the 1-D
// storage as a strip of numbered cells, and the view as a grid of its
// logical coordinates, each grid cell showing the storage index it reads.
// A storage cell and the grid cells that read it share a colour; storage
// cells no coordinate reads (holes) are white, and a cell read more than
// once (a stride-0 or overlapping dim) has a bold border. A step that made
// a new storage from another tensor (a copy or a computation) draws its
// input's storage strip above its own.
//
// Drawing goes through gonum/plot's vg.Canvas, already a dependency of
// Stride, so SVG (vgsvg) and PNG (vgimg, in the CLI) come from one code
// path, in pure Go (this package compiles to WebAssembly). Views larger
// than drawMax cells are summarised: the grid shows its first and last
// rows and columns (as Grid does) and the strip its first drawStrip cells.

const (
	cellW       = vg.Length(22)
	cellH       = vg.Length(16)
	margin      = vg.Length(10)
	stripLabelW = vg.Length(125)
	drawStrip   = 48 // storage cells drawn before the strip is cut with "…"
	maxPanels   = 64 // rows drawn; a longer program draws its first maxPanels
)

var faceCache = font.NewCache(liberation.Collection())

func face(size vg.Length) font.Face {
	return faceCache.Lookup(font.Font{Typeface: "Liberation", Variant: "Mono"}, size)
}

// Picture is a drawing of a program's rows, ready for any vg.Canvas.
type Picture struct {
	W, H   vg.Length
	panels []panel
}

type panel struct {
	r      Row
	y      vg.Length // top of the panel, from the top of the picture
	h      vg.Length
	strips []strip
	grids  []grid2d
}

type strip struct {
	label string
	n     int // storage cells
	reads map[int]int
	cut   bool
}

type grid2d struct {
	label         string
	rows, cols    []int // shown indices, -1 for an ellipsis
	off, st0, st1 int
}

// NewPicture lays out one panel per successful row (at most maxPanels).
func NewPicture(rows []Row) *Picture {
	p := &Picture{W: 300}
	y := margin
	for _, r := range rows {
		if r.Error != "" || r.t == nil || len(p.panels) == maxPanels {
			continue
		}
		pn := panel{r: r, y: y}
		h := cellH + 6 // title
		reads := readCounts(r.Shape, r.Strides, r.Offset)
		if r.in != nil && r.Storage == "new" && r.CopiedBytes > 0 {
			in := r.in
			pn.strips = append(pn.strips, strip{label: "input storage", n: in.Storage().Len(),
				reads: readCounts(in.Shape(), in.Strides(), in.Offset()), cut: in.Storage().Len() > drawStrip})
		}
		label := "storage (" + r.Storage + ")"
		pn.strips = append(pn.strips, strip{label: label, n: r.t.Storage().Len(), reads: reads, cut: r.t.Storage().Len() > drawStrip})
		h += vg.Length(len(pn.strips)) * (cellH*2 + 6)
		pn.grids = grids(r)
		for _, g := range pn.grids {
			h += cellH*vg.Length(len(g.rows)+1) + 8
			if g.label != "" {
				h += cellH
			}
			p.W = max(p.W, margin*2+cellW*vg.Length(len(g.cols)+1)+60)
		}
		for _, s := range pn.strips {
			p.W = max(p.W, margin*2+cellW*vg.Length(min(s.n, drawStrip)+1)+stripLabelW+60)
		}
		pn.h = h
		y += h + margin
		p.panels = append(p.panels, pn)
	}
	p.H = y
	return p
}

// readCounts maps storage index → how many coordinates read it, for a
// view small enough to enumerate (a summary otherwise counts what it shows).
func readCounts(shape, strides []int, off int) map[int]int {
	m := map[int]int{}
	n := 1
	for _, s := range shape {
		n *= s
	}
	if n == 0 || n > 1<<14 {
		return m
	}
	idx := make([]int, len(shape))
	for k := 0; k < n; k++ {
		o := off
		for d, i := range idx {
			o += i * strides[d]
		}
		m[o]++
		for d := len(idx) - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	return m
}

// grids splits a view into the 2-d grids a panel draws (as Grid does).
func grids(r Row) []grid2d {
	nd := len(r.Shape)
	switch {
	case nd == 0:
		return []grid2d{{label: "()", rows: []int{0}, cols: []int{0}, off: r.Offset}}
	case nd == 1:
		return []grid2d{{label: "", rows: []int{0}, cols: shown(r.Shape[0]), off: r.Offset, st1: r.Strides[0]}}
	case nd == 2:
		return []grid2d{{rows: shown(r.Shape[0]), cols: shown(r.Shape[1]), off: r.Offset, st0: r.Strides[0], st1: r.Strides[1]}}
	case nd > 4:
		return nil
	}
	lead := r.Shape[:nd-2]
	n := 1
	for _, s := range lead {
		n *= s
	}
	var out []grid2d
	idx := make([]int, len(lead))
	for k := 0; k < n && k < gridSlices; k++ {
		off := r.Offset
		lbl := "["
		for d, i := range idx {
			off += i * r.Strides[d]
			lbl += strconv.Itoa(i) + ", "
		}
		out = append(out, grid2d{label: lbl + ":, :]", rows: shown(r.Shape[nd-2]), cols: shown(r.Shape[nd-1]), off: off, st0: r.Strides[nd-2], st1: r.Strides[nd-1]})
		for d := len(lead) - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < lead[d] {
				break
			}
			idx[d] = 0
		}
	}
	return out
}

// cellColor gives storage index i its colour: hues spaced by the golden
// angle, so neighbouring indices differ.
func cellColor(i int) color.Color {
	h := math.Mod(float64(i)*0.618033988749895, 1)
	r, g, b := hsv(h, 0.35, 1)
	return color.RGBA{r, g, b, 255}
}

func hsv(h, s, v float64) (uint8, uint8, uint8) {
	i := math.Floor(h * 6)
	f := h*6 - i
	p, q, t := v*(1-s), v*(1-f*s), v*(1-(1-f)*s)
	var r, g, b float64
	switch int(i) % 6 {
	case 0:
		r, g, b = v, t, p
	case 1:
		r, g, b = q, v, p
	case 2:
		r, g, b = p, v, t
	case 3:
		r, g, b = p, q, v
	case 4:
		r, g, b = t, p, v
	default:
		r, g, b = v, p, q
	}
	return uint8(r * 255), uint8(g * 255), uint8(b * 255)
}

// Draw paints the picture on c (whose size is W × H).
func (p *Picture) Draw(c vg.Canvas) {
	small, title := face(8), face(9)
	text := func(f font.Face, x, yTop vg.Length, s string, center bool) {
		if center {
			x -= f.Width(s) / 2
		}
		c.SetColor(color.Black)
		c.FillString(f, vg.Point{X: x, Y: p.H - yTop - f.Extents().Ascent}, s)
	}
	box := func(x, yTop, w, h vg.Length, fill color.Color, bold bool) {
		r := vg.Rectangle{Min: vg.Point{X: x, Y: p.H - yTop - h}, Max: vg.Point{X: x + w, Y: p.H - yTop}}
		c.SetColor(fill)
		c.Fill(r.Path())
		c.SetColor(color.Gray{90})
		c.SetLineWidth(0.5)
		if bold {
			c.SetLineWidth(1.8)
		}
		c.Stroke(r.Path())
	}
	for _, pn := range p.panels {
		r := pn.r
		y := pn.y
		text(title, margin, y, fmt.Sprintf("step %d  %s   %s %s:%s offset %d", r.Step, r.Op, r.DType, tupleStr(r.Shape), tupleStr(r.Strides), r.Offset), false)
		y += cellH + 6
		for _, s := range pn.strips {
			text(small, margin, y+4, s.label, false)
			x := margin + stripLabelW
			for i := 0; i < min(s.n, drawStrip); i++ {
				fill := color.Color(color.White)
				if s.reads[i] > 0 {
					fill = cellColor(i)
				}
				box(x, y, cellW, cellH, fill, s.reads[i] > 1)
				text(small, x+cellW/2, y+4, strconv.Itoa(i), true)
				x += cellW
			}
			if s.cut {
				text(small, x+4, y+4, fmt.Sprintf("… %d cells", s.n), false)
			}
			y += cellH*2 + 6
		}
		for _, g := range pn.grids {
			if g.label != "" {
				text(small, margin, y+4, g.label, false)
				y += cellH
			}
			x0 := margin + 40
			for j, col := range g.cols {
				lbl := strconv.Itoa(col)
				if col < 0 {
					lbl = "…"
				}
				text(small, x0+cellW*vg.Length(j)+cellW/2, y+4, lbl, true)
			}
			y += cellH
			for _, row := range g.rows {
				lbl := strconv.Itoa(row)
				if row < 0 {
					lbl = "⋮"
				}
				text(small, x0-16, y+4, lbl, false)
				for j, col := range g.cols {
					x := x0 + cellW*vg.Length(j)
					if row < 0 || col < 0 {
						box(x, y, cellW, cellH, color.Gray{235}, false)
						text(small, x+cellW/2, y+4, "…", true)
						continue
					}
					o := g.off + row*g.st0 + col*g.st1
					box(x, y, cellW, cellH, cellColor(o), pn.strips[len(pn.strips)-1].reads[o] > 1)
					text(small, x+cellW/2, y+4, strconv.Itoa(o), true)
				}
				y += cellH
			}
			y += 8
		}
	}
}

// SVG evaluates a program and draws its rows as an SVG document. A failed
// last row is left out of the picture (its error is in the rows).
func SVG(src string) ([]byte, error) {
	rows, err := Eval(src)
	if err != nil {
		return nil, err
	}
	return DrawSVG(rows)
}

// DrawSVG draws rows as an SVG document.
func DrawSVG(rows []Row) ([]byte, error) {
	p := NewPicture(rows)
	c := vgsvg.NewWith(vgsvg.UseWH(p.W, p.H))
	p.Draw(c)
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// DrawPNG draws rows as a PNG image at 96 dpi on white.
func DrawPNG(rows []Row) ([]byte, error) {
	p := NewPicture(rows)
	c := vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(p.W, p.H), vgimg.UseDPI(96), vgimg.UseBackgroundColor(color.White))}
	p.Draw(c)
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
