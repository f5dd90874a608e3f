package kvcache

import (
	"slices"
	"strings"
	"testing"
)

// TestSnapshotAndJournal: a prefix hit, a fork, a copy on write and a
// free, each seen in the snapshot (states, reference counts, shared and
// owned blocks) and in the journal; and Check catching each kind of
// broken snapshot.
func TestSnapshotAndJournal(t *testing.T) {
	const bs = 4
	c := mustNew(t, nil, smallConfig(8, bs))
	c.SetJournal(true)
	p := seqTokens(9, 1) // 2 full blocks shareable, 3 blocks in all
	prefill(t, c, 0, p)
	if j := c.TakeJournal(); !slices.Equal(j.Allocated, []int32{0, 1, 2}) || len(j.Shared)+len(j.Freed) != 0 {
		t.Fatalf("first prompt's journal %+v", j)
	}
	if cached := prefill(t, c, 1, p); cached != 2*bs {
		t.Fatalf("second prompt cached %d tokens", cached)
	}
	if err := c.Fork(1, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Slots(2, 9, 1); err != nil { // position 9 lies in the forked last block: copied on write
		t.Fatal(err)
	}
	j := c.TakeJournal()
	if !slices.Equal(j.Shared, []int32{0, 1, 0, 1, 3}) || len(j.CopyOnWrite) != 1 || j.CopyOnWrite[0].Seq != 2 || j.CopyOnWrite[0].From != 3 {
		t.Fatalf("prefix hit, fork and copy on write: journal %+v", j)
	}
	s := c.Snapshot()
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	if b := s.Blocks[0]; b.State != StateUsed || b.Ref != 3 || b.Hash == "" {
		t.Errorf("block 0 held by three tables: %+v", b)
	}
	q := s.Seqs[2]
	if q.ID != 2 || q.Length != 10 || q.Committed != 9 || !slices.Equal(q.Shared, []int32{0, 1}) || len(q.Owned) != 1 {
		t.Errorf("forked sequence: %+v", q)
	}
	if s.Pool.BytesPerBlock != c.Config().BytesPerBlock() || !slices.Equal(s.Pool.Strides, c.Layout().Strides()) {
		t.Errorf("pool %+v", s.Pool)
	}
	for _, id := range []int{0, 1, 2} {
		if err := c.Free(id); err != nil {
			t.Fatal(err)
		}
	}
	if j := c.TakeJournal(); len(j.Freed) != 5 {
		t.Errorf("freeing everything: journal %+v", j)
	}
	s = c.Snapshot()
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	if s.Blocks[0].State != StateCached || s.Blocks[2].State != StateFree || len(s.Seqs) != 0 {
		t.Errorf("after freeing: blocks %+v, sequences %v", s.Blocks, s.Seqs)
	}
	// A prompt that needs the whole pool reuses the two cached blocks for
	// new content: evicted, and allocated too.
	c.TakeJournal()
	prefill(t, c, 4, seqTokens(8*bs, 100))
	j = c.TakeJournal()
	if ev := slices.Sorted(slices.Values(j.Evicted)); !slices.Equal(ev, []int32{0, 1}) ||
		!slices.Contains(j.Allocated, 0) || !slices.Contains(j.Allocated, 1) || len(j.Allocated) != 8 {
		t.Errorf("a prompt of the whole pool: journal %+v, want blocks 0 and 1 evicted and all 8 allocated", j)
	}
	if err := c.Free(4); err != nil {
		t.Fatal(err)
	}
	c.SetJournal(false)
	prefill(t, c, 3, p)
	if j := c.TakeJournal(); len(j.Shared)+len(j.Allocated) != 0 {
		t.Errorf("journal off, yet %+v", j)
	}

	good := c.Snapshot()
	for name, breakIt := range map[string]func(s *Snapshot){
		"reference count": func(s *Snapshot) { s.Blocks[s.Seqs[0].Table[0]].Ref++ },
		"used block free": func(s *Snapshot) { s.Blocks[s.Seqs[0].Table[0]].State = StateFree },
		"cached no hash":  func(s *Snapshot) { s.Blocks[7] = BlockInfo{ID: 7, State: StateCached} },
		"block twice":     func(s *Snapshot) { s.Seqs[0].Table[1] = s.Seqs[0].Table[0] },
		"shared/owned":    func(s *Snapshot) { s.Seqs[0].Owned = nil },
		"too long":        func(s *Snapshot) { s.Seqs[0].Length = 99 },
		"counters":        func(s *Snapshot) { s.Stats.FreeBlocks++ },
		"missing block":   func(s *Snapshot) { s.Blocks = s.Blocks[1:] },
	} {
		s := good
		s.Blocks = slices.Clone(good.Blocks)
		s.Seqs = []SeqInfo{good.Seqs[0]}
		s.Seqs[0].Table = slices.Clone(good.Seqs[0].Table)
		if err := s.Check(); err != nil {
			t.Fatalf("%s: the unbroken copy fails: %v", name, err)
		}
		breakIt(&s)
		if err := s.Check(); err == nil || !strings.HasPrefix(err.Error(), "kvcache: snapshot:") {
			t.Errorf("%s: Check says %v", name, err)
		}
	}
}
