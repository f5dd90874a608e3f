package attention

import (
	"math"
	"sync"
	"sync/atomic"

	"github.com/stride-lm/stride/tensor"
	"github.com/stride-lm/stride/tensor/kernels"
)

// This file is the fused attention kernel: FlashAttention's online softmax
// over vLLM's paged KV cache, on the CPU.
//
// One work item is (sequence, KV head, query tile). Its query rows are the
// tile's tokens × the g = H/KVH query heads that share that KV head
// (GQA-native: kv_head = q_head / g, so every K and V row loaded serves g
// heads at once and nothing is repeated). The item walks the sequence's
// block table KeyTile keys at a time; for each key tile it computes the
// scores of its rows against those keys (the only scores that ever
// exist), folds them into a running max m, running sum l and output
// accumulator acc with the FlashAttention recurrence
//
//	m' = max(m, max_j s_j)
//	l' = l·exp(m − m') + Σ_j exp(s_j − m')
//	acc' = acc·exp(m − m') + Σ_j exp(s_j − m')·v_j
//
// and finally writes acc/l of each row straight into its slice
// out[t, h·D : (h+1)·D] of the contiguous [T, H·D] output. Causality: a
// row at position p sees keys 0 … p; keys past the tile's last position
// are never visited.
//
// The arithmetic of a key tile is one of five tile implementations
// (tiles.go), chosen once per plan for each row count an item can have,
// by the head width, the cache dtype and whether SIMD is on (chooseTile):
//
//   - prefill items (≥ mmMinRows rows) stage the tile's K rows, and its V
//     rows transposed, in the worker's scratch (what FlashAttention does
//     when it loads a K/V tile into SRAM) and run the two products
//     S = Q·Kᵀ and O += P·V through kernels.MatMul's register-blocked SIMD
//     kernel (tileMatMul). Staging costs KeyTile·D loads per tile, shared
//     by all the tile's rows; nothing larger than one tile is ever copied.
//     MatMul's vectors run along its inner dimension, which for S = Q·Kᵀ
//     is D: a head narrower than one AVX-512 vector (stories260K's is 8)
//     would leave S entirely to its scalar remainder loop. So such heads
//     stage K transposed as well and compute each score row as D
//     kernels.Axpy calls along the keys (tileAxpyKeys), whose vectors are
//     full; P·V keeps MatMul, whose inner dimension is the key count.
//     Without SIMD, small heads of an F32 cache (D a multiple of 8 up to
//     smallHeadDim) take the row-wise loops of decode (tileInline)
//     instead.
//   - smaller items (decode: one token, so g rows; fewer than mmMinRows
//     for MHA and most GQA) read K and V straight from the cache blocks,
//     since staging a tile that so few rows use would add memory traffic
//     instead of saving it: with kernels.DotRows and AxpyRows, one call
//     per query row and key tile through the block-table offsets
//     (tileGather), when they have a SIMD kernel for D
//     (kernels.RowsAccelerated) or D is wider than smallHeadDim; else,
//     for an F32 cache and D a multiple of 8, row by row with
//     kernels.DotRows8 and AxpyRows8 (tileInline); else with the portable
//     2×4 register-blocked kernels.DotRowsTile and AxpyRowsTile
//     (tileBlocked).
//
// Softmax weights below e^expCut are exactly 0 (see expCut: subnormal
// products would cost a microcode assist each).
//
// Each work item is computed start to finish by one worker, in a fixed
// order, so the output does not depend on the number of workers or on
// which worker ran which item (kernels.MatMul's sums are bit-identical
// for any T, and each item's T is fixed by the plan).

// flashArgs are the kernel's arguments. The strides are vLLM's, named the
// Go way; each comment gives vLLM's argument name.
type flashArgs struct {
	// Query [T, H, D]: element (t, h, d) is at
	// qOffset + t·qStride + h·qHeadStride + d·qElemStride.
	q           *tensor.Storage
	qF32        []float32 // q's buffer when it is F32
	qOffset     int
	qStride     int // q_stride
	qHeadStride int // q_head_stride
	qElemStride int // vLLM has none: its head is contiguous

	// Paged caches [num_blocks, block_size, KVH, D]: element (b, s, h, d)
	// is at off + b·kvBlockStride + s·kvTokenStride + h·kvHeadStride + d.
	kCache, vCache   *tensor.Storage
	kF32, vF32       []float32
	kOffset, vOffset int
	kvBlockStride    int // kv_block_stride
	kvTokenStride    int // KVH·D, implicit in vLLM
	kvHeadStride     int // kv_head_stride
	blockSize        int // block_size

	numHeads, numKVHeads, headDim int
	scale                         float32

	// Sequences: rows [qStart, qStart+qLen) at positions ctxLen−qLen …
	qStart, qLen, ctxLen []int
	blockTables          [][]int32

	out       []float32 // [T, H·D] row-major
	outStride int       // H·D

	// simd is kernels.SIMDEnabled() when the run started: plan chooses
	// the tile implementations by it (without SIMD the portable inline
	// kernels beat kernels' generic fallbacks of DotRows and AxpyRows).
	simd bool
}

// mmMinRows is the row count from which a tile's products go through
// kernels.MatMul on staged tiles rather than the direct loops.
const mmMinRows = 4

// smallHeadDim is the head width up to which the direct (decode) loops
// stay in Go when kernels has no row-gather kernel for D (so DotRows and
// AxpyRows would make a call per key): at head_dim 8 a kernels.Dot or Axpy
// call costs more than the eight multiply-adds it does, while the inline
// kernels (DotRows8, AxpyRows8, DotRowsTile, AxpyRowsTile) keep the
// arithmetic in registers with no call per key. 24 is the widest head for
// which inline won on one AVX-512 core, and the row-gather kernels beat
// inline at every width they cover; BenchmarkDecodeHeadWidth measures both
// (numbers and command in docs/kernels.md, "Decisions the benchmarks
// made").
const smallHeadDim = 24

// simdPad is the key count a MatMul tile is padded to a multiple of: the
// widest vector (AVX-512, 16 float32), which AVX2's 8 divides.
const simdPad = 16

// workItem is one (sequence, KV head, token range) of the kernel, with
// the tile implementation plan chose for its row count.
//
// A row group (group set) is a run of one-row entries that plan merged
// (see rowGroup): seq is the first entry, t0 = 0 and t1 the number of
// entries, each of which keeps its own decode arithmetic.
type workItem struct {
	seq, kvHead, t0, t1 int32
	tile                tileKind
	group               bool
}

// scratch is one worker's tile memory: the CPU analogue of the SRAM a GPU
// kernel holds its Q tile, score tile and accumulators in. It is sized
// once and reused for every item the worker runs.
type scratch struct {
	q    []float32 // [R, D] query rows, pre-scaled by 1/√D
	s    []float32 // [R, KeyTile] scores, then probabilities
	acc  []float32 // [R, D] output accumulators
	m, l []float32 // [R] running max and running sum
	pos  []int     // [R] position of each row
	krow []int     // [KeyTile] offset of each key row in kBuf
	vrow []int     // [KeyTile] offset of each value row in vBuf
	kt   []float32 // [KeyTile, D] staged K rows (MatMul tiles, 16-bit caches)
	vt   []float32 // [KeyTile, D] staged V rows (16-bit caches)
	vT   []float32 // [D, KeyTile] staged V rows transposed (MatMul tiles)
	kT   []float32 // [D, KeyTile] staged K rows transposed (axpyScores tiles)
	pv   []float32 // [R, D] P·V of one tile (MatMul tiles)
	kMat kernels.Matrix
	vMat kernels.Matrix
	tile keyTile // the key tile in progress

	// Row groups (group.go): a copy of the tile offsets per row, and the
	// view of this scratch that a row's tile runs in.
	gkrow []int
	sub   *scratch
}

// flashKernel holds the reusable state of the kernel: work list and
// per-worker scratch.
//
// A run's arguments and progress live here too rather than in a closure,
// so that dispatching a run allocates nothing: the workers' entry point
// body is a method value made once, and they pick items off next.
type flashKernel struct {
	opts    Options
	items   []workItem
	scratch []*scratch
	rows    int // query rows per tile the scratch was sized for
	dim     int

	a    *flashArgs   // the run in progress
	kt   int          // its key tile
	next atomic.Int64 // next item to hand out
	mu   sync.Mutex   // guards err
	err  error        // first error of the run
	body func(start, end int)
}

// plan lists the work items of a, heaviest first: with causal attention a
// tile late in a long prompt sees more keys than an early one, and handing
// out long items first keeps workers finishing together. It also chooses
// the tile implementation of every item, once for the full tiles' row
// count and once for the shorter ones (a sequence's last tile, decode
// items in a mixed batch), so the item loop decides nothing.
func (k *flashKernel) plan(a *flashArgs) (tokensPerTile int) {
	g := a.numHeads / a.numKVHeads
	tokensPerTile = k.opts.tileTokens(g)
	half := a.kF32 == nil
	full := chooseTile(tokensPerTile*g, a.headDim, half, a.simd)
	k.items = k.items[:0]
	for s := 0; s < len(a.qLen); s++ {
		ql := a.qLen[s]
		if n := rowGroup(a, s, tokensPerTile); n > 1 {
			kind := chooseTile(g, a.headDim, half, a.simd) // a decode item's
			for h := 0; h < a.numKVHeads; h++ {
				k.items = append(k.items, workItem{int32(s), int32(h), 0, int32(n), kind, true})
			}
			s += n - 1
			continue
		}
		nt := (ql + tokensPerTile - 1) / tokensPerTile
		for tile := nt - 1; tile >= 0; tile-- {
			t0 := tile * tokensPerTile
			t1 := min(t0+tokensPerTile, ql)
			kind := full
			if t1-t0 < tokensPerTile {
				kind = chooseTile((t1-t0)*g, a.headDim, half, a.simd)
			}
			for h := 0; h < a.numKVHeads; h++ {
				k.items = append(k.items, workItem{int32(s), int32(h), int32(t0), int32(t1), kind, false})
			}
		}
	}
	return tokensPerTile
}

// run computes attention for every sequence of a into a.out.
func (k *flashKernel) run(a *flashArgs) error {
	a.simd = kernels.SIMDEnabled()
	tpt := k.plan(a)
	g := a.numHeads / a.numKVHeads
	rows, kt, D := tpt*g, k.opts.keyTile(), a.headDim
	ktPad := (kt + simdPad - 1) / simdPad * simdPad // scratch room for padded tiles
	n := len(k.items)
	if n == 0 {
		return nil
	}
	workers := min(k.opts.threads(), n)
	if rows != k.rows || D != k.dim || (len(k.scratch) > 0 && len(k.scratch[0].krow) != kt) {
		k.scratch = k.scratch[:0]
		k.rows, k.dim = rows, D
	}
	for len(k.scratch) < workers {
		k.scratch = append(k.scratch, &scratch{
			q: make([]float32, rows*D), s: make([]float32, rows*ktPad), acc: make([]float32, rows*D),
			m: make([]float32, rows), l: make([]float32, rows), pos: make([]int, rows),
			krow: make([]int, kt), vrow: make([]int, kt),
			kt: make([]float32, ktPad*D), vt: make([]float32, kt*D),
			vT: make([]float32, D*ktPad), kT: make([]float32, D*ktPad), pv: make([]float32, rows*D),
			gkrow: make([]int, kt), sub: new(scratch),
		})
	}
	k.a, k.kt, k.err = a, kt, nil
	k.next.Store(0)
	if workers == 1 {
		k.work(0)
	} else {
		if k.body == nil {
			k.body = k.workRange
		}
		k.opts.runner().ParallelFor(workers, 1, k.body)
	}
	err := k.err
	k.a = nil // do not keep the caller's tensors alive
	return err
}

// workRange runs workers [start, end) one after another; the Runner
// calls it once per chunk.
func (k *flashKernel) workRange(start, end int) {
	for w := start; w < end; w++ {
		k.work(w)
	}
}

// work is worker w's loop: take the next unclaimed item until none is
// left. Which worker runs which item varies; what an item computes does
// not.
func (k *flashKernel) work(w int) {
	sc, n := k.scratch[w], int64(len(k.items))
	for {
		i := k.next.Add(1) - 1
		if i >= n {
			return
		}
		if err := runItem(k.a, &k.items[i], sc, k.kt); err != nil {
			k.mu.Lock()
			if k.err == nil {
				k.err = err
			}
			k.mu.Unlock()
			k.next.Store(n) // stop handing out items
			return
		}
	}
}

// runItem computes one work item: the rows of tokens [t0, t1) of sequence
// it.seq for the g query heads of KV head it.kvHead. It loads the query
// tile, walks the sequence's block table one key tile at a time through
// the item's tile implementation, and writes acc / l out.
func runItem(a *flashArgs, it *workItem, sc *scratch, kt int) error {
	if it.group {
		return runRowGroup(a, it, sc, kt)
	}
	tile := tileFuncs[it.tile]
	seq, kvh := int(it.seq), int(it.kvHead)
	t0, t1 := int(it.t0), int(it.t1)
	first := a.ctxLen[seq] - a.qLen[seq] // position of the sequence's first new token
	rows := (t1 - t0) * (a.numHeads / a.numKVHeads)
	loadQuery(a, sc, seq, kvh, t0, rows, first)
	minPos, maxPos := first+t0, first+t1-1

	table := a.blockTables[seq]
	for k0 := 0; k0 <= maxPos; k0 += kt {
		nk := min(kt, maxPos+1-k0)
		walkTable(a, sc.krow[:nk], table, k0, kvh)
		// Only tiles that reach past the item's first position need a
		// causal mask.
		t := &sc.tile // in scratch: a local would escape through the indirect call
		*t = keyTile{rows: rows, k0: k0, nk: nk, masked: k0+nk-1 > minPos, krow: sc.krow[:nk]}
		if err := tile(a, sc, t); err != nil {
			return err
		}
	}
	writeOutput(a, sc, seq, kvh, t0, rows)
	return nil
}

// walkTable fills krow with the offsets of the len(krow) keys from
// position k0 of KV head kvh: key position p lives in block
// table[p/block_size] at slot p%block_size, so one division per block
// finds it and the block's next keys follow kvTokenStride apart. The
// offsets are relative to the caches' storage offsets.
func walkTable(a *flashArgs, krow []int, table []int32, k0, kvh int) {
	bs := a.blockSize
	for j := 0; j < len(krow); {
		p := k0 + j
		slot := p % bs
		o := int(table[p/bs])*a.kvBlockStride + slot*a.kvTokenStride + kvh*a.kvHeadStride
		end := min(j+bs-slot, len(krow))
		for ; j < end; j++ {
			krow[j] = o
			o += a.kvTokenStride
		}
	}
}

// loadQuery loads the item's query rows into sc.q, pre-scaled by 1/√D so
// each score is one dot, and resets each row's position, running max,
// running sum and accumulator.
func loadQuery(a *flashArgs, sc *scratch, seq, kvh, t0, rows, first int) {
	D, g := a.headDim, a.numHeads/a.numKVHeads
	for r := 0; r < rows; r++ {
		tok, h := t0+r/g, kvh*g+r%g
		src := a.qOffset + (a.qStart[seq]+tok)*a.qStride + h*a.qHeadStride
		dst := sc.q[r*D : r*D+D]
		if a.qF32 != nil && a.qElemStride == 1 {
			row := a.qF32[src : src+D]
			for d := range dst {
				dst[d] = row[d] * a.scale
			}
		} else {
			for d := range dst {
				dst[d] = a.q.Load(src+d*a.qElemStride) * a.scale
			}
		}
		sc.pos[r] = first + tok
		sc.m[r] = float32(math.Inf(-1))
		sc.l[r] = 0
		clear(sc.acc[r*D : r*D+D])
	}
}

// writeOutput writes acc / l of each row straight into its slice
// out[t, h·D : (h+1)·D] of the [T, H·D] buffer.
func writeOutput(a *flashArgs, sc *scratch, seq, kvh, t0, rows int) {
	D, g := a.headDim, a.numHeads/a.numKVHeads
	for r := 0; r < rows; r++ {
		tok, h := t0+r/g, kvh*g+r%g
		dst := a.out[(a.qStart[seq]+tok)*a.outStride+h*D:]
		dst = dst[:D]
		acc := sc.acc[r*D : r*D+D]
		inv := 1 / sc.l[r]
		for d := range dst {
			dst[d] = acc[d] * inv
		}
	}
}
