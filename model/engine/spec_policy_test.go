package engine

import (
	"math"
	"math/rand/v2"
	"testing"
)

// A draft from a one-token match keeps only its first token; a match of
// strongMatch tokens or more keeps the whole draft; no draft stays none.
func TestWeakMatchCap(t *testing.T) {
	for _, tc := range []struct{ found, n, want int }{
		{3, 1, 1},
		{1, 1, 1},
		{0, 0, 0},
		{3, strongMatch, 3},
		{4, 3, 4},
	} {
		if got := weakMatchCap(tc.found, tc.n); got != tc.want {
			t.Errorf("weakMatchCap(%d, n=%d) = %d, want %d", tc.found, tc.n, got, tc.want)
		}
	}
}

// draftLen by hand: (1 + a + … + a^d) / (1 + c·d), the best d, ties to
// the shorter draft.
func TestDraftLenTable(t *testing.T) {
	for _, tc := range []struct {
		a, cost float64
		n, want int
	}{
		{0, 0.1, 8, 0},       // never right: never draft
		{1, 0.1, 8, 8},       // always right and cheap: all k
		{0.5, 0.5, 8, 0},     // d=1 gives 1.5/1.5: a tie keeps the plain step
		{0.9, 0.5, 4, 3},     // 1.267, 1.355, 1.376, 1.365
		{0.3, 0.1, 8, 1},     // 1.18 at d=1, 1.158 at d=2
		{0.9, 0.1, 0, 0},     // no draft to take
		{0.9, 0.1, 2, 2},     // capped by what the proposer found
		{0.6, 0.6, 8, 0},     // 1.6/1.6: a tie again
		{0.95, 0.05, 64, 21}, // 6.5944, 6.5997, 6.5966 at d = 20, 21, 22
	} {
		if got, _ := draftLen(tc.a, tc.cost, tc.n, newStepValue(1, tc.cost)); got != tc.want {
			t.Errorf("draftLen(a=%v, cost=%v, n=%d) = %d, want %d", tc.a, tc.cost, tc.n, got, tc.want)
		}
	}
}

// draftLen agrees with a float64 brute force of the same ratio, over
// random acceptance rates, costs and draft lengths.
func TestDraftLenBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		a, cost, n := r.Float64(), r.Float64()*2, r.IntN(20)
		bestV, bestD := 1.0, 0
		for d := 1; d <= n; d++ {
			kept := 0.0
			for i := 0; i <= d; i++ {
				kept += math.Pow(a, float64(i))
			}
			if v := kept / (1 + cost*float64(d)); v > bestV*(1+1e-6) {
				bestV, bestD = v, d
			}
		}
		got, kept := draftLen(a, cost, n, newStepValue(1, cost))
		if got == bestD {
			continue
		}
		// Values within the tolerance of each other may pick either.
		val := func(d int) float64 {
			kept := 0.0
			for i := 0; i <= d; i++ {
				kept += math.Pow(a, float64(i))
			}
			return kept / (1 + cost*float64(d))
		}
		if math.Abs(val(got)-val(bestD)) > 1e-6*val(bestD) {
			t.Fatalf("draftLen(%v, %v, %d) = %d (%.9f), brute force %d (%.9f)", a, cost, n, got, val(got), bestD, val(bestD))
		}
		if want := val(got)*(1+cost*float64(got)) - 1; math.Abs(kept-want) > 1e-9 {
			t.Fatalf("draftLen(%v, %v, %d) kept %v, want %v", a, cost, n, kept, want)
		}
	}
}

// In a step of many rows a draft must beat the step's own tokens per
// cost: B rows cost 1 + c·(B−1) steps for B tokens, and d drafts of a
// sequence add c·d for a + … + a^d. By hand, c = 0.1: alone, a = 0.3
// drafts one token (1.3/1.1 = 1.18 > 1); beside 7 other rows it drafts
// none ((8 + 0.3)/1.8 = 4.61 < 8/1.7 = 4.71); a = 0.9 still drafts there
// (d = 5: 5.31163, d = 6: 5.31175, d = 7: 5.28972; the best is d = 6).
func TestDraftLenInABatch(t *testing.T) {
	if d, _ := draftLen(0.3, 0.1, 8, newStepValue(1, 0.1)); d != 1 {
		t.Errorf("alone, a = 0.3: d = %d, want 1", d)
	}
	if d, _ := draftLen(0.3, 0.1, 8, newStepValue(8, 0.1)); d != 0 {
		t.Errorf("8 rows, a = 0.3: d = %d, want 0", d)
	}
	d, kept := draftLen(0.9, 0.1, 8, newStepValue(8, 0.1))
	if d != 6 || math.Abs(kept-(0.9+0.81+0.729+0.6561+0.59049+0.531441)) > 1e-12 {
		t.Errorf("8 rows, a = 0.9: d = %d, kept %v; want 6, 4.217031", d, kept)
	}
	if v := newStepValue(8, 0.1); v.tokens != 8 || math.Abs(v.cost-1.7) > 1e-12 {
		t.Errorf("newStepValue(8, 0.1) = %+v", v)
	}
	if v := newStepValue(0, 0.1); v.tokens != 0 || v.cost != 1 {
		t.Errorf("newStepValue(0, 0.1) = %+v", v)
	}
}

// The acceptance estimate starts at ½, follows hits and misses with
// decay acceptDecay, counts a verify step's rejection once, and takes
// a shadow draft's outcome once.
func TestAcceptanceEstimate(t *testing.T) {
	sp := specState{hits: 1, misses: 1}
	if a := sp.acceptance(); a != 0.5 {
		t.Fatalf("prior %v, want 0.5", a)
	}
	sp.record(4, false) // all four right: four hits, no miss
	wantH, wantM := acceptDecay*1+4, acceptDecay*1
	if sp.hits != wantH || sp.misses != wantM {
		t.Fatalf("after 4/4: %v hits, %v misses; want %v, %v", sp.hits, sp.misses, wantH, wantM)
	}
	sp.record(1, true) // one right, then a rejection; the rest untested
	wantH, wantM = acceptDecay*wantH+1, acceptDecay*wantM+1
	if sp.hits != wantH || sp.misses != wantM {
		t.Fatalf("after 1/4: %v hits, %v misses; want %v, %v", sp.hits, sp.misses, wantH, wantM)
	}
	sp.checkShadow(7) // no shadow: nothing changes
	if sp.hits != wantH || sp.misses != wantM {
		t.Fatal("a step without a shadow draft changed the estimate")
	}
	sp.shadow, sp.hasShadow = 7, true
	sp.checkShadow(8)
	wantH, wantM = acceptDecay*wantH, acceptDecay*wantM+1
	if sp.hits != wantH || sp.misses != wantM || sp.hasShadow {
		t.Fatalf("after a wrong shadow: %v hits, %v misses (shadow %v)", sp.hits, sp.misses, sp.hasShadow)
	}
	// A long run of right shadows drives the estimate toward 1, and a
	// run of wrong ones toward 0, within tens of steps.
	for range 40 {
		sp.shadow, sp.hasShadow = 7, true
		sp.checkShadow(7)
	}
	if a := sp.acceptance(); a < 0.97 {
		t.Fatalf("after 40 right shadows a = %v", a)
	}
	for range 40 {
		sp.shadow, sp.hasShadow = 7, true
		sp.checkShadow(9)
	}
	if a := sp.acceptance(); a > 0.03 {
		t.Fatalf("after 40 wrong shadows a = %v", a)
	}
}

// The draft cost decides: a verify row priced above what any draft can
// keep is never run (the tokens still those of plain decoding), a cheap
// one drafts on the same loops, and defaults follow the model's size.
func TestDraftCostDecides(t *testing.T) {
	m := tinyGQA(t)
	reqs := repetitiveRequests()
	want := alone(t, m, Options{}, reqs)
	never := generate(t, m, Options{Speculation: Speculation{Method: "ngram", DraftCost: MaxDraftCost}}, reqs)
	sameAsAlone(t, never, want)
	if never.st.DraftTokens != 0 {
		t.Fatalf("draft cost %d still drafted %d tokens", MaxDraftCost, never.st.DraftTokens)
	}
	cheap := generate(t, m, Options{Speculation: cheapRows}, reqs)
	sameAsAlone(t, cheap, want)
	if cheap.st.AcceptedTokens == 0 || cheap.st.Steps >= never.st.Steps {
		t.Fatalf("cheap rows: %+v, against %d steps without drafts", cheap.st, never.st.Steps)
	}
	if got := DefaultDraftCost(memoryBoundBytes); got != memoryBoundCost {
		t.Errorf("DefaultDraftCost(32 MiB) = %v", got)
	}
	if got := DefaultDraftCost(memoryBoundBytes - 1); got != cacheBoundCost {
		t.Errorf("DefaultDraftCost(32 MiB - 1) = %v", got)
	}
	e := newEngine(t, m, Options{Speculation: ngram})
	if got, want := e.Speculation().DraftCost, DefaultDraftCost(e.Forward().WeightBytes()); got != want {
		t.Errorf("the engine's default draft cost %v, want %v", got, want)
	}
	for _, bad := range []float64{-0.1, math.NaN(), MaxDraftCost + 1, math.Inf(1)} {
		if _, err := New(m, Options{Speculation: Speculation{Method: "ngram", DraftCost: bad}}); err == nil {
			t.Errorf("draft cost %v accepted", bad)
		}
	}
}
