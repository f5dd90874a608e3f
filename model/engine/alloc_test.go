package engine

import (
	"github.com/stride-lm/stride/model"

	"fmt"
	"testing"
)

// Generate's steady decode allocates nothing per token: the step's batch,
// token, position, row and slot slices are reused (the cache appends the
// slots straight into the batch), each sequence's block table is refetched
// into its own buffer, the token and result slices are sized for Steps
// when the request is accepted, and the cache's bookkeeping for the
// sequence is reserved on admission (kvcache.Cache.Reserve). What a
// request costs up front (its state, results, samplers' buffers, the
// prefill) is the same for N and 2N tokens, so the difference between
// the two runs is the decode loop's own allocations: 0, for one sequence
// and for three decoding together, on one thread and on two (the kernels
// and matmuls dispatched to the pool).
func TestGenerateSteadyDecodeAllocatesNothing(t *testing.T) {
	m := tinyGQA(t)
	// Seeds whose samples avoid BOS for 90 tokens after these prompts, so
	// every request runs its full length (checked below).
	seeds := []uint64{7, 4, 9}
	for _, threads := range []int{1, 2} {
		for _, nreq := range []int{1, 3} {
			t.Run(fmt.Sprintf("threads=%d/requests=%d", threads, nreq), func(t *testing.T) {
				e := newEngine(t, m, Options{Path: "fused", Threads: threads, BlockSize: 16})
				gen := func(steps int) float64 {
					return testing.AllocsPerRun(4, func() {
						reqs := make([]Request, nreq)
						for i := range reqs {
							reqs[i] = Request{Prompt: []int{model.BOSID, 5, 6 + i}, Steps: steps - 3*i,
								Sampler: model.NewSampler(m.Config.VocabSize, 0.8, 0.9, seeds[i])}
						}
						res, _, err := e.Generate(reqs, nil)
						if err != nil {
							t.Fatal(err)
						}
						for i, r := range res {
							if r.Err != nil || len(r.Tokens) != steps-3*i {
								t.Fatalf("request %d: %d tokens (err %v), want %d: the seed samples BOS", i, len(r.Tokens), r.Err, steps-3*i)
							}
						}
					})
				}
				const n = 40 // 2N = 80 crosses two more KV blocks per sequence
				short, long := gen(n), gen(2*n)
				if long != short {
					t.Fatalf("%v allocations for %d tokens per request, %v for %d: %.3f per extra decode token, want 0",
						short, n, long, 2*n, (long-short)/float64(nreq*n))
				}
			})
		}
	}
}
