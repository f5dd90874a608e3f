package engine

import (
	"context"
	"fmt"
	"strconv"

	"github.com/stride-lm/stride/tensor/kernels"
)

// BenchTest is one llama-bench test: ppN processes an N-token prompt in
// one batched prefill; tgN decodes N tokens after BOS.
type BenchTest struct {
	Gen bool // tgN when set, ppN otherwise
	N   int
}

// ParseBenchTest reads "ppN" or "tgN" with N ≥ 1.
func ParseBenchTest(s string) (BenchTest, error) {
	if len(s) < 3 || (s[:2] != "pp" && s[:2] != "tg") {
		return BenchTest{}, fmt.Errorf("%q is not ppN or tgN", s)
	}
	n, err := strconv.Atoi(s[2:])
	if err != nil || n < 1 {
		return BenchTest{}, fmt.Errorf("%q is not ppN or tgN with N >= 1", s)
	}
	return BenchTest{Gen: s[:2] == "tg", N: n}, nil
}

// String is the test's name, "pp512" or "tg128".
func (t BenchTest) String() string {
	if t.Gen {
		return "tg" + strconv.Itoa(t.N)
	}
	return "pp" + strconv.Itoa(t.N)
}

// BenchCase is one row of a benchmark: a test run on an engine, with
// Batch sequences decoding together (tg tests), and what its measured
// runs gave.
type BenchCase struct {
	Engine *Engine
	Test   BenchTest
	Batch  int
	// Label names what ran in the report's row (BenchRows).
	Label BenchLabel
	// Greedy makes a tg case decode at temperature 0 instead of
	// sampling at 1: n-gram drafts, checked against the argmax, pay on
	// greedy text that repeats itself, and rarely on sampled text.
	Greedy bool
	// Rates are the tokens/s of the measured runs, and Bandwidths the
	// read bandwidth (GB/s) measured before each one's round (none
	// without a probe).
	Rates, Bandwidths []float64
	// speculation counts summed over the measured runs
	drafted, accepted, tokens, seqSteps int
}

// run is one run of the case: its tokens/s, and with measured set its
// speculation counts are added to the case's.
func (c *BenchCase) run(measured bool) (float64, error) {
	if !c.Test.Gen {
		return c.Engine.BenchPromptRun(c.Test.N)
	}
	rate, st, err := c.Engine.BenchGenerateRunStats(c.Test.N, c.Batch, c.Greedy)
	if measured {
		// A sequence-step is one sequence's share of a step: a decode
		// row, or a verify step of 1+d rows.
		c.drafted += st.DraftTokens
		c.accepted += st.AcceptedTokens
		c.tokens += st.DecodeTokens + st.PrefillTokens - st.DraftTokens + st.AcceptedTokens
		c.seqSteps += st.DecodeTokens + st.PrefillTokens - st.DraftTokens
	}
	return rate, err
}

// RunBench measures cases the way llama-bench does, interleaved: round 0
// runs every case once as the warm-up (caches, buffers, page faults), and
// rounds 1…reps run every case once more each, so a shared machine's
// slow drift in speed touches all cases alike. Before each measured
// round probe, when not nil, measures the read bandwidth. ctx is checked
// between runs, and done, when not nil, is called after every run with
// the round and the runs finished so far. It returns the bandwidth of
// each measured round and the error that stopped it, if any; the rates
// measured so far stay in the cases.
func RunBench(ctx context.Context, cases []*BenchCase, reps int, probe *BandwidthProbe, done func(round, runs int)) ([]float64, error) {
	var bws []float64
	runs := 0
	for round := 0; round <= reps; round++ {
		var bw float64
		if probe != nil && round > 0 {
			bw = probe.Measure()
			bws = append(bws, bw)
		}
		for _, c := range cases {
			if err := ctx.Err(); err != nil {
				return bws, err
			}
			rate, err := c.run(round > 0)
			if err != nil {
				return bws, err
			}
			if round > 0 {
				c.Rates = append(c.Rates, rate)
				c.Bandwidths = append(c.Bandwidths, bw)
			}
			runs++
			if done != nil {
				done(round, runs)
			}
		}
	}
	return bws, nil
}

// BenchResult summarizes a case's measured runs.
type BenchResult struct {
	BenchStat
	// The roofline (tg cases measured with a probe): the bytes one
	// decode row reads, the mean bandwidth of the rounds, and the mean
	// fraction of it the rate reached, each run against its own round.
	BytesPerToken int64
	BandwidthGBs  float64
	Roofline      float64
	// Speculation (tg cases on a speculating engine): accepted/drafted
	// tokens, and tokens generated per sequence-step.
	AcceptRate    float64
	TokensPerStep float64
}

// Result summarizes the case's measured runs; it needs at least one.
func (c *BenchCase) Result() BenchResult {
	r := BenchResult{BenchStat: benchStat(c.Rates)}
	if c.Test.Gen && len(c.Bandwidths) > 0 && c.Bandwidths[0] > 0 {
		// Per decode row: the weights are read once per step and shared
		// by the batch's rows; each row reads its own K/V at the average
		// context N/2.
		r.BytesPerToken = c.Engine.WeightBytes()/int64(c.Batch) + int64(c.Test.N/2)*c.Engine.cache.BytesPerToken()
		for i, rate := range c.Rates {
			r.BandwidthGBs += c.Bandwidths[i] / float64(len(c.Rates))
			r.Roofline += float64(r.BytesPerToken) * rate / (c.Bandwidths[i] * 1e9) / float64(len(c.Rates))
		}
	}
	if c.Test.Gen && c.Engine.spec.On() && c.seqSteps > 0 {
		if c.drafted > 0 {
			r.AcceptRate = float64(c.accepted) / float64(c.drafted)
		}
		r.TokensPerStep = float64(c.tokens) / float64(c.seqSteps)
	}
	return r
}

// BandwidthProbe measures the machine's read bandwidth with a streaming
// sum over its own buffer and worker pool (the roofline a decode step's
// rate is compared with).
type BandwidthProbe struct {
	probe *kernels.BandwidthProbe
	pool  *kernels.Pool
}

// NewBandwidthProbe allocates a probe of size bytes (several times the
// last-level cache, to measure DRAM) read by threads workers. Close it.
func NewBandwidthProbe(threads, size int) *BandwidthProbe {
	return &BandwidthProbe{probe: kernels.NewBandwidthProbe(size), pool: kernels.NewPool(threads)}
}

// Measure returns the read bandwidth in GB/s, the best of three passes.
func (b *BandwidthProbe) Measure() float64 { return b.probe.Measure(b.pool, 3) }

// Threads is the number of workers reading.
func (b *BandwidthProbe) Threads() int { return b.pool.Threads() }

// Close stops the probe's workers.
func (b *BandwidthProbe) Close() { b.pool.Close() }
