package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stride-lm/stride/model"
)

// TestSpeculativePoolAccounting: over random batches of repetitive and
// random prompts, sampled and greedy, on pools from tight (preempting) to
// roomy, with and without prefix sharing, after every step: the cache's
// invariants hold (kvcache.Cache.CheckConsistency: reference counts,
// free list, prefix index), every running sequence's context length is
// exactly the positions it keeps (no rejected draft's slot left behind)
// and its table has exactly the blocks that length needs (the blocks of
// rejected drafts went back to the pool); the used blocks never exceed
// the pool; a block shared by several tables at the end of two
// consecutive steps kept its K/V unchanged in between (a shared block is
// never written: the cache copies it first); and when the run ends every
// block is free again.
func TestSpeculativePoolAccounting(t *testing.T) {
	m := tinyGQA(t)
	r := rand.New(rand.NewPCG(8, 9))
	totalShared, totalPreempt := 0, 0
	defer func() {
		if !t.Failed() && (totalShared == 0 || totalPreempt == 0) {
			t.Errorf("%d shared-block checks and %d preemptions: the sharing or preemption paths went untested", totalShared, totalPreempt)
		}
	}()
	for trial := 0; trial < 12; trial++ {
		bs := []int{2, 4, 8}[trial%3]
		// Prompts cut from one periodic base (with some random tokens),
		// so they share prefixes and recur n-grams.
		base := []int{model.BOSID}
		period := 1 + r.IntN(5)
		for j := 0; j < 48; j++ {
			if r.IntN(5) == 0 {
				base = append(base, 2+r.IntN(60))
			} else {
				base = append(base, 2+(j%period)*7)
			}
		}
		var specs []reqSpec
		for i := 0; i < 3+r.IntN(5); i++ {
			p := append([]int(nil), base[:2+r.IntN(46)]...)
			temp := float32(0)
			if r.IntN(2) == 0 {
				temp = 0.8
			}
			specs = append(specs, reqSpec{prompt: p, steps: len(p) + 10 + r.IntN(40), temperature: temp, seed: uint64(trial*100 + i)})
		}
		most := 0
		for _, sp := range specs {
			most = max(most, sp.steps)
		}
		// Room for the longest request alone and a few blocks more: the
		// others preempt each other.
		opts := Options{BlockSize: bs, NumBlocks: (most+bs-1)/bs + 1 + r.IntN(4), DisablePrefixSharing: trial%4 == 3,
			Speculation: Speculation{Method: "ngram", Draft: 1 + r.IntN(6), always: true}}
		t.Run(fmt.Sprintf("trial %d: block %d, %d blocks, draft %d", trial, bs, opts.NumBlocks, opts.Speculation.Draft), func(t *testing.T) {
			e := newEngine(t, m, opts)
			c := e.Cache()
			checks, sharedChecked := 0, 0
			k0, _ := c.Layer(0)
			kv := k0.Storage().Float32s()
			blockElems := len(kv) / c.NumBlocks()
			shared := map[int][]float32{} // block → its K at the last check, while shared
			lastVerify := map[int]int{}
			e.afterStep = func(s *scheduler) error {
				checks++
				if err := c.CheckConsistency(); err != nil {
					return err
				}
				now := map[int][]float32{}
				for b := 0; b < c.NumBlocks(); b++ {
					if ref, _ := c.RefCount(b); ref < 2 {
						continue
					}
					cur := kv[b*blockElems : (b+1)*blockElems]
					if old, ok := shared[b]; ok {
						sharedChecked++
						if !slices.Equal(old, cur) {
							return fmt.Errorf("block %d was written while shared", b)
						}
					}
					now[b] = slices.Clone(cur)
				}
				shared = now
				for _, q := range s.running {
					n, err := c.ContextLen(q.id)
					if err != nil {
						return err
					}
					if n != q.computed {
						return fmt.Errorf("sequence %d: cache holds %d positions, the scheduler keeps %d", q.idx, n, q.computed)
					}
					table, err := c.BlockTable(q.id)
					if err != nil {
						return err
					}
					// After a verify step the table holds exactly the blocks
					// of the kept positions. (Otherwise it may also hold the
					// blocks AddSequence reserved for tokens a readmitted
					// sequence is replaying, never more.)
					want := (n + bs - 1) / bs
					verified := q.res.VerifySteps > lastVerify[q.idx]
					lastVerify[q.idx] = q.res.VerifySteps
					if verified && len(table) != want || len(table) < want || len(table) > (len(q.tokens)+bs-1)/bs {
						return fmt.Errorf("sequence %d (verified this step: %v): %d blocks for %d positions of block size %d and %d tokens",
							q.idx, verified, len(table), n, bs, len(q.tokens))
					}
				}
				if st := c.Stats(); st.UsedBlocks > c.NumBlocks() {
					return fmt.Errorf("%d blocks used of %d", st.UsedBlocks, c.NumBlocks())
				}
				return nil
			}
			res, st, err := e.Generate(build(specs, m.Config.VocabSize), nil)
			if err != nil {
				t.Fatal(err)
			}
			for i, rr := range res {
				if rr.Err != nil {
					t.Fatalf("seq %d: %v", i, rr.Err)
				}
			}
			if got := c.FreeBlocks(); got != c.NumBlocks() {
				t.Fatalf("blocks leaked: %d of %d free", got, c.NumBlocks())
			}
			if !opts.DisablePrefixSharing {
				totalShared += sharedChecked
			}
			totalPreempt += st.Preemptions
			if checks != st.Steps || st.DraftTokens == 0 || st.AcceptedTokens == st.DraftTokens {
				t.Fatalf("%d checks for %d steps; drafted %d, accepted %d: rejections went untested", checks, st.Steps, st.DraftTokens, st.AcceptedTokens)
			}
			t.Logf("%d steps, %d preemptions, drafted %d, accepted %d, %d shared-block checks", st.Steps, st.Preemptions, st.DraftTokens, st.AcceptedTokens, sharedChecked)
		})
	}
}
