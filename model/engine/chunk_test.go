package engine

import (
	"fmt"
	"testing"

	"github.com/stride-lm/stride/tensor"
)

// TestChunkedPrefillEqualsAlone: with a per-step token budget, prompts
// are computed over several steps between the other sequences' decode
// steps, each step's prefill within what the decodes leave of the budget
// (or one aligned chunk), and every sequence's logits are still bit for
// bit those it produces alone, unchunked: on both paths, every KV dtype,
// with prefix hits and preemption.
func TestChunkedPrefillEqualsAlone(t *testing.T) {
	m := tinyGQA(t)
	// The mixed prompts share prefixes; a long one of its own is
	// computed in several chunks whatever the prefix hits.
	long := []int{1}
	for i := 1; i < 70; i++ {
		long = append(long, 3+(i*13)%60)
	}
	reqs := append(mixedRequests(), reqSpec{prompt: long, steps: 90, temperature: 0.9, seed: 77})
	for _, kv := range []tensor.DType{tensor.F32, tensor.F16, tensor.BF16} {
		for _, path := range []string{"fused", "naive"} {
			want := alone(t, m, Options{Path: path, KVDType: kv}, reqs)
			for _, tc := range []struct {
				name string
				opts Options
			}{
				{"budget 1", Options{BlockSize: 4, MaxBatchedTokens: 1}},
				{"budget 20", Options{BlockSize: 4, MaxBatchedTokens: 20}},
				{"budget 40, tight pool", Options{BlockSize: 4, NumBlocks: 24, MaxBatchedTokens: 40}},
				{"budget 16, no sharing", Options{BlockSize: 8, MaxBatchedTokens: 16, DisablePrefixSharing: true}},
			} {
				t.Run(fmt.Sprintf("%v/%s/%s", kv, path, tc.name), func(t *testing.T) {
					opts := tc.opts
					opts.Path, opts.KVDType = path, kv
					chunked := 0
					check := func(s *scheduler) error {
						decodes, prefill := 0, 0
						for _, q := range s.running {
							if q.computed > 0 && q.computed < len(q.req.Prompt) {
								chunked++ // stopped mid-prompt after a step
							}
							if q.chunk > 0 && q.computed <= len(q.req.Prompt) && q.chunk > 1 {
								prefill += q.chunk
							} else {
								decodes += q.chunk
							}
						}
						if limit := max(opts.MaxBatchedTokens-decodes, s.e.chunkAlign); prefill > limit {
							return fmt.Errorf("step prefilled %d tokens, budget leaves %d", prefill, limit)
						}
						return nil
					}
					got := generateChecked(t, m, opts, reqs, check)
					sameAsAlone(t, got, want)
					if chunked == 0 {
						t.Fatal("no prompt was split across steps: chunking went untested")
					}
				})
			}
		}
	}
}

// TestChunkBudgetValidated: a negative budget is an error naming it.
func TestChunkBudgetValidated(t *testing.T) {
	if _, err := New(tinyGQA(t), Options{MaxBatchedTokens: -1}); err == nil {
		t.Fatal("max_batched_tokens -1: no error")
	}
}
