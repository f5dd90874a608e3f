package kvcache

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/stride-lm/stride/tensor"
)

// The property test drives a Cache with a random workload — arrivals with
// shared prompt prefixes, interleaved prefills, multi-token decode steps,
// lagging commits, forks, truncations, frees, pool exhaustion — and after
// every step checks, from outside the cache:
//
//   - no block is both free and in use, and every block's reference count
//     is the number of live block tables holding it;
//   - Stats agrees with the tables (used, shared, free blocks);
//   - every live sequence reads, through its block table, exactly the K/V
//     its own tokens produced at every position (so no sharing, copy-on-
//     write or eviction ever hands it another prefix's data);
//   - a failed call (ErrOutOfBlocks) changed nothing;
//
// and when all sequences are freed, every block is free again.
//
// The synthetic K/V of a position is a function of the whole token prefix
// up to it, as in a causal transformer: two sequences agree at position p
// only if they agree on tokens 0 … p.

// prefixValues returns, per position, a hash of tokens[0..p].
func prefixValues(tokens []int) []uint32 {
	out := make([]uint32, len(tokens))
	h := uint32(2166136261)
	for i, t := range tokens {
		h ^= uint32(t) + 0x9e37
		h *= 16777619
		out[i] = h
	}
	return out
}

// kvOf is element i of layer l's K (or V) for a prefix hash: an integer
// below 2^22, exact in float32.
func kvOf(h uint32, l, i int, isV bool) float32 {
	x := float32((h ^ uint32(l*7919+i*131)) % (1 << 22))
	if isV {
		return -x - 1
	}
	return x
}

type workSeq struct {
	tokens  []int // tokens of positions 0 … ctx-1 (and the pending prompt)
	pending bool  // prompt registered, not yet computed
}

type workload struct {
	t      *testing.T
	c      *Cache
	r      *rand.Rand
	seqs   map[int]*workSeq
	nextID int
	fams   [][]int
	vocab  int
	shared bool // other goroutines use the cache too: global stats move
	oom    int  // ErrOutOfBlocks answers seen
}

func (w *workload) write(id int, tokens []int, start int, slots []int32) {
	L := w.c.Layout()
	width := L.NumKVHeads * L.HeadDim
	hv := prefixValues(tokens)
	for l := 0; l < w.c.Config().NumLayers; l++ {
		kd := make([]float32, len(slots)*width)
		vd := make([]float32, len(slots)*width)
		for j := range slots {
			for i := 0; i < width; i++ {
				kd[j*width+i] = kvOf(hv[start+j], l, i, false)
				vd[j*width+i] = kvOf(hv[start+j], l, i, true)
			}
		}
		key := must(tensor.FromFloat32(nil, tensor.F32, kd, len(slots), L.NumKVHeads, L.HeadDim))
		val := must(tensor.FromFloat32(nil, tensor.F32, vd, len(slots), L.NumKVHeads, L.HeadDim))
		if err := w.c.Write(l, key, val, slots); err != nil {
			w.t.Errorf("sequence %d: write: %v", id, err)
		}
	}
}

// verify reads every position of sequence id back through its table.
func (w *workload) verify(id int) error {
	s := w.seqs[id]
	n := must(w.c.ContextLen(id))
	table := must(w.c.BlockTable(id))
	hv := prefixValues(s.tokens)
	L := w.c.Layout()
	for pos := 0; pos < n; pos++ {
		slot, err := L.Slot(table, pos)
		if err != nil {
			return err
		}
		for l := 0; l < w.c.Config().NumLayers; l++ {
			kc, vc := w.c.Layer(l)
			kf, vf := kc.Storage().Float32s(), vc.Storage().Float32s()
			for i := 0; i < L.TokenStride(); i++ {
				o := int(slot)*L.TokenStride() + i
				if kf[o] != kvOf(hv[pos], l, i, false) || vf[o] != kvOf(hv[pos], l, i, true) {
					return fmt.Errorf("sequence %d position %d layer %d element %d: K %g V %g, want %g %g (table %v)",
						id, pos, l, i, kf[o], vf[o], kvOf(hv[pos], l, i, false), kvOf(hv[pos], l, i, true), table)
				}
			}
		}
	}
	return nil
}

func (w *workload) ids() []int {
	ids := make([]int, 0, len(w.seqs))
	for id := range w.seqs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (w *workload) pick() (int, bool) {
	ids := w.ids()
	if len(ids) == 0 {
		return 0, false
	}
	return ids[w.r.IntN(len(ids))], true
}

// snapshot captures what a failed call must leave unchanged.
func (w *workload) snapshot(id int) string {
	s := fmt.Sprint(must(w.c.BlockTable(id)), must(w.c.ContextLen(id)))
	if !w.shared {
		s += w.c.Stats().String()
	}
	return s
}

// step performs one random operation. It reports errors with t.Errorf so
// it can run on several goroutines.
func (w *workload) step() {
	c, r := w.c, w.r
	switch op := r.IntN(100); {
	case op < 22: // arrival
		fam := w.fams[r.IntN(len(w.fams))]
		prompt := slices.Clone(fam[:r.IntN(len(fam)+1)])
		for range r.IntN(6) {
			prompt = append(prompt, r.IntN(w.vocab))
		}
		if len(prompt) == 0 {
			prompt = append(prompt, r.IntN(w.vocab))
		}
		id := w.nextID
		w.nextID++
		admit := c.CanAdmit(len(prompt))
		cached, err := c.AddSequence(id, prompt)
		switch {
		case errors.Is(err, ErrExceedsPool):
			if c.CanEverFit(len(prompt)) == nil {
				w.t.Errorf("AddSequence says never fits, CanEverFit disagrees: %v", err)
			}
			return
		case errors.Is(err, ErrOutOfBlocks):
			w.oom++
			// With other goroutines on the cache, blocks can go between
			// the two calls, so CanAdmit is only binding when alone.
			if admit && !w.shared {
				w.t.Errorf("CanAdmit(%d) was true but AddSequence failed: %v", len(prompt), err)
			}
			return
		case err != nil:
			w.t.Errorf("AddSequence: %v", err)
			return
		}
		bs := c.BlockSize()
		if cached%bs != 0 || cached >= len(prompt) || (c.Config().DisablePrefixSharing && cached != 0) {
			w.t.Errorf("AddSequence(%v) cached %d (block size %d)", prompt, cached, bs)
		}
		w.seqs[id] = &workSeq{tokens: prompt, pending: true}
	case op < 40: // prefill a pending prompt
		for _, id := range w.ids() {
			s := w.seqs[id]
			if !s.pending {
				continue
			}
			start := must(c.ContextLen(id))
			slots, err := c.Slots(id, start, len(s.tokens)-start)
			if errors.Is(err, ErrOutOfBlocks) { // possible after a truncate released reserved blocks
				return
			}
			if err != nil {
				w.t.Errorf("prefill slots: %v", err)
				return
			}
			w.write(id, s.tokens, start, slots)
			s.pending = false
			if err := c.Commit(id, s.tokens); err != nil {
				w.t.Errorf("commit: %v", err)
			}
			return
		}
	case op < 75: // decode 1-3 tokens
		id, ok := w.pick()
		if !ok || w.seqs[id].pending {
			return
		}
		s := w.seqs[id]
		start, k := len(s.tokens), 1+r.IntN(3)
		if err := c.CanEverFit(start + k); err != nil {
			if !errors.Is(err, ErrExceedsPool) {
				w.t.Errorf("CanEverFit: %v", err)
			}
			return
		}
		before := w.snapshot(id)
		slots, err := c.Slots(id, start, k)
		if errors.Is(err, ErrOutOfBlocks) {
			w.oom++
			if after := w.snapshot(id); after != before {
				w.t.Errorf("failed Slots changed state:\n%s\n%s", before, after)
			}
			return
		}
		if err != nil {
			w.t.Errorf("decode slots: %v", err)
			return
		}
		for range k {
			s.tokens = append(s.tokens, r.IntN(w.vocab))
		}
		w.write(id, s.tokens, start, slots)
		if r.IntN(10) < 7 { // commits may lag behind
			if err := c.Commit(id, s.tokens); err != nil {
				w.t.Errorf("commit: %v", err)
			}
		}
	case op < 82: // fork
		id, ok := w.pick()
		if !ok || w.seqs[id].pending {
			return
		}
		child := w.nextID
		w.nextID++
		if err := c.Fork(id, child); err != nil {
			w.t.Errorf("fork: %v", err)
			return
		}
		w.seqs[child] = &workSeq{tokens: slices.Clone(w.seqs[id].tokens)}
	case op < 88: // truncate
		id, ok := w.pick()
		if !ok {
			return
		}
		s := w.seqs[id]
		n := r.IntN(must(c.ContextLen(id)) + 1)
		if err := c.Truncate(id, n); err != nil {
			w.t.Errorf("truncate: %v", err)
			return
		}
		if !s.pending {
			s.tokens = s.tokens[:n]
		}
	default: // finish or preempt
		id, ok := w.pick()
		if !ok {
			return
		}
		if err := c.Free(id); err != nil {
			w.t.Errorf("free: %v", err)
		}
		delete(w.seqs, id)
	}
}

// checkGlobal recomputes block ownership from the block tables alone.
func checkGlobal(t *testing.T, c *Cache, live []int) {
	t.Helper()
	if err := c.CheckConsistency(); err != nil {
		t.Fatal(err)
	}
	holders := map[int32]int{}
	for _, id := range live {
		for _, b := range must(c.BlockTable(id)) {
			holders[b]++
		}
	}
	shared := 0
	for b := 0; b < c.NumBlocks(); b++ {
		if got := must(c.RefCount(b)); got != holders[int32(b)] {
			t.Fatalf("block %d: refcount %d, held by %d tables", b, got, holders[int32(b)])
		}
		if holders[int32(b)] > 1 {
			shared++
		}
	}
	st := c.Stats()
	if st.UsedBlocks != len(holders) || st.SharedBlocks != shared || st.FreeBlocks != c.NumBlocks()-len(holders) ||
		c.FreeBlocks() != st.FreeBlocks || st.Sequences != len(live) {
		t.Fatalf("stats %v; tables hold %d blocks, %d shared, %d sequences", st, len(holders), shared, len(live))
	}
}

func newWorkload(t *testing.T, c *Cache, seed uint64, idBase int) *workload {
	r := rand.New(rand.NewPCG(seed, 99))
	w := &workload{t: t, c: c, r: r, seqs: map[int]*workSeq{}, nextID: idBase, vocab: 2 + r.IntN(4)}
	for range 3 {
		fam := make([]int, r.IntN(20))
		for i := range fam {
			fam[i] = r.IntN(w.vocab)
		}
		w.fams = append(w.fams, fam)
	}
	return w
}

func TestRandomWorkloadProperties(t *testing.T) {
	seeds, steps := 40, 300
	if testing.Short() {
		seeds, steps = 10, 150
	}
	var total Stats // the workload must reach the interesting states
	oom := 0
	for seed := range seeds {
		r := rand.New(rand.NewPCG(uint64(seed), 1))
		cfg := Config{
			NumLayers: 1 + r.IntN(2), NumKVHeads: 1 + r.IntN(2), HeadDim: 1 + r.IntN(3),
			BlockSize: 1 + r.IntN(6), NumBlocks: 3 + r.IntN(30), DType: tensor.F32,
			DisablePrefixSharing: seed%5 == 4,
		}
		c, err := New(nil, cfg)
		if err != nil {
			t.Fatal(err)
		}
		w := newWorkload(t, c, uint64(seed), 0)
		for step := range steps {
			w.step()
			if t.Failed() {
				t.Fatalf("seed %d step %d (config %+v)", seed, step, cfg)
			}
			checkGlobal(t, c, w.ids())
			for _, id := range w.ids() {
				if err := w.verify(id); err != nil {
					t.Fatalf("seed %d step %d: %v", seed, step, err)
				}
			}
		}
		for _, id := range w.ids() {
			must(0, c.Free(id))
		}
		checkGlobal(t, c, nil)
		st := c.Stats()
		if st.FreeBlocks != cfg.NumBlocks || st.UsedBlocks != 0 {
			t.Fatalf("seed %d: leak after freeing everything: %v", seed, st)
		}
		total.PrefixHitTokens += st.PrefixHitTokens
		total.CopyOnWriteBlocks += st.CopyOnWriteBlocks
		total.CopyOnWriteBytes += st.CopyOnWriteBytes
		total.Evictions += st.Evictions
		oom += w.oom
	}
	t.Logf("over all seeds: %d prefix-hit tokens, %d copy-on-write blocks (%d bytes), %d evictions, %d out-of-blocks answers",
		total.PrefixHitTokens, total.CopyOnWriteBlocks, total.CopyOnWriteBytes, total.Evictions, oom)
	if total.PrefixHitTokens == 0 || total.CopyOnWriteBytes == 0 || total.Evictions == 0 || oom == 0 {
		t.Fatal("the random workload never reached one of: prefix hit, copy-on-write copy, eviction, pool exhaustion")
	}
}

// TestConcurrentWorkload runs independent workloads on one Cache from
// several goroutines (run it under -race). The prompt families are shared,
// so sequences of different goroutines share blocks.
func TestConcurrentWorkload(t *testing.T) {
	G, steps := 4, 400
	if testing.Short() {
		steps = 150
	}
	c, err := New(nil, Config{NumLayers: 2, NumKVHeads: 1, HeadDim: 2, BlockSize: 2, NumBlocks: 48, DType: tensor.F32})
	if err != nil {
		t.Fatal(err)
	}
	fams := newWorkload(t, c, 7, 0).fams
	var wg sync.WaitGroup
	for g := range G {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := newWorkload(t, c, uint64(100+g), g*1_000_000)
			w.fams, w.vocab, w.shared = fams, 4, true
			for range steps {
				w.step()
				if err := c.CheckConsistency(); err != nil {
					t.Error(err)
				}
				for _, id := range w.ids() {
					if err := w.verify(id); err != nil {
						t.Error(err)
					}
				}
				if t.Failed() {
					return
				}
			}
			for _, id := range w.ids() {
				if err := c.Free(id); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	checkGlobal(t, c, nil)
	if st := c.Stats(); st.FreeBlocks != 48 || st.PrefixHitTokens == 0 {
		t.Fatalf("after the concurrent run: %v (want all blocks free and some prefix hits)", st)
	}
}
