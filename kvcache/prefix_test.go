package kvcache

import (
	"slices"
	"strings"
	"testing"

	"github.com/stride-lm/stride/tensor"
)

// prefill adds a sequence, computes (writes) its uncached prompt positions
// and commits it, as a scheduler's prefill step does. It returns the
// cached token count AddSequence reported.
func prefill(t *testing.T, c *Cache, id int, prompt []int) int {
	t.Helper()
	cached, err := c.AddSequence(id, prompt)
	if err != nil {
		t.Fatal(err)
	}
	writeStep(t, c, prompt, cached, must(c.Slots(id, cached, len(prompt)-cached)))
	if err := c.Commit(id, prompt); err != nil {
		t.Fatal(err)
	}
	return cached
}

func TestPrefixSharingUsesFewerBlocks(t *testing.T) {
	const N, bs, P, S = 4, 4, 12, 5 // common prefix of 3 full blocks, 5-token suffixes
	prompts := make([][]int, N)
	for i := range prompts {
		prompts[i] = append(seqTokens(P, 1), seqTokens(S, 100*(i+1))...)
	}
	blocksPer := (P + S + bs - 1) / bs // 5
	for _, sharing := range []bool{false, true} {
		cfg := smallConfig(32, bs)
		cfg.DisablePrefixSharing = !sharing
		c := mustNew(t, nil, cfg)
		for i, p := range prompts {
			cached := prefill(t, c, i, p)
			want := 0
			if sharing && i > 0 {
				want = P
			}
			if cached != want {
				t.Fatalf("sharing=%v prompt %d: cached %d, want %d", sharing, i, cached, want)
			}
			check(t, c)
		}
		st := c.Stats()
		t.Logf("sharing=%v: %v", sharing, st)
		separate := N * blocksPer                    // 20
		shared := blocksPer + (N-1)*(blocksPer-P/bs) // 5 + 3·2 = 11
		if !sharing && (st.UsedBlocks != separate || st.SharedBlocks != 0 || st.PrefixHitTokens != 0) {
			t.Fatalf("no sharing: %v, want %d used blocks", st, separate)
		}
		if sharing && (st.UsedBlocks != shared || st.SharedBlocks != P/bs || st.PrefixHitTokens != (N-1)*P || st.PromptTokens != N*(P+S)) {
			t.Fatalf("sharing: %v, want %d used blocks, %d shared", st, shared, P/bs)
		}
		if sharing && st.UsedBlocks >= separate {
			t.Fatalf("sharing used %d blocks, separate %d", st.UsedBlocks, separate)
		}
		for i, p := range prompts { // every sequence reads its own K/V, shared or not
			checkSeq(t, c, i, p)
			if sharing && i > 0 {
				t0, ti := must(c.BlockTable(0)), must(c.BlockTable(i))
				if !slices.Equal(t0[:P/bs], ti[:P/bs]) || slices.Contains(t0[P/bs:], ti[P/bs]) {
					t.Fatalf("tables %v and %v", t0, ti)
				}
			}
		}
		for i := range prompts {
			if b := must(c.BlockTable(0))[0]; sharing && must(c.RefCount(int(b))) != N-i {
				t.Fatalf("block %d refcount %d, want %d", b, must(c.RefCount(int(b))), N-i)
			}
			if err := c.Free(N - 1 - i); err != nil {
				t.Fatal(err)
			}
		}
		if st := c.Stats(); st.FreeBlocks != 32 || st.UsedBlocks != 0 {
			t.Fatalf("after freeing all: %v", st)
		}
		check(t, c)
	}
}

func TestCachedTokensNeverCoverTheWholePrompt(t *testing.T) {
	c := mustNew(t, nil, smallConfig(16, 4))
	base := seqTokens(8, 1)
	prefill(t, c, 0, base)
	for _, tc := range []struct {
		prompt []int
		want   int
	}{
		{base, 4},                          // identical, block-aligned: last block recomputed
		{append(slices.Clone(base), 9), 8}, // one more token: both blocks hit
		{base[:5], 4},
		{base[:4], 0}, // the only block holds the last token
		{base[:3], 0},
		{append(seqTokens(4, 1), 77, 78, 79, 80, 81), 4}, // diverges in block 1
		{append([]int{0}, base[1:]...), 0},               // diverges at token 0
	} {
		id := 100 + len(c.Sequences())
		got := prefill(t, c, id, tc.prompt)
		if got != tc.want {
			t.Errorf("prompt %v: cached %d, want %d", tc.prompt, got, tc.want)
		}
		checkSeq(t, c, id, tc.prompt)
	}
	if st := c.Stats(); st.CopyOnWriteBlocks != 0 {
		t.Fatalf("prefix hits caused %d copies; the last-token block is always fresh", st.CopyOnWriteBlocks)
	}
	check(t, c)
}

func TestFreedPrefixStaysCachedUntilEvicted(t *testing.T) {
	c := mustNew(t, nil, smallConfig(4, 4))
	a := seqTokens(8, 1)
	prefill(t, c, 1, a)
	must(0, c.Free(1))
	if st := c.Stats(); st.FreeBlocks != 4 || st.CachedBlocks != 2 {
		t.Fatalf("after free: %v", st)
	}
	// Other content first takes the two never-registered blocks.
	prefill(t, c, 2, seqTokens(8, 500))
	if st := c.Stats(); st.Evictions != 0 || st.CachedBlocks != 2 {
		t.Fatalf("unregistered blocks should go first: %v", st)
	}
	must(0, c.Free(2))
	// The freed prefix is revived.
	ext := append(slices.Clone(a), 42)
	if got := prefill(t, c, 3, ext); got != 8 {
		t.Fatalf("revived prefix: cached %d, want 8", got)
	}
	checkSeq(t, c, 3, ext)
	must(0, c.Free(3))
	// Four blocks of new content evict everything.
	prefill(t, c, 4, seqTokens(16, 900))
	if st := c.Stats(); st.Evictions == 0 || st.CachedBlocks != 0 {
		t.Fatalf("full pool should evict: %v", st)
	}
	must(0, c.Free(4))
	if got := prefill(t, c, 5, ext); got != 0 {
		t.Fatalf("evicted prefix still hit: cached %d", got)
	}
	checkSeq(t, c, 5, ext)
	check(t, c)
}

func TestForkCopyOnWrite(t *testing.T) {
	led := tensor.NewLedger()
	cfg := smallConfig(8, 4) // 2 layers, 2 kv heads × 3: 6 floats per token row
	c := mustNew(t, led, cfg)
	parent := seqTokens(6, 1)
	prefill(t, c, 1, parent)
	if err := c.Fork(1, 2); err != nil {
		t.Fatal(err)
	}
	pt := must(c.BlockTable(1))
	if st := c.Stats(); st.SharedBlocks != 2 || must(c.RefCount(int(pt[1]))) != 2 {
		t.Fatalf("after fork: %v", st)
	}
	check(t, c)
	child := append(slices.Clone(parent), 60)
	before := led.Stats()
	writeStep(t, c, child, 6, must(c.Slots(2, 6, 1)))
	d := led.Stats().Sub(before)
	// CoW of block 1 copies its 6%4 = 2 valid rows of 6 floats in 2 layers
	// × (K, V): 4 copies of 48 bytes; then the write of 1 token: 2 layers
	// × 2 copies of 24 bytes.
	if d.CopyOps != 4+4 || d.BytesCopied != 4*48+4*24 || d.Allocations != 0 {
		t.Fatalf("fork+write accounting %v", d)
	}
	st := c.Stats()
	if st.CopyOnWriteBlocks != 1 || st.CopyOnWriteBytes != 4*48 || st.SharedBlocks != 1 {
		t.Fatalf("after CoW: %v", st)
	}
	ct := must(c.BlockTable(2))
	if ct[0] != pt[0] || ct[1] == pt[1] || must(c.RefCount(int(pt[1]))) != 1 {
		t.Fatalf("tables parent %v child %v", pt, ct)
	}
	// The parent now holds block 1 alone: its write copies nothing.
	parentNext := append(slices.Clone(parent), 61)
	before = led.Stats()
	writeStep(t, c, parentNext, 6, must(c.Slots(1, 6, 1)))
	if d := led.Stats().Sub(before); d.BytesCopied != 4*24 || c.Stats().CopyOnWriteBlocks != 1 {
		t.Fatalf("parent write %v, %v", d, c.Stats())
	}
	checkSeq(t, c, 1, parentNext)
	checkSeq(t, c, 2, child)

	// A fork at a block boundary shares only full blocks: the next write
	// takes a fresh block and copies nothing.
	prefill(t, c, 3, seqTokens(8, 30))
	must(0, c.Fork(3, 4))
	before = led.Stats()
	must(c.Slots(4, 8, 1))
	if d := led.Stats().Sub(before); d.BytesCopied != 0 || c.Stats().CopyOnWriteBlocks != 1 {
		t.Fatalf("aligned fork copied: %v", d)
	}
	for _, id := range c.Sequences() {
		must(0, c.Free(id))
	}
	if st := c.Stats(); st.FreeBlocks != 8 {
		t.Fatalf("leak: %v", st)
	}
	check(t, c)
}

func TestTruncateIntoSharedAndRegisteredBlocks(t *testing.T) {
	c := mustNew(t, nil, smallConfig(12, 4))
	a := seqTokens(9, 1)
	prefill(t, c, 1, a)
	b := append(seqTokens(8, 1), 55, 56)
	if got := prefill(t, c, 2, b); got != 8 {
		t.Fatalf("b cached %d", got)
	}
	// b rewinds into the shared block 1 and rewrites position 6 onward.
	must(0, c.Truncate(2, 6))
	if n := must(c.ContextLen(2)); n != 6 || len(must(c.BlockTable(2))) != 2 {
		t.Fatalf("after truncate: ctx %d table %v", n, must(c.BlockTable(2)))
	}
	b2 := append(slices.Clone(b[:6]), 70, 71, 72)
	writeStep(t, c, b2, 6, must(c.Slots(2, 6, 3)))
	must(0, c.Commit(2, b2))
	if st := c.Stats(); st.CopyOnWriteBlocks != 1 {
		t.Fatalf("rewriting a shared block must copy it: %v", st)
	}
	checkSeq(t, c, 1, a) // a's K/V untouched
	checkSeq(t, c, 2, b2)

	// a holds its blocks alone now; it rewinds into its registered block
	// 1 and rewrites it, which must unregister the old prefix.
	must(0, c.Truncate(1, 6))
	a2 := append(slices.Clone(a[:6]), 80, 81)
	writeStep(t, c, a2, 6, must(c.Slots(1, 6, 2)))
	must(0, c.Commit(1, a2))
	checkSeq(t, c, 1, a2)
	if got := prefill(t, c, 3, append(slices.Clone(a[:8]), 99)); got != 4 {
		t.Fatalf("stale prefix hit: cached %d, want 4", got)
	}
	checkSeq(t, c, 3, append(slices.Clone(a[:8]), 99))
	// …while the new content is shared.
	if got := prefill(t, c, 4, append(slices.Clone(a2), 99)); got != 8 {
		t.Fatalf("rewritten prefix: cached %d, want 8", got)
	}
	must(0, c.Truncate(4, 0))
	if len(must(c.BlockTable(4))) != 0 {
		t.Fatal("truncate to 0 kept blocks")
	}
	check(t, c)
}

func TestCommitChecksTokens(t *testing.T) {
	c := mustNew(t, nil, smallConfig(8, 4))
	p := seqTokens(5, 1)
	prefill(t, c, 1, p)
	bad := slices.Clone(p)
	bad[2] = 999
	if err := c.Commit(1, bad); err == nil || !strings.Contains(err.Error(), "position 2") {
		t.Fatalf("contradicting commit: %v", err)
	}
	// Tokens past the context length are ignored; a shorter list is fine.
	if err := c.Commit(1, append(slices.Clone(p), 6, 7, 8)); err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(1, p[:2]); err != nil {
		t.Fatal(err)
	}
	// Nothing beyond position 4 was committed: a prompt extending p by
	// 6, 7, 8 hits only block 0.
	if got := prefill(t, c, 2, append(slices.Clone(p), 6, 7, 8, 9)); got != 4 {
		t.Fatalf("cached %d, want 4", got)
	}
	check(t, c)
}
