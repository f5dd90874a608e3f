package loadplot

import (
	"bytes"
	"image/png"
	"math"
	"testing"
	"time"

	"github.com/stride-lm/stride/serve/loadgen"
)

func report(rate, throughput float64) *loadgen.Report {
	var recs []loadgen.Record
	for i := range 10 {
		d := time.Duration(i+1) * time.Millisecond
		r := loadgen.Record{Index: i, TTFT: d, Latency: 4 * d, ITL: []time.Duration{d / 2, d}, OutputLen: 3}
		if i == 3 {
			r.Status, r.Err = "503", "busy" // left out of the CDFs
		}
		recs = append(recs, r)
	}
	rep := loadgen.NewReport(&loadgen.Result{Config: loadgen.Config{Rate: rate}, Records: recs, Duration: time.Second},
		nil, loadgen.SLO{}, "m", "completions", "server", time.Unix(0, 0))
	rep.Summary.OutputThroughput = throughput
	return rep
}

// width is the PNG's width in pixels (96 dpi: 400 points a chart are
// 533⅓ pixels).
func width(t *testing.T, reports []*loadgen.Report) int {
	t.Helper()
	img, err := PNG("m", reports)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := img.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	cfg, err := png.DecodeConfig(&b)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Width
}

// Three CDF charts always; the throughput chart only with two or more
// finite rates.
func TestPNGCharts(t *testing.T) {
	if w := width(t, []*loadgen.Report{report(math.Inf(1), 10)}); w != 1600 {
		t.Errorf("one rate: %d pixels wide, want 1600 (three charts)", w)
	}
	if w := width(t, []*loadgen.Report{report(4, 30), report(math.Inf(1), 50)}); w != 1600 {
		t.Errorf("one finite rate: %d pixels wide, want 1600 (no throughput chart)", w)
	}
	if w := width(t, []*loadgen.Report{report(4, 30), report(1, 10), report(math.Inf(1), 50)}); w != 2133 {
		t.Errorf("two finite rates: %d pixels wide, want 2133 (four charts)", w)
	}
}

// The CDF steps from 0 to 1 over the sorted values.
func TestCDF(t *testing.T) {
	got := cdf([]float64{3, 1, 2})
	want := []struct{ x, y float64 }{{1, 0}, {1, 1.0 / 3}, {2, 2.0 / 3}, {3, 1}}
	if len(got) != len(want) {
		t.Fatalf("cdf %v", got)
	}
	for i, w := range want {
		if got[i].X != w.x || got[i].Y != w.y {
			t.Errorf("point %d = %v, want %v", i, got[i], w)
		}
	}
	if len(cdf(nil)) != 0 {
		t.Error("empty CDF has points")
	}
}
