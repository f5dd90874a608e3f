package main

import (
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/stride-lm/stride/cmd/infer/internal/outfile"
)

// plotSweep draws a sweep as three side-by-side charts against context
// length: prefill time, decode time per token, and bytes copied, one line
// per path. It writes a PNG to f and commits it.
func plotSweep(f *outfile.File, modelName string, points []comparePoint) error {
	series := func(get func(pathJSON) float64) (naive, fused plotter.XYs) {
		for _, p := range points {
			naive = append(naive, plotter.XY{X: float64(p.Context), Y: get(p.Naive)})
			fused = append(fused, plotter.XY{X: float64(p.Context), Y: get(p.Fused)})
		}
		return
	}
	chart := func(title, ylabel string, get func(pathJSON) float64) (*plot.Plot, error) {
		p := plot.New()
		p.Title.Text = title
		p.X.Label.Text = "context length (tokens)"
		p.Y.Label.Text = ylabel
		naive, fused := series(get)
		if err := plotutil.AddLinePoints(p, "naive", naive, "fused", fused); err != nil {
			return nil, fmt.Errorf("plot: %w", err)
		}
		p.Legend.Top = true
		p.Legend.Left = true
		return p, nil
	}
	prefill, err := chart("Prefill time ("+modelName+")", "ms", func(r pathJSON) float64 { return r.PrefillMS })
	if err != nil {
		return err
	}
	decode, err := chart("Decode time per token", "ms / token", func(r pathJSON) float64 { return r.DecodeMSPerTok })
	if err != nil {
		return err
	}
	copied, err := chart("Bytes copied (whole run)", "MiB", func(r pathJSON) float64 { return float64(r.BytesCopied) / (1 << 20) })
	if err != nil {
		return err
	}

	img := vgimg.New(vg.Points(1200), vg.Points(380))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 3, PadX: vg.Points(12), PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(6)}
	plots := [][]*plot.Plot{{prefill, decode, copied}}
	canvases := plot.Align(plots, tiles, dc)
	for i, p := range plots[0] {
		p.Draw(canvases[0][i])
	}

	png := vgimg.PngCanvas{Canvas: img}
	if _, err := png.WriteTo(f); err != nil {
		return fmt.Errorf("plot %s: %w", f.Name(), err)
	}
	if err := f.Commit(); err != nil {
		return fmt.Errorf("plot %s: %w", f.Name(), err)
	}
	return nil
}
