package attention

import (
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/stride-lm/stride/tensor"
	"github.com/stride-lm/stride/tensor/kernels"
)

func TestFusedMatchesReference(t *testing.T) {
	for _, s := range equivalenceCases() {
		t.Run(s.name, func(t *testing.T) {
			tc := buildCase(t, s)
			f := NewFused(Options{})
			out, err := f.Attend(tc.q, tc.k, tc.v, tc.kCache, tc.vCache, tc.batch, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkOutput(t, tc, out, 1e-5)
			checkCacheWrite(t, tc)
		})
	}
}

// Small tiles force every edge of the tiling: partial query tiles,
// partial key tiles, masks that start inside a tile, odd row counts.
//
// D = 9 takes tileBlocked for items of few rows; D = 8 and 16 take the
// row-wise small-head loops (tileInline), masked where a tile
// reaches past an item's first position; D = 48 the SIMD loops where the
// CPU has them.
func TestFusedTileEdges(t *testing.T) {
	for _, D := range []int{9, 8, 16, 48} {
		s := caseSpec{H: 6, KVH: 2, D: D, bs: 5, seqs: []seqSpec{{17, 17}, {1, 23}, {6, 31}}, padding: true, fusedQKV: true, seed: 11}
		for _, tiles := range [][2]int{{1, 1}, {2, 3}, {3, 4}, {5, 7}, {7, 64}, {64, 5}} {
			tc := buildCase(t, s)
			f := NewFused(Options{QueryTile: tiles[0], KeyTile: tiles[1]})
			out, err := f.Attend(tc.q, tc.k, tc.v, tc.kCache, tc.vCache, tc.batch, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkOutput(t, tc, out, 1e-5)
		}
	}
}

// The accounting of a fused step: the cache writes are the only bytes
// copied (two copy ops: K and V), and once the output buffer exists a
// step allocates nothing.
func TestFusedCopiesOnlyTheCacheWrite(t *testing.T) {
	s := caseSpec{H: 12, KVH: 4, D: 16, bs: 16, seqs: []seqSpec{{20, 20}, {1, 50}, {7, 40}}, padding: true, fusedQKV: true, seed: 3}
	tc := buildCase(t, s)
	f := NewFused(Options{})
	cacheBytes := int64(2 * tc.written * s.KVH * s.D * 4)

	before := tc.led.Stats()
	if _, err := f.Attend(tc.q, tc.k, tc.v, tc.kCache, tc.vCache, tc.batch, nil); err != nil {
		t.Fatal(err)
	}
	d := tc.led.Stats().Sub(before)
	if d.BytesCopied != cacheBytes || d.CopyOps != 2 {
		t.Fatalf("first step copied %d bytes in %d ops; want only the cache write, %d bytes in 2 ops", d.BytesCopied, d.CopyOps, cacheBytes)
	}
	outBytes := int64(tc.T * s.H * s.D * 4)
	if d.Allocations != 1 || d.BytesAllocated != outBytes {
		t.Fatalf("first step allocated %d bytes in %d allocations; want the [T, H·D] output once, %d bytes", d.BytesAllocated, d.Allocations, outBytes)
	}

	before = tc.led.Stats()
	out, err := f.Attend(tc.q, tc.k, tc.v, tc.kCache, tc.vCache, tc.batch, nil)
	if err != nil {
		t.Fatal(err)
	}
	d = tc.led.Stats().Sub(before)
	if d.BytesCopied != cacheBytes || d.Allocations != 0 || d.BytesAllocated != 0 {
		t.Fatalf("second step: %v; want %d bytes copied and no allocation", d, cacheBytes)
	}
	checkOutput(t, tc, out, 1e-5)
}

// inOrderRunner runs chunks one after another in reverse order: a Runner
// unlike the default one, to show the result does not depend on it.
type inOrderRunner struct{ calls int }

func (r *inOrderRunner) ParallelFor(n, minChunk int, body func(start, end int)) {
	r.calls++
	for i := n - 1; i >= 0; i-- {
		body(i, i+1)
	}
}

// chunkRunner splits [0, n) in two halves run concurrently.
type chunkRunner struct{}

func (chunkRunner) ParallelFor(n, minChunk int, body func(start, end int)) {
	var wg sync.WaitGroup
	h := n / 2
	wg.Add(1)
	go func() { defer wg.Done(); body(h, n) }()
	body(0, h)
	wg.Wait()
}

func TestFusedDeterministicAcrossWorkers(t *testing.T) {
	s := caseSpec{H: 12, KVH: 4, D: 16, bs: 16, seqs: []seqSpec{{45, 45}, {1, 60}, {9, 70}, {1, 3}}, padding: true, fusedQKV: true, seed: 21}
	var ref []float32
	custom := &inOrderRunner{}
	opts := []Options{{Threads: 1}, {Threads: 2}, {Threads: 3}, {Threads: 8}, {Threads: 4, Runner: custom}, {Threads: 5, Runner: chunkRunner{}}}
	for round := 0; round < 3; round++ {
		for _, o := range opts {
			tc := buildCase(t, s)
			out, err := NewFused(o).Attend(tc.q, tc.k, tc.v, tc.kCache, tc.vCache, tc.batch, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := out.Float32s()
			if ref == nil {
				ref = got
				checkOutput(t, tc, out, 1e-5)
				continue
			}
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(ref[i]) {
					t.Fatalf("threads=%d round %d: element %d is %v, single-threaded run gave %v", o.Threads, round, i, got[i], ref[i])
				}
			}
		}
	}
	if custom.calls == 0 {
		t.Fatal("the Runner option was never used")
	}
}

// A step with several sequences run in one call equals running each
// sequence alone: the batch rows do not interact.
func TestFusedBatchEqualsSequencesAlone(t *testing.T) {
	s := caseSpec{H: 4, KVH: 2, D: 8, bs: 5, seqs: []seqSpec{{8, 8}, {1, 17}, {3, 9}}, seed: 31}
	tc := buildCase(t, s)
	all, err := NewFused(Options{}).Attend(tc.q, tc.k, tc.v, tc.kCache, tc.vCache, tc.batch, nil)
	if err != nil {
		t.Fatal(err)
	}
	allData, _ := all.Float32s()
	allData = append([]float32(nil), allData...)
	for i := range s.seqs {
		tc2 := buildCase(t, s) // same seed: same cache and inputs
		b := tc2.batch
		qs, ql := b.QueryStart[i], b.QueryLen[i]
		one := &Batch{QueryStart: []int{0}, QueryLen: []int{ql}, ContextLen: []int{b.ContextLen[i]},
			BlockTables: [][]int32{b.BlockTables[i]}, SlotMapping: b.SlotMapping[qs : qs+ql]}
		narrow := func(x *tensor.Tensor) *tensor.Tensor { return tensor.Must(x.Narrow(0, qs, ql)) }
		out, err := NewFused(Options{}).Attend(narrow(tc2.q), narrow(tc2.k), narrow(tc2.v), tc2.kCache, tc2.vCache, one, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := out.Float32s()
		w := s.H * s.D
		for j, x := range got {
			if x != allData[qs*w+j] {
				t.Fatalf("sequence %d alone differs from the batched run at %d: %v vs %v", i, j, x, allData[qs*w+j])
			}
		}
	}
}

// PagedDecode with explicit arguments equals Attend's decode step.
func TestPagedDecode(t *testing.T) {
	s := caseSpec{H: 12, KVH: 4, D: 16, bs: 5, seqs: []seqSpec{{1, 23}, {1, 1}, {1, 40}}, fusedQKV: true, seed: 41}
	tc := buildCase(t, s)
	// The new tokens' K and V must be in the cache before PagedDecode.
	if _, err := NewFused(Options{}).Attend(tc.q, tc.k, tc.v, tc.kCache, tc.vCache, tc.batch, nil); err != nil {
		t.Fatal(err)
	}
	out := tensor.Must(tensor.Zeros(nil, tensor.F32, 3, s.H*s.D))
	ctxLens := tc.batch.ContextLen
	if err := PagedDecode(out, tc.q, tc.kCache, tc.vCache, tc.batch.BlockTables, ctxLens, 1/float32(math.Sqrt(float64(s.D))), Options{Threads: 2}); err != nil {
		t.Fatal(err)
	}
	checkOutput(t, tc, out, 1e-5)

	// Explicit errors for bad arguments.
	bad := []struct {
		name string
		err  error
	}{
		{"short table", PagedDecode(out, tc.q, tc.kCache, tc.vCache, [][]int32{{}, {0}, {0}}, ctxLens, 1, Options{})},
		{"zero context", PagedDecode(out, tc.q, tc.kCache, tc.vCache, tc.batch.BlockTables, []int{0, 1, 1}, 1, Options{})},
		{"bad block", PagedDecode(out, tc.q, tc.kCache, tc.vCache, [][]int32{{99, 0, 0, 0, 0}, {0}, {0, 0, 0, 0, 0, 0, 0, 0}}, ctxLens, 1, Options{})},
		{"count", PagedDecode(out, tc.q, tc.kCache, tc.vCache, tc.batch.BlockTables[:2], ctxLens, 1, Options{})},
		{"out shape", PagedDecode(tensor.Must(tensor.Zeros(nil, tensor.F32, 2, s.H*s.D)), tc.q, tc.kCache, tc.vCache, tc.batch.BlockTables, ctxLens, 1, Options{})},
		{"nil", PagedDecode(nil, tc.q, tc.kCache, tc.vCache, tc.batch.BlockTables, ctxLens, 1, Options{})},
	}
	for _, c := range bad {
		if c.err == nil || !strings.Contains(c.err.Error(), "paged_decode") {
			t.Errorf("%s: got %v, want a paged_decode error", c.name, c.err)
		}
	}
}

// The exponential the kernel uses is within a few ulp of math.Exp.
func TestExpf(t *testing.T) {
	worst := 0.0
	for i := 0; i <= 200000; i++ {
		x := -87.0 + float64(i)*(87.0+88.0)/200000
		got := float64(expf(float32(x)))
		want := math.Exp(float64(float32(x)))
		if e := math.Abs(got-want) / want; e > worst {
			worst = e
		}
	}
	if worst > 3e-7 {
		t.Fatalf("expf max relative error %.3g, want ≤ 3e-7", worst)
	}
	if expf(-100) != 0 || !math.IsInf(float64(expf(100)), 1) || !math.IsNaN(float64(expf(float32(math.NaN())))) || expf(0) != 1 {
		t.Fatalf("expf edge cases: %v %v %v %v", expf(-100), expf(100), expf(float32(math.NaN())), expf(0))
	}
	if got := expf(float32(math.Inf(-1))); got != 0 {
		t.Fatalf("expf(-inf) = %v", got)
	}
}

// expSub agrees with math.Exp on every argument softmax gives it down to
// expCut, gives exactly 0 below it (never a subnormal weight), and drops
// nothing float32 could have added to the row's sum.
func TestExpSub(t *testing.T) {
	s := make([]float32, 0, 4001)
	for i := 0; i <= 4000; i++ {
		s = append(s, float32(-100+float64(i)*0.025))
	}
	mx := s[len(s)-1]
	in := append([]float32(nil), s...)
	sum := expSub(s, mx)
	var want, dropped float64
	for i, x := range in {
		w := math.Exp(float64(x - mx))
		want += w
		if x-mx < expCut {
			if s[i] != 0 {
				t.Fatalf("exp(%v) = %v below the cut %v; want 0", x-mx, s[i], expCut)
			}
			dropped += w
			continue
		}
		if e := math.Abs(float64(s[i]) - w); e > 1.5e-7*w {
			t.Fatalf("exp(%v) = %v, want %v", x-mx, s[i], w)
		}
		if s[i] < 0x1p-65 {
			t.Fatalf("exp(%v) = %v: a weight this small should have been cut", x-mx, s[i])
		}
	}
	// Everything cut is far below float32 resolution of the sum (≥ 1).
	if dropped > 0x1p-40*want {
		t.Fatalf("cut weights sum to %v of %v", dropped, want)
	}
	if math.Abs(float64(sum)-want) > 1e-5*want {
		t.Fatalf("sum %v, want %v", sum, want)
	}
	// A dense sweep of [expCut, 0]: within 1.5e-7 (about 1 ulp) everywhere,
	// including across the 64 table entries and the integer exponents.
	one := make([]float32, 1)
	for i := 0; i <= 400000; i++ {
		x := float32(expCut * float64(i) / 400000)
		one[0] = x
		if sum := expSub(one, 0); sum != one[0] {
			t.Fatalf("sum of one weight %v is %v", one[0], sum)
		}
		w := math.Exp(float64(x))
		if e := math.Abs(float64(one[0]) - w); e > 1.5e-7*w {
			t.Fatalf("exp(%v) = %v, want %v (relative error %.3g)", x, one[0], w, e/w)
		}
	}
	nan := []float32{0, float32(math.NaN())}
	if sum := expSub(nan, 0); !math.IsNaN(float64(sum)) || !math.IsNaN(float64(nan[1])) {
		t.Fatalf("NaN score gave %v (sum %v)", nan, sum)
	}
}

// A steady fused step makes no Go allocation either (no tensor metadata,
// kernel arguments, closures, or duplicate-slot map), for a decode batch
// of several sequences (the inline and SIMD tiles) and a prefill step
// (MatMul tiles), on one worker and on two workers of a kernels.Pool.
func TestFusedStepAllocatesNothing(t *testing.T) {
	pool := kernels.NewPool(2)
	defer pool.Close()
	for _, s := range []caseSpec{
		{H: 8, KVH: 4, D: 8, bs: 16, seqs: []seqSpec{{1, 65}, {1, 20}, {1, 33}}, fusedQKV: true, seed: 71},
		{H: 6, KVH: 6, D: 48, bs: 16, seqs: []seqSpec{{1, 90}, {1, 17}}, fusedQKV: true, seed: 72},
		{H: 12, KVH: 4, D: 16, bs: 5, seqs: []seqSpec{{20, 20}, {1, 50}}, seed: 73},
	} {
		for _, threads := range []int{1, 2} {
			tc := buildCase(t, s)
			f := NewFused(Options{Threads: threads, Runner: pool})
			step := func() {
				if _, err := f.Attend(tc.q, tc.k, tc.v, tc.kCache, tc.vCache, tc.batch, nil); err != nil {
					t.Fatal(err)
				}
			}
			if a := testing.AllocsPerRun(10, step); a != 0 {
				t.Fatalf("D=%d threads=%d: a steady step allocates %v times; want 0", s.D, threads, a)
			}
		}
	}
}

// Peaked softmax rows, where most weights fall below expCut and are
// dropped (and rescaling factors of the running max underflow to 0),
// still match the float64 reference, on the inline small-head loops, the
// SIMD loops and the MatMul tiles.
func TestFusedPeakedScores(t *testing.T) {
	for _, s := range []caseSpec{
		{H: 8, KVH: 4, D: 8, bs: 16, seqs: []seqSpec{{1, 65}, {1, 200}, {1, 3}}, fusedQKV: true, qScale: 40, seed: 61},
		{H: 4, KVH: 4, D: 48, bs: 5, seqs: []seqSpec{{1, 90}, {2, 40}}, qScale: 20, seed: 62},
		{H: 12, KVH: 4, D: 16, bs: 16, seqs: []seqSpec{{40, 40}, {9, 60}}, qScale: 30, seed: 63},
		{H: 4, KVH: 2, D: 16, bs: 5, seqs: []seqSpec{{1, 150}, {3, 70}}, qScale: 30, seed: 64},
	} {
		tc := buildCase(t, s)
		out, err := NewFused(Options{Threads: 1, KeyTile: 32}).Attend(tc.q, tc.k, tc.v, tc.kCache, tc.vCache, tc.batch, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkOutput(t, tc, out, 1e-5)
	}
}

// Without SIMD the direct loops are the scalar ones and kernels.MatMul
// runs its generic code: the results must still match the reference.
func TestFusedWithoutSIMD(t *testing.T) {
	if !kernels.SIMDEnabled() {
		t.Skip("SIMD is off already; TestFusedMatchesReference covers the scalar loops")
	}
	kernels.SetSIMD(false)
	defer kernels.SetSIMD(true)
	for _, s := range []caseSpec{
		{H: 12, KVH: 4, D: 16, bs: 5, seqs: []seqSpec{{23, 23}, {1, 40}, {6, 31}, {1, 2}}, padding: true, fusedQKV: true, seed: 51},
		{H: 4, KVH: 4, D: 9, bs: 16, seqs: []seqSpec{{1, 33}, {2, 30}, {9, 9}}, seed: 52},
		{H: 4, KVH: 1, D: 8, bs: 3, seqs: []seqSpec{{1, 20}, {1, 7}}, cacheDType: tensor.F16, seed: 53},
	} {
		tc := buildCase(t, s)
		out, err := NewFused(Options{}).Attend(tc.q, tc.k, tc.v, tc.kCache, tc.vCache, tc.batch, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkOutput(t, tc, out, 1e-5)
	}
}

// Steps of alternating sizes, as speculative decoding runs them (a
// verify step of T+d rows between decode steps of T), allocate nothing
// once each size has run: the output tensor is kept per row count.
func TestFusedAlternatingStepsAllocateNothing(t *testing.T) {
	decode := buildCase(t, caseSpec{H: 8, KVH: 4, D: 8, bs: 16, seqs: []seqSpec{{1, 40}}, seed: 74})
	verify := buildCase(t, caseSpec{H: 8, KVH: 4, D: 8, bs: 16, seqs: []seqSpec{{5, 44}}, seed: 75})
	f := NewFused(Options{Threads: 1})
	step := func() {
		for _, tc := range []*testCase{decode, verify} {
			if _, err := f.Attend(tc.q, tc.k, tc.v, tc.kCache, tc.vCache, tc.batch, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if a := testing.AllocsPerRun(10, step); a != 0 {
		t.Fatalf("a decode step and a verify step allocate %v times per pair; want 0", a)
	}
}
