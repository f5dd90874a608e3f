package kvcache

import (
	"errors"
	"slices"
	"testing"
)

// AppendSlots hands out the same slots as Slots (checked on two caches
// driven through the same steps, and against CheckSlots), appends them
// after what dst already holds, and on error leaves both dst and the
// cache as they were.
func TestAppendSlotsMatchesSlots(t *testing.T) {
	a := mustNew(t, nil, smallConfig(12, 4))
	b := mustNew(t, nil, smallConfig(12, 4))
	prompt := seqTokens(6, 10)
	for _, c := range []*Cache{a, b} {
		must(c.AddSequence(1, prompt))
	}
	buf := []int32{-7}
	pos := 0
	for _, n := range []int{6, 1, 1, 3, 0, 1, 5} {
		want := must(a.Slots(1, pos, n))
		var err error
		buf, err = b.AppendSlots(buf[:1], 1, pos, n)
		if err != nil {
			t.Fatal(err)
		}
		if buf[0] != -7 || !slices.Equal(buf[1:], want) {
			t.Fatalf("AppendSlots(…, %d, %d) = %v, want [-7] + %v", pos, n, buf, want)
		}
		if err := b.CheckSlots(1, pos, buf[1:]); err != nil {
			t.Fatal(err)
		}
		pos += n
		check(t, a)
		check(t, b)
	}
	if l := must(b.ContextLen(1)); l != pos {
		t.Fatalf("context length %d after handing out %d positions", l, pos)
	}

	// Errors: dst comes back unchanged and nothing moved in the cache.
	must(b.AddSequence(2, seqTokens(8, 100))) // holds 2 of the 12 blocks
	free := b.FreeBlocks()
	before := slices.Clone(buf)
	for _, tc := range []struct {
		name       string
		id, st, n  int
		outOfBlock bool
	}{
		{"unknown id", 9, 0, 1, false},
		{"wrong start", 1, pos + 1, 1, false},
		{"negative n", 1, pos, -1, false},
		{"never fits", 1, pos, 1 << 30, false},
		{"out of blocks", 1, pos, 12*4 - pos, true},
	} {
		got, err := b.AppendSlots(buf, tc.id, tc.st, tc.n)
		if err == nil {
			t.Fatalf("%s: no error", tc.name)
		}
		if tc.outOfBlock != errors.Is(err, ErrOutOfBlocks) {
			t.Fatalf("%s: error %v", tc.name, err)
		}
		if !slices.Equal(got, before) || len(got) != len(buf) {
			t.Fatalf("%s: dst became %v, want %v unchanged", tc.name, got, before)
		}
		if b.FreeBlocks() != free || must(b.ContextLen(1)) != pos {
			t.Fatalf("%s: the failed call changed the cache", tc.name)
		}
	}
	// Slots keeps its contract: a fresh, non-nil slice even for n = 0.
	if s := must(b.Slots(1, pos, 0)); s == nil || len(s) != 0 {
		t.Fatalf("Slots(n=0) = %#v, want an empty non-nil slice", s)
	}
}

// AppendBlockTable appends the table BlockTable returns a copy of.
func TestAppendBlockTable(t *testing.T) {
	c := mustNew(t, nil, smallConfig(8, 4))
	must(c.AddSequence(3, seqTokens(9, 0)))
	want := must(c.BlockTable(3))
	got := must(c.AppendBlockTable([]int32{42}, 3))
	if got[0] != 42 || !slices.Equal(got[1:], want) || len(want) != 3 {
		t.Fatalf("AppendBlockTable = %v, want [42] + %v (3 blocks)", got, want)
	}
	got[1] = -1 // the result is the caller's: the cache's table is untouched
	if again := must(c.BlockTable(3)); !slices.Equal(again, want) {
		t.Fatalf("writing the appended table changed the cache's: %v", again)
	}
	if got, err := c.AppendBlockTable([]int32{5}, 4); err == nil || !errors.Is(err, ErrUnknownSequence) || !slices.Equal(got, []int32{5}) {
		t.Fatalf("unknown id: %v, %v", got, err)
	}
}

// A decode step's bookkeeping allocates nothing once the buffers have
// grown: AppendSlots into a reused buffer, and AppendBlockTable into
// another, at a position that starts a new block (Truncate rewinds the
// step, returning the block, so every run does the same work).
func TestAppendSlotsAllocatesNothing(t *testing.T) {
	c := mustNew(t, nil, smallConfig(16, 4))
	must(c.AddSequence(1, seqTokens(8, 0)))
	must(c.Slots(1, 0, 8))
	slots := make([]int32, 0, 4)
	table := make([]int32, 0, 8)
	step := func() {
		var err error
		if slots, err = c.AppendSlots(slots[:0], 1, 8, 1); err != nil { // position 8 opens block 2
			t.Fatal(err)
		}
		if table, err = c.AppendBlockTable(table[:0], 1); err != nil {
			t.Fatal(err)
		}
		if err := c.Truncate(1, 8); err != nil {
			t.Fatal(err)
		}
	}
	step()
	if len(table) != 3 {
		t.Fatalf("table %v, want 3 blocks", table)
	}
	if a := testing.AllocsPerRun(50, step); a != 0 {
		t.Fatalf("a steady AppendSlots + AppendBlockTable step allocates %v times; want 0", a)
	}
	check(t, c)
}

// Reserve sizes a sequence's bookkeeping, not its blocks: nothing
// observable changes, and the Slots and Commit calls that then grow the
// sequence block by block up to the reserved length allocate nothing. A
// run admits a fresh sequence, reserves 60 positions, decodes it to n
// positions one step at a time and frees it: what admitting costs is the
// same for every n, so runs to 60 and to 8 positions must allocate the
// same (with prefix sharing on and off). Without Reserve the table, token
// and hash lists grow ~log n times.
func TestReserve(t *testing.T) {
	for _, sharing := range []bool{true, false} {
		cfg := smallConfig(32, 4)
		cfg.DisablePrefixSharing = !sharing
		c := mustNew(t, nil, cfg)
		must(c.AddSequence(1, seqTokens(3, 0)))
		free := c.FreeBlocks()
		table := must(c.BlockTable(1))
		if err := c.Reserve(1, 60); err != nil {
			t.Fatal(err)
		}
		if c.FreeBlocks() != free || !slices.Equal(must(c.BlockTable(1)), table) || must(c.ContextLen(1)) != 0 {
			t.Fatal("Reserve changed the sequence or the pool")
		}
		check(t, c)
		if err := c.Free(1); err != nil {
			t.Fatal(err)
		}

		tokens := seqTokens(60, 0)
		slots := make([]int32, 0, 8)
		run := func(n int) func() {
			return func() {
				must(c.AddSequence(2, tokens[:3]))
				if err := c.Reserve(2, 60); err != nil {
					t.Fatal(err)
				}
				var err error
				if slots, err = c.AppendSlots(slots[:0], 2, 0, 3); err != nil {
					t.Fatal(err)
				}
				for p := 3; p < n; p++ { // one decode step per position
					if err := c.Commit(2, tokens[:p]); err != nil {
						t.Fatal(err)
					}
					if slots, err = c.AppendSlots(slots[:0], 2, p, 1); err != nil {
						t.Fatal(err)
					}
				}
				if err := c.Commit(2, tokens[:n]); err != nil {
					t.Fatal(err)
				}
				if err := c.Free(2); err != nil {
					t.Fatal(err)
				}
			}
		}
		short, long := testing.AllocsPerRun(10, run(8)), testing.AllocsPerRun(10, run(60))
		if long != short {
			t.Fatalf("sharing=%v: a reserved sequence grown to 8 positions allocates %v times, to 60 %v times; want the same", sharing, short, long)
		}
		check(t, c)
	}

	c := mustNew(t, nil, smallConfig(4, 4))
	must(c.AddSequence(1, seqTokens(3, 0)))
	if err := c.Reserve(2, 4); !errors.Is(err, ErrUnknownSequence) {
		t.Fatalf("unknown id: %v", err)
	}
	if err := c.Reserve(1, -1); err == nil {
		t.Fatal("negative length: no error")
	}
	if err := c.Reserve(1, 17); !errors.Is(err, ErrExceedsPool) {
		t.Fatalf("17 positions in a 16-slot pool: %v", err)
	}
	if err := c.Reserve(1, 16); err != nil {
		t.Fatal(err)
	}
}
