// Package loadplot draws `infer bench serve --plot`'s chart from
// loadgen's reports: the latency CDFs of every request rate, and output
// throughput against the rate asked.
//
// It lives apart from package loadgen, which imports nothing outside the
// standard library, so that the benchmark client stays small and a
// front end that draws imports gonum/plot through this package alone.
// PNG returns the picture as an io.WriterTo, so a drawing error and a
// writing error come apart for the caller.
package loadplot

import (
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/stride-lm/stride/serve/loadgen"
)

// PNG draws the reports side by side, 400 × 380 points a chart: the
// empirical CDFs of TTFT, ITL and E2EL over the successful requests, one
// line per report's request rate, and, when two or more finite rates
// ran, output throughput (tokens/s) against request rate. WriteTo writes
// it as PNG.
func PNG(modelName string, reports []*loadgen.Report) (io.WriterTo, error) {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	metrics := []struct {
		title string
		get   func(r *loadgen.Record) []float64
	}{
		{"TTFT CDF (" + modelName + ")", func(r *loadgen.Record) []float64 { return []float64{ms(r.TTFT)} }},
		{"ITL CDF", func(r *loadgen.Record) []float64 {
			out := make([]float64, len(r.ITL))
			for i, g := range r.ITL {
				out[i] = ms(g)
			}
			return out
		}},
		{"E2EL CDF", func(r *loadgen.Record) []float64 { return []float64{ms(r.Latency)} }},
	}
	var row []*plot.Plot
	for _, m := range metrics {
		p, err := cdfPlot(m.title, reports, m.get)
		if err != nil {
			return nil, err
		}
		row = append(row, p)
	}
	if tp := throughputPlot(reports); tp != nil {
		row = append(row, tp)
	}
	img := vgimg.New(vg.Points(float64(400*len(row))), vg.Points(380))
	tiles := draw.Tiles{Rows: 1, Cols: len(row), PadX: vg.Points(12), PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(6)}
	plots := [][]*plot.Plot{row}
	canvases := plot.Align(plots, tiles, draw.New(img))
	for i, p := range row {
		p.Draw(canvases[0][i])
	}
	return vgimg.PngCanvas{Canvas: img}, nil
}

// cdfPlot is one metric's CDF chart, a line per report ("rate 4").
func cdfPlot(title string, reports []*loadgen.Report, get func(r *loadgen.Record) []float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "ms"
	p.Y.Label.Text = "fraction of requests"
	var lines []any
	for _, rep := range reports {
		var xs []float64
		for i := range rep.Result.Records {
			if r := &rep.Result.Records[i]; r.OK() {
				xs = append(xs, get(r)...)
			}
		}
		lines = append(lines, "rate "+loadgen.RateName(rep.Result.Config.Rate), cdf(xs))
	}
	if err := plotutil.AddLines(p, lines...); err != nil {
		return nil, fmt.Errorf("plot: %w", err)
	}
	p.Legend.Top = false
	return p, nil
}

// cdf is the empirical CDF of xs as a step line.
func cdf(xs []float64) plotter.XYs {
	slices.Sort(xs)
	out := make(plotter.XYs, 0, len(xs)+1)
	if len(xs) > 0 {
		out = append(out, plotter.XY{X: xs[0], Y: 0})
	}
	for i, x := range xs {
		out = append(out, plotter.XY{X: x, Y: float64(i+1) / float64(len(xs))})
	}
	return out
}

// throughputPlot is output tokens/s against the request rate asked, over
// the finite rates (nil with fewer than two).
func throughputPlot(reports []*loadgen.Report) *plot.Plot {
	var pts plotter.XYs
	for _, rep := range reports {
		if r := rep.Result.Config.Rate; !math.IsInf(r, 1) {
			pts = append(pts, plotter.XY{X: r, Y: rep.Summary.OutputThroughput})
		}
	}
	if len(pts) < 2 {
		return nil
	}
	slices.SortFunc(pts, func(a, b plotter.XY) int { return int(math.Copysign(1, a.X-b.X)) })
	p := plot.New()
	p.Title.Text = "Output throughput"
	p.X.Label.Text = "request rate (req/s)"
	p.Y.Label.Text = "output tokens / s"
	if err := plotutil.AddLinePoints(p, pts); err != nil {
		return nil
	}
	return p
}
