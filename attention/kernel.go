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
// Two ways to do a key tile's arithmetic, picked per item by its row
// count:
//
//   - prefill tiles (≥ mmMinRows rows) stage the tile's K rows, and its V
//     rows transposed, in the worker's scratch — what FlashAttention does
//     when it loads a K/V tile into SRAM — and run the two products
//     S = Q·Kᵀ and O += P·V through kernels.MatMul's register-blocked SIMD
//     kernel. Staging costs KeyTile·D loads per tile, shared by all the
//     tile's rows; nothing larger than one tile is ever copied.
//     MatMul's vectors run along its inner dimension, which for S = Q·Kᵀ
//     is D: a head narrower than one AVX-512 vector (stories260K's is 8)
//     would leave S entirely to its scalar remainder loop. So such heads
//     stage K transposed as well and compute each score row as D
//     kernels.Axpy calls along the keys (axpyScores), whose vectors are
//     full; P·V keeps MatMul, whose inner dimension is the key count.
//     Without SIMD, small heads take the row-wise loops of decode
//     (rowTile) instead.
//   - smaller items (decode: one token, so g rows; fewer than mmMinRows
//     for MHA and most GQA) read K and V straight from the cache blocks,
//     since staging a tile that so few rows use would add memory traffic
//     instead of saving it: with kernels.DotRows and AxpyRows, one call
//     per query row and key tile through the block-table offsets, when
//     they have a SIMD kernel for D (kernels.RowsAccelerated) or D is
//     wider than smallHeadDim; else, for
//     an F32 cache and D a multiple of 8, row by row with the inline
//     loops of rowTile; else with the scalar 2×4 / 1×4 register-blocked
//     loops scoreTile and pvTile.
//
// Softmax weights below e^expCut are exactly 0 (see expCut: subnormal
// products would cost a microcode assist each).
//
// Each work item is computed start to finish by one worker, in a fixed
// order, so the output does not depend on the number of workers or on
// which worker ran which item (kernels.MatMul's sums are bit-identical
// for any T, and each item's T is fixed by the plan).

// flashArgs are the kernel's arguments, with vLLM's names for the strides.
type flashArgs struct {
	// Query [T, H, D]: element (t, h, d) is at
	// qOffset + t·q_stride + h·q_head_stride + d·qElemStride.
	q             *tensor.Storage
	qF32          []float32 // q's buffer when it is F32
	qOffset       int
	q_stride      int
	q_head_stride int
	qElemStride   int

	// Paged caches [num_blocks, block_size, KVH, D]: element (b, s, h, d)
	// is at off + b·kv_block_stride + s·kv_token_stride + h·kv_head_stride + d.
	kCache, vCache   *tensor.Storage
	kF32, vF32       []float32
	kOffset, vOffset int
	kv_block_stride  int
	kv_token_stride  int
	kv_head_stride   int
	blockSize        int

	numHeads, numKVHeads, headDim int
	scale                         float32

	// Sequences: rows [qStart, qStart+qLen) at positions ctxLen−qLen …
	qStart, qLen, ctxLen []int
	blockTables          [][]int32

	out       []float32 // [T, H·D] row-major
	outStride int       // H·D

	// simd selects tensor/kernels' DotRows and AxpyRows for the direct
	// (decode) loops; without SIMD the scalar register-blocked loops of
	// this file are faster than kernels' generic fallbacks.
	simd bool
}

// mmMinRows is the row count from which a tile's products go through
// kernels.MatMul on staged tiles rather than the direct loops.
const mmMinRows = 4

// smallHeadDim is the head width up to which the direct (decode) loops
// stay in Go when kernels has no row-gather kernel for D (so DotRows and
// AxpyRows would make a call per key): at head_dim 8 a kernels.Dot or Axpy
// call costs more than the eight multiply-adds it does, while rowTile (D a
// multiple of 8) or scoreTile and pvTile keep the arithmetic in registers
// with no call per key. Measured on one AVX-512 core, a GQA decode step (8
// query heads, 4 KV heads, 256 keys) took 32 µs inline vs 52 µs with a
// call per key at D = 16, 46 vs 69 at D = 24, but 74 vs 61 at D = 32.
// With the row-gather kernels (D = 8 and multiples of 16),
// BenchmarkDecodeHeadWidth (medians of -count 3, kernels vs everything
// inline) gives 15.5 vs 22.7 µs at D = 8, 17.7 vs 36.0 at D = 16 and
// 17.6 vs 56.1 at D = 32; D = 24 has no gather kernel and stays inline.
const smallHeadDim = 24

// simdPad is the key count a MatMul tile is padded to a multiple of: the
// widest vector (AVX-512, 16 float32), which AVX2's 8 divides.
const simdPad = 16

// workItem is one (sequence, KV head, token range) of the kernel.
type workItem struct {
	seq, kvHead, t0, t1 int32
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
// out long items first keeps workers finishing together.
func (k *flashKernel) plan(a *flashArgs) (tokensPerTile int) {
	g := a.numHeads / a.numKVHeads
	tokensPerTile = max(1, k.opts.queryTile()/g)
	k.items = k.items[:0]
	for s := range a.qLen {
		ql := a.qLen[s]
		nt := (ql + tokensPerTile - 1) / tokensPerTile
		for tile := nt - 1; tile >= 0; tile-- {
			t0 := tile * tokensPerTile
			t1 := min(t0+tokensPerTile, ql)
			for h := 0; h < a.numKVHeads; h++ {
				k.items = append(k.items, workItem{int32(s), int32(h), int32(t0), int32(t1)})
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
		if err := runItem(k.a, k.items[i], sc, k.kt); err != nil {
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
// it.seq for the g query heads of KV head it.kvHead.
func runItem(a *flashArgs, it workItem, sc *scratch, kt int) error {
	D := a.headDim
	g := a.numHeads / a.numKVHeads
	seq, kvh := int(it.seq), int(it.kvHead)
	t0, t1 := int(it.t0), int(it.t1)
	ql, cl := a.qLen[seq], a.ctxLen[seq]
	first := cl - ql // position of the sequence's first new token
	rows := (t1 - t0) * g

	// Load the query tile, pre-scaled by 1/√D so each score is one dot.
	for r := 0; r < rows; r++ {
		tok, h := t0+r/g, kvh*g+r%g
		src := a.qOffset + (a.qStart[seq]+tok)*a.q_stride + h*a.q_head_stride
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
	minPos, maxPos := first+t0, first+t1-1

	table := a.blockTables[seq]
	bs := a.blockSize
	half := a.kF32 == nil
	useMM := rows >= mmMinRows
	// DotRows and AxpyRows take one call per row and tile; where they
	// have no SIMD kernel for D they fall back to a Dot or Axpy call per
	// key, which only a wide head amortizes, so small heads then use the
	// inline loops, row by row when D is a multiple of 8 (see rowTile).
	simd := a.simd && (D > smallHeadDim || kernels.RowsAccelerated(D))
	// Prefill tiles of heads narrower than one AVX-512 vector score the
	// tile with kernels.Axpy along the keys of K staged transposed (see
	// axpyScores); MatMul would run their S = Q·Kᵀ in its scalar
	// remainder. At D = 16 and 24 the two measured the same. Without
	// SIMD, small heads go row by row like decode.
	smallMM := useMM && a.simd && D < simdPad
	rowwise := !half && !simd && D%8 == 0 && (!useMM || (!a.simd && D <= smallHeadDim))
	for k0 := 0; k0 <= maxPos; k0 += kt {
		nk := min(kt, maxPos+1-k0)
		// Walk the block table: key position p lives in block
		// table[p/block_size] at slot p%block_size, so one division per
		// block finds it and the block's next keys follow kv_token_stride
		// apart. The offsets are relative to the caches' storage offsets.
		for j := 0; j < nk; {
			p := k0 + j
			slot := p % bs
			o := int(table[p/bs])*a.kv_block_stride + slot*a.kv_token_stride + kvh*a.kv_head_stride
			end := min(j+bs-slot, nk)
			for ; j < end; j++ {
				sc.krow[j] = o
				o += a.kv_token_stride
			}
		}
		krow, vrow := sc.krow[:nk], sc.vrow[:nk]
		// Only tiles that reach past the item's first position need a
		// causal mask.
		masked := k0+nk-1 > minPos
		if rowwise {
			rowTile(a, sc, rows, k0, masked, krow)
			continue
		}
		for j, o := range krow {
			krow[j], vrow[j] = a.kOffset+o, a.vOffset+o
		}
		kBuf, vBuf := a.kF32, a.vF32
		if (useMM && !smallMM) || half && !useMM {
			// Stage the K rows in scratch (widening a 16-bit cache).
			stageRows(sc.kt, a.kCache, a.kF32, krow, D)
		}
		if half && !useMM {
			stageRows(sc.vt, a.vCache, a.vF32, vrow, D)
			for j := range krow {
				krow[j], vrow[j] = j*D, j*D
			}
			kBuf, vBuf = sc.kt, sc.vt
		}

		// s[r, j] = q[r]·k[j] with row stride ns. MatMul tiles pad the key
		// count to a multiple of the widest SIMD vector with zero keys, so
		// the P·V product has no scalar remainder; the padding's
		// probabilities are set to 0 below.
		ns := nk
		if useMM {
			ns = (nk + simdPad - 1) / simdPad * simdPad
		}
		s := sc.s[:rows*ns]
		if smallMM {
			stageTransposed(sc.kT[:D*ns], a.kCache, a.kF32, krow, D, ns)
			axpyScores(s, ns, sc.q, rows, D, sc.kT[:D*ns], sc.pos, k0, nk, masked)
		} else if useMM {
			clear(sc.kt[nk*D : ns*D])
			sc.kMat = kernels.Matrix{Format: kernels.F32, Rows: ns, Cols: D, F32: sc.kt[:ns*D]}
			if err := kernels.MatMul(nil, s, sc.q[:rows*D], &sc.kMat, rows); err != nil {
				return err
			}
		} else if simd {
			// One DotRows call per query row scores the whole tile
			// through the block-table offsets, the query in registers.
			for r := 0; r < rows; r++ {
				if err := kernels.DotRows(s[r*ns:r*ns+nk], sc.q[r*D:r*D+D], kBuf, krow); err != nil {
					return err
				}
			}
		} else {
			scoreTile(s, ns, sc.q, rows, D, kBuf, krow)
		}

		// Online softmax over this key tile, row by row.
		for r := 0; r < rows; r++ {
			srow := s[r*ns : r*ns+ns]
			lim := nk
			if masked {
				lim = min(max(sc.pos[r]-k0+1, 0), nk)
			}
			if lim == 0 {
				clear(srow)
				continue
			}
			mx := sc.raiseMax(r, D, rowMax(srow[:lim]))
			sc.l[r] += expSub(srow[:lim], mx)
			clear(srow[lim:])
		}

		// acc[r] += Σ_j p[r, j]·v[j]
		if useMM {
			stageTransposed(sc.vT[:D*ns], a.vCache, a.vF32, vrow, D, ns)
			sc.vMat = kernels.Matrix{Format: kernels.F32, Rows: D, Cols: ns, F32: sc.vT[:D*ns]}
			pv := sc.pv[:rows*D]
			if err := kernels.MatMul(nil, pv, s, &sc.vMat, rows); err != nil {
				return err
			}
			acc := sc.acc[:rows*D]
			for i, x := range pv {
				acc[i] += x
			}
		} else if simd {
			// acc[r] += Σ_j p[r, j]·v_j in one AxpyRows call per row, the
			// accumulator in registers across the tile (weights cut to 0
			// add exact zeros).
			for r := 0; r < rows; r++ {
				if err := kernels.AxpyRows(sc.acc[r*D:r*D+D], s[r*ns:r*ns+nk], vBuf, vrow); err != nil {
					return err
				}
			}
		} else {
			pvTile(sc.acc, rows, D, s, ns, vBuf, vrow)
		}
	}

	// out[t, h·D : (h+1)·D] = acc / l, straight into the [T, H·D] buffer.
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
	return nil
}

// stageRows copies the D-element rows at rows[j] of a cache (its F32
// buffer f32, or the 16-bit storage st when f32 is nil) into dst[j·D:].
func stageRows(dst []float32, st *tensor.Storage, f32 []float32, rows []int, D int) {
	for j, o := range rows {
		d := dst[j*D : j*D+D]
		if f32 != nil {
			copy(d, f32[o:o+D])
			continue
		}
		for x := range d {
			d[x] = st.Load(o + x)
		}
	}
}

// stageTransposed writes the D-element rows at rows[j] of a cache as the
// columns of dst [D, n]: dst[x·n + j] = row_j[x], and zeroes the padding
// columns len(rows) ≤ j < n (a zero weight times them must stay zero).
func stageTransposed(dst []float32, st *tensor.Storage, f32 []float32, rows []int, D, n int) {
	if len(rows) < n {
		for x := 0; x < D; x++ {
			clear(dst[x*n+len(rows) : x*n+n])
		}
	}
	if f32 != nil && D%8 == 0 {
		// Eight columns at a time, one row per iteration: eight loads and
		// eight stores, no index arithmetic beyond j (the eight dst lines
		// are cut to len(rows) once, so their stores need no bounds check).
		m := len(rows)
		for c := 0; c < D; c += 8 {
			d0, d1 := dst[c*n:c*n+m], dst[(c+1)*n:(c+1)*n+m]
			d2, d3 := dst[(c+2)*n:(c+2)*n+m], dst[(c+3)*n:(c+3)*n+m]
			d4, d5 := dst[(c+4)*n:(c+4)*n+m], dst[(c+5)*n:(c+5)*n+m]
			d6, d7 := dst[(c+6)*n:(c+6)*n+m], dst[(c+7)*n:(c+7)*n+m]
			for j, o := range rows {
				r := (*[8]float32)(f32[o+c : o+c+8])
				d0[j], d1[j], d2[j], d3[j] = r[0], r[1], r[2], r[3]
				d4[j], d5[j], d6[j], d7[j] = r[4], r[5], r[6], r[7]
			}
		}
		return
	}
	j := 0
	if f32 != nil {
		// Four rows at a time: each dst line gets four adjacent stores.
		for ; j+4 <= len(rows); j += 4 {
			r0 := f32[rows[j] : rows[j]+D]
			r1 := f32[rows[j+1] : rows[j+1]+D]
			r2 := f32[rows[j+2] : rows[j+2]+D]
			r3 := f32[rows[j+3] : rows[j+3]+D]
			r1, r2, r3 = r1[:len(r0)], r2[:len(r0)], r3[:len(r0)]
			for x, v := range r0 {
				d := dst[x*n+j : x*n+j+4]
				d[0], d[1], d[2], d[3] = v, r1[x], r2[x], r3[x]
			}
		}
	}
	for ; j < len(rows); j++ {
		o := rows[j]
		if f32 != nil {
			for x, v := range f32[o : o+D] {
				dst[x*n+j] = v
			}
			continue
		}
		for x := 0; x < D; x++ {
			dst[x*n+j] = st.Load(o + x)
		}
	}
}

// axpyScores computes the scores of a key tile for heads too narrow for
// kernels.MatMul's SIMD dot products (D < simdPad, less than one AVX-512
// vector): with K staged transposed, kT [D, ns] (kT[d·ns + j] =
// k_j[d]), row r's scores are a sum of D scaled key columns,
//
//	s[r, 0:w] = Σ_d q[r, d] · kT[d, 0:w]
//
// which is D kernels.Axpy calls of w keys each, all whole SIMD vectors
// (w is a multiple of simdPad). A masked row only scores its first lim
// keys rounded up to simdPad; rows that see no key of the tile are left
// for the softmax pass to clear. Each score is the same FMA chain over d
// whatever w is, so the result does not depend on the mask.
func axpyScores(s []float32, ns int, q []float32, rows, D int, kT []float32, pos []int, k0, nk int, masked bool) {
	for r := 0; r < rows; r++ {
		lim := nk
		if masked {
			lim = min(max(pos[r]-k0+1, 0), nk)
		}
		if lim == 0 {
			continue
		}
		w := (lim + simdPad - 1) / simdPad * simdPad
		srow := s[r*ns : r*ns+w]
		clear(srow)
		for d, x := range q[r*D : r*D+D] {
			kernels.Axpy(x, kT[d*ns:d*ns+w], srow)
		}
	}
}

// scoreTile computes s[r, j] = q[r] · kb[krow[j] : krow[j]+D] for rows
// r < rows and keys j < len(krow); s has row stride sStride. Two query rows
// × four keys at a time share every load (eight accumulators, six loads per
// eight multiply-adds); leftovers fall back to 2×1, 1×4 and 1×1.
func scoreTile(s []float32, sStride int, q []float32, rows, D int, kb []float32, krow []int) {
	nk := len(krow)
	r := 0
	for ; r+2 <= rows; r += 2 {
		q0 := q[r*D : r*D+D]
		q1 := q[(r+1)*D : (r+1)*D+D]
		s0 := s[r*sStride : r*sStride+nk]
		s1 := s[(r+1)*sStride : (r+1)*sStride+nk]
		j := 0
		for ; j+4 <= nk; j += 4 {
			k0 := kb[krow[j] : krow[j]+D]
			k1 := kb[krow[j+1] : krow[j+1]+D]
			k2 := kb[krow[j+2] : krow[j+2]+D]
			k3 := kb[krow[j+3] : krow[j+3]+D]
			q1, k0, k1, k2, k3 := q1[:len(q0)], k0[:len(q0)], k1[:len(q0)], k2[:len(q0)], k3[:len(q0)]
			var a00, a01, a02, a03, a10, a11, a12, a13 float32
			for d, x := range q0 {
				y := q1[d]
				c0, c1, c2, c3 := k0[d], k1[d], k2[d], k3[d]
				a00 += x * c0
				a01 += x * c1
				a02 += x * c2
				a03 += x * c3
				a10 += y * c0
				a11 += y * c1
				a12 += y * c2
				a13 += y * c3
			}
			s0[j], s0[j+1], s0[j+2], s0[j+3] = a00, a01, a02, a03
			s1[j], s1[j+1], s1[j+2], s1[j+3] = a10, a11, a12, a13
		}
		for ; j < nk; j++ {
			k0 := kb[krow[j] : krow[j]+D]
			s0[j] = dot(q0, k0)
			s1[j] = dot(q1, k0)
		}
	}
	if r < rows {
		q0 := q[r*D : r*D+D]
		s0 := s[r*sStride : r*sStride+nk]
		j := 0
		for ; j+4 <= nk; j += 4 {
			k0 := kb[krow[j] : krow[j]+D]
			k1 := kb[krow[j+1] : krow[j+1]+D]
			k2 := kb[krow[j+2] : krow[j+2]+D]
			k3 := kb[krow[j+3] : krow[j+3]+D]
			k0, k1, k2, k3 = k0[:len(q0)], k1[:len(q0)], k2[:len(q0)], k3[:len(q0)]
			var a0, a1, a2, a3 float32
			for d, x := range q0 {
				a0 += x * k0[d]
				a1 += x * k1[d]
				a2 += x * k2[d]
				a3 += x * k3[d]
			}
			s0[j], s0[j+1], s0[j+2], s0[j+3] = a0, a1, a2, a3
		}
		for ; j < nk; j++ {
			s0[j] = dot(q0, kb[krow[j]:krow[j]+D])
		}
	}
}

// rowMax returns the largest element of s, skipping NaNs (−Inf when s
// holds none other). It compares the floats as integers: flipping the
// magnitude bits of negative floats, k ^= (k >> 31) & 0x7fffffff, maps
// float order onto int32 order (−Inf < … < −0 < +0 < … < +Inf < +NaN,
// with −NaNs below −Inf), and the integer max compiles to a conditional
// move, four of them in flight. A float compare is a branch, mispredicted
// each time the running max of random scores rises (~ln n times per
// row), which cost more than the scan itself. A +NaN would win, so then
// the scan is redone with float compares, which skip it. −0 and +0 may
// come out either way; both give the same exponentials.
func rowMax(s []float32) float32 {
	const negInf = -0x7f800001 // (0xff800000 as int32) ^ 0x7fffffff: −Inf mapped
	m0, m1, m2, m3 := int32(negInf), int32(negInf), int32(negInf), int32(negInf)
	i := 0
	for ; i+4 <= len(s); i += 4 { // four running maxima: four independent cmov chains
		c := (*[4]float32)(s[i : i+4])
		k0, k1 := int32(math.Float32bits(c[0])), int32(math.Float32bits(c[1]))
		k2, k3 := int32(math.Float32bits(c[2])), int32(math.Float32bits(c[3]))
		k0 ^= (k0 >> 31) & 0x7fffffff
		k1 ^= (k1 >> 31) & 0x7fffffff
		k2 ^= (k2 >> 31) & 0x7fffffff
		k3 ^= (k3 >> 31) & 0x7fffffff
		m0, m1, m2, m3 = max(m0, k0), max(m1, k1), max(m2, k2), max(m3, k3)
	}
	for ; i < len(s); i++ {
		k := int32(math.Float32bits(s[i]))
		m0 = max(m0, k^((k>>31)&0x7fffffff))
	}
	mk := max(m0, m1, m2, m3)
	mk ^= (mk >> 31) & 0x7fffffff
	mx := math.Float32frombits(uint32(mk))
	if mx == mx {
		return mx
	}
	mx = float32(math.Inf(-1))
	for _, x := range s {
		if x > mx {
			mx = x
		}
	}
	return mx
}

// raiseMax folds a key tile's largest score mx of row r into the row's
// running max, and when that grows rescales what the row accumulated so
// far by exp(m_old − m_new): the FlashAttention correction. A factor
// below expCut is 0 (the old terms are negligible next to the new max).
// It returns the row's running max.
func (sc *scratch) raiseMax(r, D int, mx float32) float32 {
	mOld := sc.m[r]
	if !(mx > mOld) { // also keeps the old max when mx is NaN
		return mOld
	}
	if sc.l[r] != 0 {
		c := float32(0)
		if d := mOld - mx; d >= expCut {
			c = expf(d)
		}
		sc.l[r] *= c
		acc := sc.acc[r*D : r*D+D]
		for i := range acc {
			acc[i] *= c
		}
	}
	sc.m[r] = mx
	return mx
}

// rowTile runs one key tile of the small-head path (F32 cache, D a
// multiple of 8 up to smallHeadDim, or any multiple of 8 without SIMD, and
// too few rows for MatMul tiles: every decode step of a small model) one
// query row at a time: scores of the row's keys (and their max, in the
// same pass), the online-softmax fold, the exponentials, and P·V. A
// masked row only scores the keys it may see.
// krow holds each key's element offset, relative to the caches' storage
// offsets, for K and V alike.
//
// Everything is inline Go with the row's eight query (or accumulator)
// values in registers while the keys stream past: at head_dim 8 a
// kernels.Dot or Axpy call per key cost more than its eight
// multiply-adds, and scoreTile's 2×4 register blocking spends more on
// cutting four key slices per step than on arithmetic.
func rowTile(a *flashArgs, sc *scratch, rows, k0 int, masked bool, krow []int) {
	D := a.headDim
	kb, vb := a.kF32[a.kOffset:], a.vF32[a.vOffset:]
	for r := 0; r < rows; r++ {
		lim := len(krow)
		if masked {
			lim = min(max(sc.pos[r]-k0+1, 0), lim)
		}
		if lim == 0 {
			continue
		}
		srow := sc.s[:lim]
		q := sc.q[r*D : r*D+D]
		mx := scoreRow8(srow, q, kb, krow[:lim])
		mx = sc.raiseMax(r, D, mx)
		sc.l[r] += expSub(srow, mx)
		pvRow8(sc.acc[r*D:r*D+D], srow, vb, krow[:lim])
	}
}

// scoreRow8 sets s[j] = q·k_j, k_j = kb[krow[j] : krow[j]+D], for D =
// len(q) a multiple of 8, and returns the largest score (NaNs skipped).
// Eight query elements at a time stay in registers and each key's eight
// products are summed as a tree, with no inner loop.
func scoreRow8(s, q, kb []float32, krow []int) float32 {
	D := len(q)
	s = s[:len(krow)]
	mx := float32(math.Inf(-1))
	qc := (*[8]float32)(q[0:8])
	q0, q1, q2, q3, q4, q5, q6, q7 := qc[0], qc[1], qc[2], qc[3], qc[4], qc[5], qc[6], qc[7]
	if D == 8 {
		for j, o := range krow {
			k := (*[8]float32)(kb[o : o+8])
			x := ((q0*k[0] + q1*k[1]) + (q2*k[2] + q3*k[3])) + ((q4*k[4] + q5*k[5]) + (q6*k[6] + q7*k[7]))
			s[j] = x
			if x > mx {
				mx = x
			}
		}
		return mx
	}
	for j, o := range krow {
		k := (*[8]float32)(kb[o : o+8])
		s[j] = ((q0*k[0] + q1*k[1]) + (q2*k[2] + q3*k[3])) + ((q4*k[4] + q5*k[5]) + (q6*k[6] + q7*k[7]))
	}
	for c := 8; c < D; c += 8 {
		qc := (*[8]float32)(q[c : c+8])
		q0, q1, q2, q3, q4, q5, q6, q7 := qc[0], qc[1], qc[2], qc[3], qc[4], qc[5], qc[6], qc[7]
		for j, o := range krow {
			k := (*[8]float32)(kb[o+c : o+c+8])
			s[j] += ((q0*k[0] + q1*k[1]) + (q2*k[2] + q3*k[3])) + ((q4*k[4] + q5*k[5]) + (q6*k[6] + q7*k[7]))
		}
	}
	for _, x := range s {
		if x > mx {
			mx = x
		}
	}
	return mx
}

// pvRow8 adds Σ_j p[j]·v_j, v_j = vb[vrow[j] : vrow[j]+D], to acc, for
// D = len(acc) a multiple of 8. Eight accumulators stay in registers
// across all value rows. Weight-0 keys (below expCut) are not skipped: a
// test per key costs more than the keys it would skip, and 0·v adds
// exactly 0.
func pvRow8(acc, p, vb []float32, vrow []int) {
	D := len(acc)
	p = p[:len(vrow)]
	for c := 0; c < D; c += 8 {
		ac := (*[8]float32)(acc[c : c+8])
		a0, a1, a2, a3, a4, a5, a6, a7 := ac[0], ac[1], ac[2], ac[3], ac[4], ac[5], ac[6], ac[7]
		for j, o := range vrow {
			w := p[j]
			v := (*[8]float32)(vb[o+c : o+c+8])
			a0 += w * v[0]
			a1 += w * v[1]
			a2 += w * v[2]
			a3 += w * v[3]
			a4 += w * v[4]
			a5 += w * v[5]
			a6 += w * v[6]
			a7 += w * v[7]
		}
		ac[0], ac[1], ac[2], ac[3], ac[4], ac[5], ac[6], ac[7] = a0, a1, a2, a3, a4, a5, a6, a7
	}
}

// dot is x·y with four independent accumulators, so consecutive
// multiply-adds do not wait on each other.
func dot(x, y []float32) float32 {
	y = y[:len(x)]
	var a0, a1, a2, a3 float32
	d := 0
	for ; d+4 <= len(x); d += 4 {
		a0 += x[d] * y[d]
		a1 += x[d+1] * y[d+1]
		a2 += x[d+2] * y[d+2]
		a3 += x[d+3] * y[d+3]
	}
	for ; d < len(x); d++ {
		a0 += x[d] * y[d]
	}
	return (a0 + a1) + (a2 + a3)
}

// pvTile adds Σ_j p[r, j]·vb[vrow[j] : vrow[j]+D] to acc[r] for every row:
// two rows × four value rows at a time, skipping groups whose weights are
// all zero (masked keys).
func pvTile(acc []float32, rows, D int, p []float32, pStride int, vb []float32, vrow []int) {
	nk := len(vrow)
	r := 0
	for ; r+2 <= rows; r += 2 {
		a0 := acc[r*D : r*D+D]
		a1 := acc[(r+1)*D : (r+1)*D+D]
		p0 := p[r*pStride : r*pStride+nk]
		p1 := p[(r+1)*pStride : (r+1)*pStride+nk]
		j := 0
		for ; j+4 <= nk; j += 4 {
			w00, w01, w02, w03 := p0[j], p0[j+1], p0[j+2], p0[j+3]
			w10, w11, w12, w13 := p1[j], p1[j+1], p1[j+2], p1[j+3]
			if w00 == 0 && w01 == 0 && w02 == 0 && w03 == 0 && w10 == 0 && w11 == 0 && w12 == 0 && w13 == 0 {
				continue
			}
			v0 := vb[vrow[j] : vrow[j]+D]
			v1 := vb[vrow[j+1] : vrow[j+1]+D]
			v2 := vb[vrow[j+2] : vrow[j+2]+D]
			v3 := vb[vrow[j+3] : vrow[j+3]+D]
			a1 := a1[:len(a0)]
			v0, v1, v2, v3 = v0[:len(a0)], v1[:len(a0)], v2[:len(a0)], v3[:len(a0)]
			for d := range a0 {
				x0, x1, x2, x3 := v0[d], v1[d], v2[d], v3[d]
				a0[d] += w00*x0 + w01*x1 + w02*x2 + w03*x3
				a1[d] += w10*x0 + w11*x1 + w12*x2 + w13*x3
			}
		}
		for ; j < nk; j++ {
			w0, w1 := p0[j], p1[j]
			if w0 == 0 && w1 == 0 {
				continue
			}
			v0 := vb[vrow[j] : vrow[j]+D]
			a1 := a1[:len(a0)]
			v0 = v0[:len(a0)]
			for d := range a0 {
				a0[d] += w0 * v0[d]
				a1[d] += w1 * v0[d]
			}
		}
	}
	if r < rows {
		a0 := acc[r*D : r*D+D]
		p0 := p[r*pStride : r*pStride+nk]
		j := 0
		for ; j+4 <= nk; j += 4 {
			w0, w1, w2, w3 := p0[j], p0[j+1], p0[j+2], p0[j+3]
			if w0 == 0 && w1 == 0 && w2 == 0 && w3 == 0 {
				continue
			}
			v0 := vb[vrow[j] : vrow[j]+D]
			v1 := vb[vrow[j+1] : vrow[j+1]+D]
			v2 := vb[vrow[j+2] : vrow[j+2]+D]
			v3 := vb[vrow[j+3] : vrow[j+3]+D]
			v0, v1, v2, v3 = v0[:len(a0)], v1[:len(a0)], v2[:len(a0)], v3[:len(a0)]
			for d := range a0 {
				a0[d] += w0*v0[d] + w1*v1[d] + w2*v2[d] + w3*v3[d]
			}
		}
		for ; j < nk; j++ {
			if w := p0[j]; w != 0 {
				v0 := vb[vrow[j] : vrow[j]+D]
				v0 = v0[:len(a0)]
				for d := range a0 {
					a0[d] += w * v0[d]
				}
			}
		}
	}
}
