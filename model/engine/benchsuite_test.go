package engine

import (
	"context"
	"errors"
	"slices"
	"testing"
)

func TestParseBenchTest(t *testing.T) {
	for s, want := range map[string]BenchTest{"pp512": {N: 512}, "tg1": {Gen: true, N: 1}, "tg128": {Gen: true, N: 128}} {
		got, err := ParseBenchTest(s)
		if err != nil || got != want || got.String() != s {
			t.Errorf("ParseBenchTest(%q) = %+v (%q), %v; want %+v", s, got, got.String(), err, want)
		}
	}
	for _, s := range []string{"", "pp", "tg0", "pp-1", "xx12", "tg1x", "pp 3"} {
		if _, err := ParseBenchTest(s); err == nil {
			t.Errorf("ParseBenchTest(%q) accepted", s)
		}
	}
}

// RunBench interleaves: one warm-up and reps measured runs of every
// case, the rates kept in the cases; a fake bandwidth gives the
// roofline by its formula.
func TestRunBench(t *testing.T) {
	e := newEngine(t, tinyGQA(t), Options{Path: "fused", Threads: 1, BlockSize: 16})
	cases := []*BenchCase{{Engine: e, Test: BenchTest{N: 8}, Batch: 1}, {Engine: e, Test: BenchTest{Gen: true, N: 8}, Batch: 2}}
	var order []int
	_, err := RunBench(context.Background(), cases, 2, nil, func(round, runs int) { order = append(order, round) })
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{0, 0, 1, 1, 2, 2}; !slices.Equal(order, want) {
		t.Errorf("runs by round %v, want %v", order, want)
	}
	for _, c := range cases {
		r := c.Result()
		if len(c.Rates) != 2 || r.Reps != 2 || r.Mean <= 0 {
			t.Errorf("%s: rates %v, result %+v", c.Test, c.Rates, r)
		}
		if r.BytesPerToken != 0 || r.TokensPerStep != 0 {
			t.Errorf("%s: roofline or speculation columns without a probe or speculation: %+v", c.Test, r)
		}
	}
	tg := cases[1]
	tg.Rates, tg.Bandwidths = []float64{100, 300}, []float64{10, 30}
	r := tg.Result()
	wantBytes := e.WeightBytes()/2 + 4*e.Cache().BytesPerToken()
	wantRoof := float64(wantBytes) * 100 / 10e9
	if r.BytesPerToken != wantBytes || r.BandwidthGBs != 20 || r.Roofline < wantRoof*(1-1e-12) || r.Roofline > wantRoof*(1+1e-12) {
		t.Errorf("roofline %+v, want %d bytes/token, 20 GB/s, fraction %g", r, wantBytes, wantRoof)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fresh := []*BenchCase{{Engine: e, Test: BenchTest{N: 8}, Batch: 1}}
	if _, err := RunBench(ctx, fresh, 1, nil, nil); !errors.Is(err, context.Canceled) || len(fresh[0].Rates) != 0 {
		t.Errorf("cancelled: %v, rates %v", err, fresh[0].Rates)
	}
}

func TestBandwidthProbe(t *testing.T) {
	p := NewBandwidthProbe(2, 1<<20)
	defer p.Close()
	if bw := p.Measure(); bw <= 0 || p.Threads() != 2 {
		t.Errorf("bandwidth %g GB/s over %d threads", bw, p.Threads())
	}
}
