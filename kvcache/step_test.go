package kvcache

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// stepper is a scheduler's view of the cache in these tests: it runs
// AppendStep on one cache, and the same positions through AppendSlots one
// sequence at a time on a twin cache that saw the same calls (the
// reference), and remembers the tables it was last handed.
type stepper struct {
	t        *testing.T
	c, twin  *Cache
	st       Step
	lastSeen map[int][]int32
}

func newStepper(t *testing.T, cfg Config) *stepper {
	return &stepper{t: t, c: mustNew(t, nil, cfg), twin: mustNew(t, nil, cfg), lastSeen: map[int][]int32{}}
}

// add adds the sequence to both caches.
func (s *stepper) add(id int, prompt []int) int {
	s.t.Helper()
	a, ok := s.tryAdd(id, prompt)
	if !ok {
		s.t.Fatalf("AddSequence(%d): out of blocks", id)
	}
	return a
}

// tryAdd is add where running out of blocks (in both caches) is allowed.
func (s *stepper) tryAdd(id int, prompt []int) (int, bool) {
	s.t.Helper()
	a, errA := s.c.AddSequence(id, prompt)
	b, errB := s.twin.AddSequence(id, prompt)
	if errors.Is(errA, ErrOutOfBlocks) && errors.Is(errB, ErrOutOfBlocks) {
		return 0, false
	}
	if errA != nil || errB != nil || a != b {
		s.t.Fatalf("AddSequence(%d): %d, %v vs twin %d, %v", id, a, errA, b, errB)
	}
	delete(s.lastSeen, id)
	return a, true
}

// step runs one AppendStep and checks it against the twin: the same slots
// in the same order, tables equal to BlockTable, every table that differs
// from the one last handed out listed in Changed. It returns Changed.
func (s *stepper) step(seqs []StepSeq) []int {
	s.t.Helper()
	ch, ok := s.tryStep(seqs)
	if !ok {
		s.t.Fatalf("step %v: out of blocks", seqs)
	}
	return ch
}

// tryStep is step where running out of blocks is allowed: it then checks
// that the failed step changed nothing and returns false.
func (s *stepper) tryStep(seqs []StepSeq) ([]int, bool) {
	s.t.Helper()
	before := s.snapshot()
	if err := s.c.AppendStep(&s.st, seqs); errors.Is(err, ErrOutOfBlocks) {
		if after := s.snapshot(); after != before {
			s.t.Fatalf("a failed step changed the cache:\n%s\n%s", before, after)
		}
		return nil, false
	} else if err != nil {
		s.t.Fatal(err)
	}
	var want []int32
	for _, q := range seqs {
		var err error
		if want, err = s.twin.AppendSlots(want, q.ID, must(s.twin.ContextLen(q.ID)), q.N); err != nil {
			s.t.Fatal(err)
		}
	}
	if !slices.Equal(s.st.SlotMapping, want) {
		s.t.Fatalf("step slots %v, one by one %v", s.st.SlotMapping, want)
	}
	if len(s.st.BlockTables) != len(seqs) {
		s.t.Fatalf("%d tables for %d sequences", len(s.st.BlockTables), len(seqs))
	}
	for i, q := range seqs {
		got := s.st.BlockTables[i]
		if !slices.Equal(got, must(s.c.BlockTable(q.ID))) || !slices.Equal(got, must(s.twin.BlockTable(q.ID))) {
			s.t.Fatalf("sequence %d: published table %v, BlockTable %v, twin %v", q.ID, got, must(s.c.BlockTable(q.ID)), must(s.twin.BlockTable(q.ID)))
		}
		prev, seen := s.lastSeen[q.ID]
		if (!seen || !slices.Equal(prev, got)) && !slices.Contains(s.st.Changed, i) {
			s.t.Fatalf("sequence %d: table %v → %v not reported in Changed %v", q.ID, prev, got, s.st.Changed)
		}
		s.lastSeen[q.ID] = slices.Clone(got)
	}
	if !slices.IsSorted(s.st.Changed) {
		s.t.Fatalf("Changed %v is not in increasing order", s.st.Changed)
	}
	check(s.t, s.c)
	return slices.Clone(s.st.Changed), true
}

// snapshot is the cache's observable state: its stats and every live
// sequence's table and context length.
func (s *stepper) snapshot() string {
	out := s.c.Stats().String()
	for _, id := range s.c.Sequences() {
		out += "\n" + tableString(s.c, id)
	}
	return out
}

func TestAppendStepSlotsTablesAndChanged(t *testing.T) {
	s := newStepper(t, smallConfig(32, 4))
	s.add(1, seqTokens(6, 0))
	s.add(2, seqTokens(3, 100))
	// Prefill both: new sequences are always reported.
	if ch := s.step([]StepSeq{{1, 6}, {2, 3}}); !slices.Equal(ch, []int{0, 1}) {
		t.Fatalf("prefill: Changed %v, want both", ch)
	}
	// Decode inside a block: no table changes.
	if ch := s.step([]StepSeq{{1, 1}, {2, 1}}); len(ch) != 0 { // positions 6 and 3
		t.Fatalf("decode inside blocks: Changed %v, want none", ch)
	}
	// Sequence 2 crosses into its second block at position 4.
	if ch := s.step([]StepSeq{{1, 1}, {2, 1}}); !slices.Equal(ch, []int{1}) {
		t.Fatalf("block boundary: Changed %v, want [1]", ch)
	}
	s.step([]StepSeq{{1, 1}}) // position 8: sequence 1 is mid-block now
	// A fork shares sequence 1's partial block; the child's first write
	// copies it on write: the child's table changes, the parent's not.
	if err := s.c.Fork(1, 3); err != nil {
		t.Fatal(err)
	}
	if err := s.twin.Fork(1, 3); err != nil {
		t.Fatal(err)
	}
	if ch := s.step([]StepSeq{{3, 1}, {1, 1}}); !slices.Contains(ch, 0) {
		t.Fatalf("copy on write: Changed %v, want the child (index 0)", ch)
	}
	if st := s.c.Stats(); st.CopyOnWriteBlocks != 1 {
		t.Fatalf("copy-on-write blocks = %d, want 1", st.CopyOnWriteBlocks)
	}
	// Truncating back over a block boundary changes the table; the next
	// step must republish it even though it grows back.
	for _, c := range []*Cache{s.c, s.twin} {
		if err := c.Truncate(2, 3); err != nil {
			t.Fatal(err)
		}
	}
	if ch := s.step([]StepSeq{{2, 2}}); !slices.Equal(ch, []int{0}) {
		t.Fatalf("after Truncate: Changed %v, want [0]", ch)
	}
	// A speculative-style step: 4 positions over existing context, then
	// cut back to 1 accepted.
	n := must(s.c.ContextLen(1))
	s.step([]StepSeq{{1, 4}})
	for _, c := range []*Cache{s.c, s.twin} {
		if err := c.Truncate(1, n+1); err != nil {
			t.Fatal(err)
		}
	}
	s.step([]StepSeq{{1, 1}})
}

// A step that runs out of blocks partway changes nothing: every sequence
// keeps its length and table, and the free count is what it was.
func TestAppendStepOutOfBlocksIsAllOrNothing(t *testing.T) {
	c := mustNew(t, nil, smallConfig(5, 4))
	must(c.AddSequence(1, seqTokens(5, 0))) // 2 blocks reserved
	must(c.AddSequence(2, seqTokens(4, 50)))
	var st Step
	if err := c.AppendStep(&st, []StepSeq{{1, 5}, {2, 4}}); err != nil {
		t.Fatal(err)
	}
	must(c.AddSequence(3, seqTokens(3, 90)))                                                        // 4 of 5 blocks held
	before := []string{c.Stats().String(), tableString(c, 1), tableString(c, 2), tableString(c, 3)} // 1 free
	// Sequence 1 needs 1 block (position 8), sequence 2 a second one
	// (position 4): only one is free.
	err := c.AppendStep(&st, []StepSeq{{1, 4}, {3, 3}, {2, 1}})
	if !errors.Is(err, ErrOutOfBlocks) {
		t.Fatalf("err = %v, want ErrOutOfBlocks", err)
	}
	after := []string{c.Stats().String(), tableString(c, 1), tableString(c, 2), tableString(c, 3)}
	if !slices.Equal(before, after) {
		t.Fatalf("a failed step changed the cache:\n%v\n%v", before, after)
	}
	check(t, c)
	// The sequence reserved at admission (3) keeps its prompt block, so
	// the prefill still fits once sequence 2 is gone.
	if err := c.Free(2); err != nil {
		t.Fatal(err)
	}
	if err := c.AppendStep(&st, []StepSeq{{1, 4}, {3, 3}}); err != nil {
		t.Fatal(err)
	}
	check(t, c)
}

func tableString(c *Cache, id int) string {
	t, err := c.BlockTable(id)
	n, _ := c.ContextLen(id)
	return fmt.Sprint(t, n, err)
}

func TestAppendStepBadArguments(t *testing.T) {
	c := mustNew(t, nil, smallConfig(8, 4))
	must(c.AddSequence(1, seqTokens(3, 0)))
	var st Step
	for _, tc := range []struct {
		seqs []StepSeq
		want string
	}{
		{[]StepSeq{{1, 3}, {1, 1}}, "listed twice"},
		{[]StepSeq{{1, 3}, {7, 1}}, "unknown sequence"},
		{[]StepSeq{{1, -1}}, "negative"},
		{[]StepSeq{{1, 1000}}, "pool"},
	} {
		err := c.AppendStep(&st, tc.seqs)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("AppendStep(%v) = %v, want an error mentioning %q", tc.seqs, err, tc.want)
		}
		if n := must(c.ContextLen(1)); n != 0 {
			t.Fatalf("failed step %v left context length %d", tc.seqs, n)
		}
		check(t, c)
	}
}

// A steady decode step through AppendStep allocates nothing, including
// the steps that open a new block (reserved up front).
func TestAppendStepAllocatesNothing(t *testing.T) {
	c := mustNew(t, nil, smallConfig(64, 4))
	ids := []int{1, 2, 3}
	seqs := make([]StepSeq, len(ids))
	for i, id := range ids {
		must(c.AddSequence(id, seqTokens(5, 10*i)))
		if err := c.Reserve(id, 200); err != nil {
			t.Fatal(err)
		}
		seqs[i] = StepSeq{ID: id, N: 5}
	}
	var st Step
	if err := c.AppendStep(&st, seqs); err != nil {
		t.Fatal(err)
	}
	for i := range seqs {
		seqs[i].N = 1
	}
	step := func() {
		if err := c.AppendStep(&st, seqs); err != nil {
			t.Fatal(err)
		}
	}
	step()
	if a := testing.AllocsPerRun(40, step); a != 0 { // 41 positions: ten block boundaries each
		t.Fatalf("a decode step allocates %v times; want 0", a)
	}
	check(t, c)
}

// Random steps over forks, truncations and frees agree with AppendSlots
// one sequence at a time, and never miss a changed table.
func TestAppendStepRandomAgainstAppendSlots(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	s := newStepper(t, smallConfig(400, 4))
	live := []int{}
	next, full := 0, 0
	for range 600 {
		switch op := r.IntN(10); {
		case op < 2 || len(live) == 0:
			if _, ok := s.tryAdd(next, seqTokens(1+r.IntN(9), r.IntN(3)*20)); ok {
				live = append(live, next)
			}
			next++
		case op < 3:
			p := live[r.IntN(len(live))]
			for _, c := range []*Cache{s.c, s.twin} {
				if err := c.Fork(p, next); err != nil {
					t.Fatal(err)
				}
			}
			live = append(live, next)
			next++
		case op < 4:
			id := live[r.IntN(len(live))]
			n := r.IntN(must(s.c.ContextLen(id)) + 1)
			for _, c := range []*Cache{s.c, s.twin} {
				if err := c.Truncate(id, n); err != nil {
					t.Fatal(err)
				}
			}
		case op < 5 && len(live) > 1:
			i := r.IntN(len(live))
			for _, c := range []*Cache{s.c, s.twin} {
				if err := c.Free(live[i]); err != nil {
					t.Fatal(err)
				}
			}
			live = slices.Delete(live, i, i+1)
		default:
			perm := r.Perm(len(live))
			var seqs []StepSeq
			for _, i := range perm[:1+r.IntN(len(live))] {
				seqs = append(seqs, StepSeq{ID: live[i], N: r.IntN(6)})
			}
			if _, ok := s.tryStep(seqs); !ok {
				full++
			}
		}
	}
	if full == 0 {
		t.Fatal("the pool never ran out: the all-or-nothing path went untested")
	}
}

// PendingPrefixBlocks sees the full blocks a live sequence is computing,
// and once that sequence commits, AddSequence shares exactly them.
func TestPendingPrefixBlocks(t *testing.T) {
	const bs = 4
	shared := seqTokens(9, 1) // two full blocks and one token
	a := append(slices.Clone(shared), 70, 71, 72)
	b := append(slices.Clone(shared), 80)
	other := seqTokens(10, 500)
	for _, off := range []bool{false, true} {
		cfg := smallConfig(32, bs)
		cfg.DisablePrefixSharing = off
		c := mustNew(t, nil, cfg)
		if n := c.PendingPrefixBlocks(b); n != 0 {
			t.Fatalf("empty cache: %d pending blocks", n)
		}
		must(c.AddSequence(1, a))
		want := 2 // b's shareable blocks: tokens 0…7 (b has 10 tokens)
		if off {
			want = 0
		}
		if n := c.PendingPrefixBlocks(b); n != want {
			t.Fatalf("prefix sharing off=%v: %d blocks pending for b, want %d", off, n, want)
		}
		if n := c.PendingPrefixBlocks(other); n != 0 {
			t.Fatalf("unrelated prompt: %d pending blocks", n)
		}
		if n := c.PendingPrefixBlocks(shared[:8]); n != min(want, 1) { // block 1 holds its last token
			t.Fatalf("8-token prompt: %d pending blocks, want %d", n, min(want, 1))
		}
		var st Step
		if err := c.AppendStep(&st, []StepSeq{{1, len(a)}}); err != nil {
			t.Fatal(err)
		}
		if n := c.PendingPrefixBlocks(b); n != want {
			t.Fatalf("slots handed out, not committed: %d pending, want %d", n, want)
		}
		if err := c.Commit(1, a); err != nil {
			t.Fatal(err)
		}
		if n := c.PendingPrefixBlocks(b); n != 0 {
			t.Fatalf("after commit: %d pending blocks, want 0 (they are cached now)", n)
		}
		if cached := must(c.AddSequence(2, b)); cached != want*bs {
			t.Fatalf("b got %d cached tokens, want %d", cached, want*bs)
		}
		// A sequence freed before committing leaves nothing pending.
		must(c.AddSequence(3, other))
		if err := c.Free(3); err != nil {
			t.Fatal(err)
		}
		if n := c.PendingPrefixBlocks(append(slices.Clone(other), 1)); n != 0 {
			t.Fatalf("freed sequence still pending: %d", n)
		}
		check(t, c)
	}
}

// Three sequences holding one partial block (a parent and two forks) and
// all writing into it need two copies, not three: the last holder writes
// in place. A step is refused exactly when the pool has fewer free blocks
// than that.
func TestAppendStepCountsSharedWritersExactly(t *testing.T) {
	for _, free := range []int{1, 2} {
		c := mustNew(t, nil, smallConfig(1+free, 4))
		must(c.AddSequence(1, seqTokens(2, 0)))
		var st Step
		if err := c.AppendStep(&st, []StepSeq{{1, 2}}); err != nil {
			t.Fatal(err)
		}
		for _, child := range []int{2, 3} {
			if err := c.Fork(1, child); err != nil {
				t.Fatal(err)
			}
		}
		err := c.AppendStep(&st, []StepSeq{{2, 1}, {1, 1}, {3, 1}})
		if free == 2 && err != nil {
			t.Fatalf("2 free blocks: %v", err)
		}
		if free == 1 && !errors.Is(err, ErrOutOfBlocks) {
			t.Fatalf("1 free block: err = %v, want ErrOutOfBlocks", err)
		}
		if free == 2 {
			if got := c.Stats(); got.CopyOnWriteBlocks != 2 || got.FreeBlocks != 0 {
				t.Fatalf("stats after the step: %v; want 2 copies and no free block", got)
			}
		}
		check(t, c)
	}
}

// With PrefixAlignBlocks, a prefix is shared in whole multiples of that
// many blocks: three cached blocks give two at alignment 2, and a waiting
// prompt is worth holding back only when its aligned share would grow.
func TestPrefixAlignBlocks(t *testing.T) {
	const bs = 4
	long := seqTokens(14, 1) // three full shareable blocks for a 14-token prompt
	for _, tc := range []struct{ align, wantBlocks int }{{0, 3}, {1, 3}, {2, 2}, {3, 3}, {4, 0}} {
		cfg := smallConfig(32, bs)
		cfg.PrefixAlignBlocks = tc.align
		c := mustNew(t, nil, cfg)
		must(c.AddSequence(1, long))
		if n := c.PendingPrefixBlocks(long); n != tc.wantBlocks {
			t.Errorf("align %d: %d blocks pending, want %d", tc.align, n, tc.wantBlocks)
		}
		var st Step
		if err := c.AppendStep(&st, []StepSeq{{1, len(long)}}); err != nil {
			t.Fatal(err)
		}
		if err := c.Commit(1, long); err != nil {
			t.Fatal(err)
		}
		if cached := must(c.AddSequence(2, long)); cached != tc.wantBlocks*bs {
			t.Errorf("align %d: %d cached tokens, want %d", tc.align, cached, tc.wantBlocks*bs)
		}
		check(t, c)
	}
	bad := smallConfig(8, bs)
	bad.PrefixAlignBlocks = -1
	if _, err := New(nil, bad); err == nil || !strings.Contains(err.Error(), "prefix_align_blocks") {
		t.Fatalf("negative alignment: %v", err)
	}
}
