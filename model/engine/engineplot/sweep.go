package engineplot

import (
	"fmt"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/stride-lm/stride/model/engine"
)

// SweepPNG draws a context sweep (engine.CompareContexts) as three
// side-by-side charts against context length: prefill time, decode time
// per token, and bytes copied, one line per attention path, under the
// title's model name. The picture is 1200 × 380 points; WriteTo writes
// it as PNG.
func SweepPNG(modelName string, points []engine.ComparePoint) (io.WriterTo, error) {
	prefill, err := sweepChart(points, "Prefill time ("+modelName+")", "ms", func(r engine.PathFigures) float64 { return r.PrefillMS })
	if err != nil {
		return nil, err
	}
	decode, err := sweepChart(points, "Decode time per token", "ms / token", func(r engine.PathFigures) float64 { return r.DecodeMSPerTok })
	if err != nil {
		return nil, err
	}
	copied, err := sweepChart(points, "Bytes copied (whole run)", "MiB", func(r engine.PathFigures) float64 { return float64(r.BytesCopied) / (1 << 20) })
	if err != nil {
		return nil, err
	}
	img := vgimg.New(vg.Points(1200), vg.Points(380))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 3, PadX: vg.Points(12), PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(6)}
	plots := [][]*plot.Plot{{prefill, decode, copied}}
	canvases := plot.Align(plots, tiles, dc)
	for i, p := range plots[0] {
		p.Draw(canvases[0][i])
	}
	return vgimg.PngCanvas{Canvas: img}, nil
}

// sweepChart is one figure of both paths against context length.
func sweepChart(points []engine.ComparePoint, title, ylabel string, get func(engine.PathFigures) float64) (*plot.Plot, error) {
	var naive, fused plotter.XYs
	for _, p := range points {
		naive = append(naive, plotter.XY{X: float64(p.Context), Y: get(p.Naive)})
		fused = append(fused, plotter.XY{X: float64(p.Context), Y: get(p.Fused)})
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "context length (tokens)"
	p.Y.Label.Text = ylabel
	if err := plotutil.AddLinePoints(p, "naive", naive, "fused", fused); err != nil {
		return nil, fmt.Errorf("plot: %w", err)
	}
	p.Legend.Top = true
	p.Legend.Left = true
	return p, nil
}
