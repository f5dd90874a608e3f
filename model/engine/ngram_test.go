package engine

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// bruteForcePropose is the proposer's specification written the obvious
// way over a plain slice: for n from maxN down to minN, the most recent
// i < L−n with tokens[i:i+n] == tokens[L−n:], and then limit tokens of
// the history extended by the draft itself from i+n on (an overlapping
// copy); and that n.
func bruteForcePropose(tokens []int, minN, maxN, k, limit int) ([]int, int) {
	L := len(tokens)
	limit = min(limit, k)
	if limit <= 0 {
		return nil, 0
	}
	for n := maxN; n >= minN; n-- {
		if n >= L {
			continue
		}
		suffix := tokens[L-n:]
		for i := L - n - 1; i >= 0; i-- {
			if slices.Equal(tokens[i:i+n], suffix) {
				ext := slices.Clone(tokens)
				for j := 0; j < limit; j++ {
					ext = append(ext, ext[i+n+j])
				}
				return ext[L:], n
			}
		}
	}
	return nil, 0
}

// TestNgramProposerMatchesBruteForce: on random histories over small
// vocabularies (so n-grams recur), at every length as the history grows,
// the unfold-window proposer proposes exactly what the brute-force search
// does, for several (minN, maxN, k, limit), and reports the same matched
// suffix length.
func TestNgramProposerMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	found := 0
	for trial := 0; trial < 300; trial++ {
		vocab := 2 + r.IntN(6)
		minN := 1 + r.IntN(3)
		maxN := minN + r.IntN(3)
		k := 1 + r.IntN(6)
		n := 1 + r.IntN(60)
		tokens := make([]int, n)
		for i := range tokens {
			tokens[i] = r.IntN(vocab)
		}
		h, err := newTokenHistory(n, minN, maxN)
		if err != nil {
			t.Fatal(err)
		}
		p := ngramProposer{k: k, minN: minN, maxN: maxN}
		var dst []int
		for L := 1; L <= n; L++ {
			h.sync(tokens[:L])
			limit := r.IntN(k + 2)
			var got int
			dst, got = p.propose(dst[:0], h, limit)
			want, wantN := bruteForcePropose(tokens[:L], minN, maxN, k, limit)
			if !slices.Equal(dst, want) && !(len(dst) == 0 && len(want) == 0) || got != wantN {
				t.Fatalf("trial %d (n %d..%d, k %d, limit %d) history %v: proposed %v (n %d), brute force %v (n %d)",
					trial, minN, maxN, k, limit, tokens[:L], dst, got, want, wantN)
			}
			if len(want) > 0 {
				found++
			}
		}
	}
	if found < 1000 {
		t.Fatalf("only %d proposals made: the matching path is barely tested", found)
	}
}

// TestTokenHistoryWindowsAreZeroCopyViews: the windows are unfold(0, n, 1)
// views of the int32 history (shape [cap−n+1, n], strides [1, 1], the
// same storage), they see tokens appended after they were built, and a
// proposal allocates nothing.
func TestTokenHistoryWindowsAreZeroCopyViews(t *testing.T) {
	h, err := newTokenHistory(32, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	for j, w := range h.windows {
		n := 2 + j
		if got := w.Shape(); !slices.Equal(got, []int{32 - n + 1, n}) {
			t.Fatalf("window %d shape %v", n, got)
		}
		if got := w.Strides(); !slices.Equal(got, []int{1, 1}) {
			t.Fatalf("window %d strides %v", n, got)
		}
		if w.Storage() != h.hist.Storage() || &w.Storage().Int32s()[0] != &h.ids[0] {
			t.Fatalf("window %d does not share the history's storage", n)
		}
		if w.IsContiguous() {
			t.Fatalf("overlapping windows reported contiguous")
		}
	}
	tokens := []int{1, 7, 8, 9, 4, 7, 8}
	h.sync(tokens)
	win, err := h.windows[0].Select(0, 5) // (7, 8): the suffix
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := win.Int32s(); !slices.Equal(got, []int32{7, 8}) {
		t.Fatalf("window 5 reads %v", got)
	}
	p := ngramProposer{k: 4, minN: 2, maxN: 3}
	dst := make([]int, 0, 4)
	if got, _ := p.propose(dst, h, 4); !slices.Equal(got, []int{9, 4, 7, 8}) {
		t.Fatalf("proposed %v, want [9 4 7 8]", got)
	}
	if a := testing.AllocsPerRun(100, func() { dst, _ = p.propose(dst[:0], h, 4) }); a != 0 {
		t.Fatalf("propose allocates %v times per call", a)
	}
}

// TestNgramProposerDraftsWholeLoop: in a loop of period p shorter than k,
// the most recent match has only p tokens after it, and the overlapping
// copy drafts all k tokens of the loop's continuation (llama-lookup's
// behaviour), allocating nothing.
func TestNgramProposerDraftsWholeLoop(t *testing.T) {
	for _, period := range []int{1, 2, 3, 5} {
		loop := []int{7, 9, 4, 11, 2}[:period]
		tokens := []int{1, 30, 31, 32}
		for len(tokens) < 40 {
			tokens = append(tokens, loop[(len(tokens)-4)%period])
		}
		h, err := newTokenHistory(len(tokens), 1, 3)
		if err != nil {
			t.Fatal(err)
		}
		h.sync(tokens)
		p := ngramProposer{k: 8, minN: 1, maxN: 3}
		dst := make([]int, 0, p.k)
		got, n := p.propose(dst, h, p.k)
		var want []int
		for j := range p.k {
			want = append(want, loop[(len(tokens)-4+j)%period])
		}
		if !slices.Equal(got, want) || n != 3 {
			t.Fatalf("period %d: drafted %v (n %d), want the loop's next %d tokens %v (n 3)", period, got, n, p.k, want)
		}
		if a := testing.AllocsPerRun(20, func() { p.propose(dst[:0], h, p.k) }); a != 0 {
			t.Fatalf("period %d: %v allocations per proposal", period, a)
		}
	}
}
