package engine

import "time"

// DefaultPrefillStall is the servers' default Options.PrefillStall: while
// streams decode, a step's prefill may take about this many of their
// decode steps' time. docs/serving.md gives the measurement behind it.
const DefaultPrefillStall = 2.0

// costAlpha is the weight of the newest step in the step-cost averages:
// about the last eight steps count.
const costAlpha = 0.25

// stepCost is the scheduler's running estimate of what a step costs, in
// wall-clock nanoseconds, from the steps it ran: an exponentially
// weighted moving average of the steps that computed decode rows only,
// and of the marginal time of one prefill token. A step's time is taken
// as a + b·prefillTokens, where a is the step its decode rows alone
// would take (the decode average, covering the step's fixed costs) and b
// the per-token cost; a step with prefill tokens gives one sample of b,
// its time less the decode average (less nothing when no stream
// decodes), over its prefill tokens. 0 means not measured yet.
type stepCost struct {
	decode, perToken float64
}

// observe folds one step into the averages: wall is its forward pass's
// time, prefill the prompt tokens it computed and decodes its decode rows
// (with drafts).
func (c *stepCost) observe(wall time.Duration, prefill, decodes int) {
	dt := float64(wall)
	if prefill == 0 {
		if decodes > 0 {
			c.decode = ewma(c.decode, dt)
		}
		return
	}
	marginal := dt
	if decodes > 0 {
		// A decode average that exceeds this step's time is noise (or a
		// larger batch than now); a sixteenth of the step keeps the
		// sample positive and errs toward a smaller chunk next time.
		marginal = max(dt-c.decode, dt/16)
	}
	c.perToken = ewma(c.perToken, marginal/float64(prefill))
}

// ewma is the moving average after sample x; the first sample is taken
// as it is.
func ewma(avg, x float64) float64 {
	if avg == 0 {
		return x
	}
	return avg + costAlpha*(x-avg)
}

// prefillCap is the chunk rule: how many prefill tokens a step may carry
// beside running decodes so that they cost about k decode steps,
// k·decode/perToken, rounded down to a multiple of align and never below
// align (one aligned chunk: a prompt always advances, and chunks stay
// whole multiples of the alignment, so chunking never changes the bits).
// Before both costs are measured it is align, a probe that measures the
// per-token cost. 0 means no cap: k is 0 (the rule is off).
func prefillCap(k float64, c stepCost, align int) int {
	if k <= 0 {
		return 0
	}
	if c.decode <= 0 || c.perToken <= 0 {
		return align
	}
	n := k * c.decode / c.perToken
	if n >= float64(1<<30) {
		return 1 << 30 / align * align
	}
	return max(int(n)/align*align, align)
}
