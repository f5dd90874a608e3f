package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/stride-lm/stride/tensor"
)

// TestPrefillCap: the chunk rule as a pure function of k, the measured
// costs and the alignment.
func TestPrefillCap(t *testing.T) {
	ms := float64(time.Millisecond)
	for _, tc := range []struct {
		k     float64
		cost  stepCost
		align int
		want  int
	}{
		{0, stepCost{decode: ms, perToken: ms / 100}, 16, 0},          // off
		{2, stepCost{}, 16, 16},                                       // nothing measured: one aligned chunk
		{2, stepCost{decode: ms}, 16, 16},                             // per-token cost not measured yet
		{2, stepCost{perToken: ms / 100}, 16, 16},                     // decode cost not measured yet
		{2, stepCost{decode: ms, perToken: ms / 100}, 16, 192},        // 200 tokens, rounded down to 12 chunks
		{2, stepCost{decode: ms, perToken: ms / 100}, 32, 192},        // 6 chunks of 32
		{3, stepCost{decode: 0.98 * ms, perToken: 0.11 * ms}, 16, 16}, // stories-class: 26.7 tokens → 16
		{4, stepCost{decode: 0.98 * ms, perToken: 0.11 * ms}, 16, 32}, // 35.6 → 32
		{1, stepCost{decode: ms, perToken: 10 * ms}, 16, 16},          // a tenth of a token: still one chunk
		{1, stepCost{decode: ms, perToken: 1e-9}, 16, 1 << 30},        // free prefill: no practical cap
	} {
		if got := prefillCap(tc.k, tc.cost, tc.align); got != tc.want {
			t.Errorf("prefillCap(%v, %+v, %d) = %d, want %d", tc.k, tc.cost, tc.align, got, tc.want)
		}
	}
}

// TestStepCostObserve: decode-only steps feed the decode average, steps
// with prefill the per-token cost net of that average, and the averages
// weigh the newest step by costAlpha.
func TestStepCostObserve(t *testing.T) {
	var c stepCost
	c.observe(0, 0, 0) // an empty step teaches nothing
	if c != (stepCost{}) {
		t.Fatalf("empty step: %+v", c)
	}
	c.observe(1000, 0, 8)
	c.observe(2000, 0, 8)
	if want := 1000 + costAlpha*1000; c.decode != want {
		t.Fatalf("decode average %v, want %v", c.decode, want)
	}
	c.observe(100000, 100, 0) // prefill alone: its whole time, per token
	if c.perToken != 1000 {
		t.Fatalf("per-token %v after a pure prefill step, want 1000", c.perToken)
	}
	c.decode = 1000
	c.observe(1000+100*3000, 100, 8) // mixed: less the decode average
	if want := 1000 + costAlpha*2000; c.perToken != want {
		t.Fatalf("per-token %v after a mixed step, want %v", c.perToken, want)
	}
	c = stepCost{decode: 5000}
	c.observe(1600, 1, 8) // faster than the decode average: a sixteenth of the step
	if c.perToken != 100 {
		t.Fatalf("per-token %v from a step under the decode average, want 100", c.perToken)
	}
}

// TestPrefillStallEqualsAlone: with the chunk rule on (fixed step costs
// injected after every step, so the chunks are deterministic), a step
// beside decodes prefills at most the rule's cap, a step with no decode
// the token budget, prompts are split, and every logit is the bits of
// the unchunked run alone.
func TestPrefillStallEqualsAlone(t *testing.T) {
	m := tinyGQA(t)
	long := []int{1}
	for i := 1; i < 70; i++ {
		long = append(long, 3+(i*13)%60)
	}
	reqs := append(mixedRequests(), reqSpec{prompt: long, steps: 90, temperature: 0.9, seed: 77})
	cost := stepCost{decode: float64(time.Millisecond), perToken: float64(time.Millisecond) / 5} // 5 tokens a decode step
	for _, kv := range []tensor.DType{tensor.F32, tensor.BF16} {
		for _, path := range []string{"fused", "naive"} {
			want := alone(t, m, Options{Path: path, KVDType: kv}, reqs)
			for _, tc := range []struct {
				name string
				opts Options
			}{
				{"no budget, k 2", Options{BlockSize: 4, PrefillStall: 2}},
				{"budget 40, k 3", Options{BlockSize: 4, MaxBatchedTokens: 40, PrefillStall: 3}},
				{"budget 64, k 1, tight pool", Options{BlockSize: 4, NumBlocks: 24, MaxBatchedTokens: 64, PrefillStall: 1}},
			} {
				t.Run(fmt.Sprintf("%v/%s/%s", kv, path, tc.name), func(t *testing.T) {
					opts := tc.opts
					opts.Path, opts.KVDType = path, kv
					chunked, capped := 0, 0
					check := func(s *scheduler) error {
						decodes, prefill := 0, 0
						for _, q := range s.running {
							if q.computed > 0 && q.computed < len(q.req.Prompt) {
								chunked++
							}
							if q.chunk > 1 {
								prefill += q.chunk
							} else {
								decodes += q.chunk
							}
						}
						budget := 1 << 30
						if opts.MaxBatchedTokens > 0 {
							budget = opts.MaxBatchedTokens - decodes
						}
						if decodes > 0 {
							budget = min(budget, prefillCap(opts.PrefillStall, cost, s.e.chunkAlign))
							capped++
						}
						if limit := max(budget, s.e.chunkAlign); prefill > limit {
							return fmt.Errorf("step prefilled %d tokens beside %d decodes, the rule leaves %d", prefill, decodes, limit)
						}
						s.cost = cost // the next step plans with these costs, whatever the clock said
						return nil
					}
					got := generateChecked(t, m, opts, reqs, check)
					sameAsAlone(t, got, want)
					if chunked == 0 || capped == 0 {
						t.Fatalf("chunked %d, capped %d: the rule went untested", chunked, capped)
					}
				})
			}
		}
	}
}

// TestPrefillStallValidated: a negative or NaN stall is an error naming it.
func TestPrefillStallValidated(t *testing.T) {
	zero := 0.0
	for _, k := range []float64{-1, zero / zero} {
		if _, err := New(tinyGQA(t), Options{PrefillStall: k}); err == nil {
			t.Fatalf("max_prefill_stall %v: no error", k)
		}
	}
}

// TestPlanStall: plan applies the rule only while a stream decodes. A
// 200-token prompt alone gets the token budget (or all of it without
// one); beside a decoding stream it gets the rule's cap, or what the
// budget leaves if that is less; with the rule off, the budget's aligned
// rest. Costs are set directly: 1 ms a decode step, 0.1 ms a token.
func TestPlanStall(t *testing.T) {
	m := tinyGQA(t)
	ms := float64(time.Millisecond)
	cost := stepCost{decode: ms, perToken: ms / 10}
	prompt := make([]int, 200)
	for _, tc := range []struct {
		name   string
		budget int
		k      float64
		decode bool
		want   func(align int) int
	}{
		{"alone, budget 256", 256, 2, false, func(int) int { return 200 }},
		{"alone, no budget", 0, 2, false, func(int) int { return 200 }},
		{"alone, budget 64", 64, 2, false, func(a int) int { return 64 / a * a }},
		{"beside a decode, k 2", 256, 2, true, func(a int) int { return max(20/a*a, a) }},
		{"beside a decode, k 8, no budget", 0, 8, true, func(a int) int { return max(80/a*a, a) }},
		{"beside a decode, k 8, budget 33", 33, 8, true, func(a int) int { return max(32/a*a, a) }},
		{"beside a decode, off", 128, 0, true, func(a int) int { return 127 / a * a }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, m, Options{BlockSize: 4, MaxBatchedTokens: tc.budget, PrefillStall: tc.k})
			s := newScheduler(e)
			s.cost = cost
			long := &seqState{req: Request{Prompt: prompt}, tokens: prompt}
			s.running = []*seqState{long}
			if tc.decode {
				d := &seqState{req: Request{Prompt: prompt[:3]}, tokens: prompt[:5], computed: 4}
				s.running = []*seqState{d, long}
			}
			s.plan()
			if want := tc.want(e.chunkAlign); long.chunk != want {
				t.Fatalf("prompt chunk %d (align %d), want %d", long.chunk, e.chunkAlign, want)
			}
		})
	}
}
