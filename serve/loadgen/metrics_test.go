package loadgen

import (
	"math"
	"testing"
	"time"
)

// The percentiles against numpy.percentile's linear interpolation,
// worked by hand: np.percentile([1,2,3,4], [0,25,50,90,99,100]) =
// [1, 1.75, 2.5, 3.7, 3.97, 4].
func TestPercentileIsNumpys(t *testing.T) {
	xs := []float64{1, 2, 3, 4}
	for _, c := range []struct{ p, want float64 }{{0, 1}, {25, 1.75}, {50, 2.5}, {90, 3.7}, {99, 3.97}, {100, 4}} {
		if got := Percentile(xs, c.p); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if got := Percentile([]float64{7}, 99); got != 7 {
		t.Errorf("one value: p99 = %v", got)
	}
	if Percentile(nil, 50) != 0 || Mean(nil) != 0 || Std(nil) != 0 {
		t.Error("an empty metric is not zero")
	}
	// np.std([2,4,4,4,5,5,7,9]) = 2 (population).
	if got := Std([]float64{2, 4, 4, 4, 5, 5, 7, 9}); got != 2 {
		t.Errorf("std = %v, want 2", got)
	}
	for _, c := range []struct {
		p    float64
		name string
	}{{99, "99"}, {99.9, "99.9"}, {50, "50"}} {
		if got := PercentileName(c.p); got != c.name {
			t.Errorf("PercentileName(%v) = %q", c.p, got)
		}
	}
}

// Summarize against the definitions, worked out in float64 by hand for
// three requests (one failed) over 2 s.
func TestSummarizeDefinitions(t *testing.T) {
	msd := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	recs := []Record{
		{TTFT: msd(100), Latency: msd(400), ITL: []time.Duration{msd(100), msd(200)}, PromptLen: 10, OutputLen: 4},
		{TTFT: msd(50), Latency: msd(50), PromptLen: 6, OutputLen: 1},
		{Status: "503", Err: "queue full"},
	}
	s := Summarize(recs, 2*time.Second, []float64{50, 99}, SLO{TTFT: 60})
	if s.Completed != 2 || s.Failed != 1 || s.FailedByStatus["503"] != 1 {
		t.Fatalf("counts %+v", s)
	}
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	near("total input", float64(s.TotalInputTokens), 16)
	near("total output", float64(s.TotalOutputTokens), 5)
	near("request throughput", s.RequestThroughput, 1)
	near("output throughput", s.OutputThroughput, 2.5)
	near("total throughput", s.TotalTokenThroughput, 10.5)
	near("goodput", s.RequestGoodput, 0.5) // only the 50 ms TTFT meets 60 ms
	near("mean ttft", s.TTFT.Mean, 75)
	near("std ttft", s.TTFT.Std, 25)
	near("p99 ttft", s.TTFT.Percentiles[1], 50+0.99*50)
	// TPOT: (400-100)/(4-1) = 100 ms; the one-token request has none.
	near("mean tpot", s.TPOT.Mean, 100)
	near("p50 tpot", s.TPOT.Percentiles[0], 100)
	// ITL: the gaps of every request: 100 and 200.
	near("mean itl", s.ITL.Mean, 150)
	near("p99 itl", s.ITL.Percentiles[1], 100+0.99*100)
	near("median e2el", s.E2EL.Median, 225)
	if recs[1].TPOT() != 0 {
		t.Error("a one-token request has a TPOT")
	}
}

// Goodput: each objective set must hold; TPOT counts too.
func TestGoodputNeedsEveryObjective(t *testing.T) {
	r := Record{TTFT: 10 * time.Millisecond, Latency: 110 * time.Millisecond, OutputLen: 11} // TPOT 10 ms
	for _, c := range []struct {
		slo  SLO
		good bool
	}{
		{SLO{TTFT: 10}, true}, {SLO{TTFT: 9.9}, false}, {SLO{TPOT: 10}, true}, {SLO{TPOT: 9}, false},
		{SLO{E2EL: 110, TTFT: 20}, true}, {SLO{E2EL: 100, TTFT: 20}, false},
	} {
		if got := c.slo.good(&r); got != c.good {
			t.Errorf("%+v good = %v, want %v", c.slo, got, c.good)
		}
	}
}
