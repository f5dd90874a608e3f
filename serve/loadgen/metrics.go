package loadgen

import (
	"math"
	"slices"
	"strconv"
	"time"
)

// Record is what one request measured, on the client's clock.
type Record struct {
	// Index is the request's place in the dataset.
	Index int
	// Start is when the request was sent, from the start of the run.
	Start time.Duration
	// TTFT is the time from sending to the first chunk with non-empty
	// content (the whole latency when no content came).
	TTFT time.Duration
	// ITL are the gaps between consecutive content chunks.
	ITL []time.Duration
	// Latency is the time from sending to the end of the stream (E2EL).
	Latency time.Duration
	// PromptLen and OutputLen are the stream's usage: prompt_tokens and
	// completion_tokens.
	PromptLen, OutputLen int
	// Text is the generated text.
	Text string
	// Status is "" for a request that succeeded, else why it failed: the
	// HTTP status code ("503"), "stream error", "missing usage",
	// "cancelled" or "error" (no answer: connection refused, reset).
	Status string
	// Err is the failure's message.
	Err string
}

// OK reports whether the request succeeded.
func (r *Record) OK() bool { return r.Status == "" }

// TPOT is the time per output token after the first:
// (latency − TTFT) / (output tokens − 1), and 0 for one output token
// or none (vLLM's definition).
func (r *Record) TPOT() time.Duration {
	if r.OutputLen <= 1 {
		return 0
	}
	return (r.Latency - r.TTFT) / time.Duration(r.OutputLen-1)
}

// SLO is a goodput objective in milliseconds per metric (0: none). A
// request is good when every objective set holds: TTFT, TPOT and E2EL
// each at most its bound, as vLLM's --goodput counts.
type SLO struct {
	TTFT, TPOT, E2EL float64
}

// Set reports whether any objective is set.
func (s SLO) Set() bool { return s.TTFT > 0 || s.TPOT > 0 || s.E2EL > 0 }

// good reports whether r meets every objective of s.
func (s SLO) good(r *Record) bool {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return (s.TTFT <= 0 || ms(r.TTFT) <= s.TTFT) &&
		(s.TPOT <= 0 || ms(r.TPOT()) <= s.TPOT) &&
		(s.E2EL <= 0 || ms(r.Latency) <= s.E2EL)
}

// Stats is one latency metric over a run, in milliseconds: mean,
// median, population standard deviation and the asked percentiles (in
// the order asked), as numpy computes them. An empty metric is all zero,
// as in vLLM.
type Stats struct {
	Mean, Median, Std float64
	Percentiles       []float64
}

// Summary is a run's aggregate metrics, vLLM's.
type Summary struct {
	Duration              time.Duration
	Completed, Failed     int
	FailedByStatus        map[string]int
	TotalInputTokens      int
	TotalOutputTokens     int
	RequestThroughput     float64 // completed requests per second
	RequestGoodput        float64 // good requests per second (with an SLO)
	OutputThroughput      float64 // output tokens per second
	TotalTokenThroughput  float64 // input and output tokens per second
	TTFT, TPOT, ITL, E2EL Stats
	PercentilesAsked      []float64
	SLO                   SLO
	GoodCompleted         int
}

// Summarize computes a run's metrics from its records and its duration
// (from the first send to the last answer), with vLLM's definitions:
// token counts and latencies over the requests that succeeded, TPOT over
// those with more than one output token, ITL over every gap of every
// successful request, throughputs over the whole duration.
func Summarize(recs []Record, duration time.Duration, percentiles []float64, slo SLO) Summary {
	s := Summary{Duration: duration, FailedByStatus: map[string]int{}, PercentilesAsked: percentiles, SLO: slo}
	var ttft, tpot, itl, e2el []float64
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for i := range recs {
		r := &recs[i]
		if !r.OK() {
			s.Failed++
			s.FailedByStatus[r.Status]++
			continue
		}
		s.Completed++
		s.TotalInputTokens += r.PromptLen
		s.TotalOutputTokens += r.OutputLen
		ttft = append(ttft, ms(r.TTFT))
		if r.OutputLen > 1 {
			tpot = append(tpot, ms(r.TPOT()))
		}
		for _, g := range r.ITL {
			itl = append(itl, ms(g))
		}
		e2el = append(e2el, ms(r.Latency))
		if slo.Set() && slo.good(r) {
			s.GoodCompleted++
		}
	}
	if sec := duration.Seconds(); sec > 0 {
		s.RequestThroughput = float64(s.Completed) / sec
		s.RequestGoodput = float64(s.GoodCompleted) / sec
		s.OutputThroughput = float64(s.TotalOutputTokens) / sec
		s.TotalTokenThroughput = float64(s.TotalInputTokens+s.TotalOutputTokens) / sec
	}
	s.TTFT = stats(ttft, percentiles)
	s.TPOT = stats(tpot, percentiles)
	s.ITL = stats(itl, percentiles)
	s.E2EL = stats(e2el, percentiles)
	return s
}

// stats computes a metric's Stats; xs is reordered.
func stats(xs []float64, percentiles []float64) Stats {
	slices.Sort(xs)
	st := Stats{Mean: Mean(xs), Median: Percentile(xs, 50), Std: Std(xs)}
	for _, p := range percentiles {
		st.Percentiles = append(st.Percentiles, Percentile(xs, p))
	}
	return st
}

// Mean is the arithmetic mean, 0 for no values.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// Std is the population standard deviation (numpy's np.std), 0 for no
// values.
func Std(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	m := Mean(xs)
	var s float64
	for _, x := range xs {
		s += (x - m) * (x - m)
	}
	return math.Sqrt(s / float64(len(xs)))
}

// Percentile is the p-th percentile (0 ≤ p ≤ 100) of sorted values with
// linear interpolation between the closest ranks (numpy's default), 0
// for no values.
func Percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := p / 100 * float64(n-1)
	lo := int(math.Floor(rank))
	hi := int(math.Ceil(rank))
	if lo < 0 {
		lo = 0
	}
	if hi > n-1 {
		hi = n - 1
	}
	return sorted[lo] + (sorted[hi]-sorted[lo])*(rank-float64(lo))
}

// PercentileName is how vLLM names a percentile in its keys: "99" for
// 99, "99.9" for 99.9.
func PercentileName(p float64) string { return strconv.FormatFloat(p, 'f', -1, 64) }
