package attention

import (
	"github.com/stride-lm/stride/tensor"
	"github.com/stride-lm/stride/tensor/kernels"
)

// This file holds the five ways the fused kernel computes one key tile of
// a work item (see kernel.go): each folds the scores of the item's rows
// against the tile's keys into the rows' running max, running sum and
// accumulator. plan picks one per item by chooseTile, so the item loop
// only walks tiles.

// tileKind names a tile implementation; it indexes tileFuncs.
type tileKind uint8

const (
	// tileMatMul stages K and Vᵀ and runs S = Q·Kᵀ and O += P·V through
	// kernels.MatMul (prefill items, unless another kind below takes them).
	tileMatMul tileKind = iota
	// tileAxpyKeys stages Kᵀ and scores each row with kernels.Axpy along
	// the keys, then P·V through kernels.MatMul (prefill items of heads
	// narrower than one AVX-512 vector, SIMD on).
	tileAxpyKeys
	// tileGather reads K and V in place through the block-table offsets
	// with kernels.DotRows and AxpyRows, one call per row (decode items
	// whose D has a gather kernel or is wider than smallHeadDim, SIMD on).
	tileGather
	// tileInline runs each row through kernels.DotRows8, ExpSub and
	// AxpyRows8 (F32 caches, D a multiple of 8, where no SIMD call pays).
	tileInline
	// tileBlocked runs the portable 2×4 register-blocked
	// kernels.DotRowsTile and AxpyRowsTile (what is left: 16-bit caches
	// or D not a multiple of 8, without a SIMD call that pays).
	tileBlocked
)

// keyTile is one key tile of a work item, as runItem hands it to the
// item's tile implementation.
type keyTile struct {
	rows   int   // query rows of the item (tokens × g)
	k0, nk int   // first key position and key count
	masked bool  // some row's causal limit falls inside the tile
	krow   []int // [nk] offset of each key's row relative to the caches' storage offsets (K and V alike); a tile may overwrite it
}

// tileFunc computes one key tile of a work item into sc.
type tileFunc func(a *flashArgs, sc *scratch, t *keyTile) error

// tileFuncs maps each tileKind to its implementation.
var tileFuncs = [...]tileFunc{
	tileMatMul:   matmulTile,
	tileAxpyKeys: axpyKeysTile,
	tileGather:   gatherTile,
	tileInline:   inlineTile,
	tileBlocked:  blockedTile,
}

// chooseTile is the tile implementation for items of rows query rows and
// head width D, on a 16-bit (half) or F32 cache, with or without SIMD
// kernels.
func chooseTile(rows, D int, half, simd bool) tileKind {
	if rows >= mmMinRows {
		switch {
		case simd && D < simdPad:
			// MatMul would run S = Q·Kᵀ in its scalar remainder: its
			// vectors run along D. From D = 16 on MatMul has whole
			// vectors, and at 16 and 24 the two measured the same, so
			// wider heads keep MatMul.
			return tileAxpyKeys
		case !simd && !half && D%8 == 0 && D <= smallHeadDim:
			return tileInline
		}
		return tileMatMul
	}
	// DotRows and AxpyRows take one call per row and tile; where they
	// have no SIMD kernel for D they fall back to a Dot or Axpy call per
	// key, which only a wide head amortizes.
	switch {
	case simd && (D > smallHeadDim || kernels.RowsAccelerated(D)):
		return tileGather
	case !half && D%8 == 0:
		return tileInline
	}
	return tileBlocked
}

// matmulTile stages the tile's K rows and V rows transposed in scratch
// (widening a 16-bit cache) and runs S = Q·Kᵀ and O += P·V through
// kernels.MatMul. The key count is padded to a multiple of the widest
// SIMD vector with zero keys, so P·V has no scalar remainder; the
// padding's probabilities are 0.
func matmulTile(a *flashArgs, sc *scratch, t *keyTile) error {
	D := a.headDim
	krow, vrow := cacheRows(a, sc, t)
	stageRows(sc.kt, a.kCache, a.kF32, krow, D)
	ns := (t.nk + simdPad - 1) / simdPad * simdPad
	s := sc.s[:t.rows*ns]
	clear(sc.kt[t.nk*D : ns*D])
	sc.kMat = kernels.Matrix{Format: kernels.F32, Rows: ns, Cols: D, F32: sc.kt[:ns*D]}
	if err := kernels.MatMul(nil, s, sc.q[:t.rows*D], &sc.kMat, t.rows); err != nil {
		return err
	}
	sc.softmaxTile(s, ns, D, t)
	return sc.pvMatMul(a, s, ns, t.rows, vrow)
}

// axpyKeysTile stages the tile's K rows transposed, scores each row with
// kernels.Axpy along the keys (axpyScores), and runs P·V through
// kernels.MatMul like matmulTile.
func axpyKeysTile(a *flashArgs, sc *scratch, t *keyTile) error {
	D := a.headDim
	krow, vrow := cacheRows(a, sc, t)
	ns := (t.nk + simdPad - 1) / simdPad * simdPad
	s := sc.s[:t.rows*ns]
	if err := stageTransposed(sc.kT[:D*ns], a.kCache, a.kF32, krow, D, ns); err != nil {
		return err
	}
	if err := axpyScores(s, ns, sc.q, t.rows, D, sc.kT[:D*ns], sc.pos, t.k0, t.nk, t.masked); err != nil {
		return err
	}
	sc.softmaxTile(s, ns, D, t)
	return sc.pvMatMul(a, s, ns, t.rows, vrow)
}

// gatherTile scores the tile's query rows with one kernels.DotRowsN call
// (each row's query in registers in turn) and adds P·V with one
// AxpyRowsN call (each accumulator in registers across the tile; weights
// cut to 0 add exact zeros), reading K and V through the block-table
// offsets, which the kernels check once for all the rows. Each row gets
// the bits of a one-row call, whatever rows share the tile.
func gatherTile(a *flashArgs, sc *scratch, t *keyTile) error {
	D, nk := a.headDim, t.nk
	kBuf, vBuf, krow, vrow := directRows(a, sc, t)
	s := sc.s[:t.rows*nk]
	if err := kernels.DotRowsN(s, nk, sc.q[:t.rows*D], D, t.rows, kBuf, krow); err != nil {
		return err
	}
	sc.softmaxTile(s, nk, D, t)
	return kernels.AxpyRowsN(sc.acc[:t.rows*D], D, t.rows, s, nk, vBuf, vrow)
}

// blockedTile scores the tile and adds P·V with the portable 2×4
// register-blocked kernels.DotRowsTile and AxpyRowsTile.
func blockedTile(a *flashArgs, sc *scratch, t *keyTile) error {
	D, nk := a.headDim, t.nk
	kBuf, vBuf, krow, vrow := directRows(a, sc, t)
	s := sc.s[:t.rows*nk]
	kernels.DotRowsTile(s, nk, sc.q[:t.rows*D], D, kBuf, krow)
	sc.softmaxTile(s, nk, D, t)
	kernels.AxpyRowsTile(sc.acc[:t.rows*D], D, s, nk, vBuf, vrow)
	return nil
}

// inlineTile runs one key tile of an F32 cache with D a multiple of 8 one
// query row at a time: the row's scores and their max in one pass
// (kernels.DotRows8), the online-softmax fold, the exponentials, and P·V
// (kernels.AxpyRows8). A masked row only scores the keys it may see.
//
// Everything keeps the row's eight query (or accumulator) values in
// registers while the keys stream past: at head_dim 8 a kernels.Dot or
// Axpy call per key costs more than its eight multiply-adds, and
// DotRowsTile's 2×4 register blocking spends more on cutting four key
// slices per step than on arithmetic.
func inlineTile(a *flashArgs, sc *scratch, t *keyTile) error {
	D := a.headDim
	kb, vb := a.kF32[a.kOffset:], a.vF32[a.vOffset:]
	for r := 0; r < t.rows; r++ {
		lim := visibleKeys(sc.pos[r], t.k0, t.nk, t.masked)
		if lim == 0 {
			continue
		}
		srow := sc.s[:lim]
		mx := kernels.DotRows8(srow, sc.q[r*D:r*D+D], kb, t.krow[:lim])
		mx = sc.raiseMax(r, D, mx)
		sc.l[r] += expSub(srow, mx)
		kernels.AxpyRows8(sc.acc[r*D:r*D+D], srow, vb, t.krow[:lim])
	}
	return nil
}

// visibleKeys is how many of a tile's nk keys, from position k0, a query
// row at position pos sees: all of them, or in a masked tile (causal
// limit inside it) those up to pos, none when the tile starts past it.
func visibleKeys(pos, k0, nk int, masked bool) int {
	if !masked {
		return nk
	}
	return min(max(pos-k0+1, 0), nk)
}

// cacheRows turns the tile's key offsets into element offsets of the K
// cache's storage (in t.krow) and of the V cache's (in sc.vrow).
func cacheRows(a *flashArgs, sc *scratch, t *keyTile) (krow, vrow []int) {
	krow, vrow = t.krow, sc.vrow[:t.nk]
	for j, o := range krow {
		krow[j], vrow[j] = a.kOffset+o, a.vOffset+o
	}
	return krow, vrow
}

// directRows returns the buffers and row offsets the direct tiles (gather
// and blocked) read K and V from: the F32 caches themselves, or for a
// 16-bit cache the tile's rows widened into scratch.
func directRows(a *flashArgs, sc *scratch, t *keyTile) (kBuf, vBuf []float32, krow, vrow []int) {
	krow, vrow = cacheRows(a, sc, t)
	if a.kF32 != nil {
		return a.kF32, a.vF32, krow, vrow
	}
	D := a.headDim
	stageRows(sc.kt, a.kCache, a.kF32, krow, D)
	stageRows(sc.vt, a.vCache, a.vF32, vrow, D)
	for j := range krow {
		krow[j], vrow[j] = j*D, j*D
	}
	return sc.kt, sc.vt, krow, vrow
}

// softmaxTile runs the online softmax over the tile's scores s [rows, ns],
// row by row: a row's visible keys (all nk, or up to its position in a
// masked tile) become exp(s − m) with m its new running max, and every
// other score of the row becomes 0.
func (sc *scratch) softmaxTile(s []float32, ns, D int, t *keyTile) {
	for r := 0; r < t.rows; r++ {
		srow := s[r*ns : r*ns+ns]
		lim := visibleKeys(sc.pos[r], t.k0, t.nk, t.masked)
		if lim == 0 {
			clear(srow)
			continue
		}
		mx := sc.raiseMax(r, D, kernels.RowMax(srow[:lim]))
		sc.l[r] += expSub(srow[:lim], mx)
		clear(srow[lim:])
	}
}

// pvMatMul adds P·V of a MatMul tile to the accumulators: the V rows at
// vrow staged transposed (zero padding columns up to ns) and multiplied
// by the probabilities p [rows, ns] through kernels.MatMul.
func (sc *scratch) pvMatMul(a *flashArgs, p []float32, ns, rows int, vrow []int) error {
	D := a.headDim
	if err := stageTransposed(sc.vT[:D*ns], a.vCache, a.vF32, vrow, D, ns); err != nil {
		return err
	}
	sc.vMat = kernels.Matrix{Format: kernels.F32, Rows: D, Cols: ns, F32: sc.vT[:D*ns]}
	pv := sc.pv[:rows*D]
	if err := kernels.MatMul(nil, pv, p, &sc.vMat, rows); err != nil {
		return err
	}
	acc := sc.acc[:rows*D]
	for i, x := range pv {
		acc[i] += x
	}
	return nil
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
func stageTransposed(dst []float32, st *tensor.Storage, f32 []float32, rows []int, D, n int) error {
	if len(rows) < n {
		for x := 0; x < D; x++ {
			clear(dst[x*n+len(rows) : x*n+n])
		}
	}
	if f32 != nil && D%8 == 0 {
		// Eight columns at a time: kernels.TransposeRows8 transposes
		// 8 × 8 blocks in registers.
		for c := 0; c < D; c += 8 {
			if err := kernels.TransposeRows8(dst[c*n:], n, f32[c:], rows); err != nil {
				return err
			}
		}
		return nil
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
	return nil
}

// axpyScores computes the scores of a key tile for heads too narrow for
// kernels.MatMul's SIMD dot products (D < simdPad, less than one AVX-512
// vector): with K staged transposed, kT [D, ns] (kT[d·ns + j] =
// k_j[d]), row r's scores are a sum of D scaled key columns,
//
//	s[r, 0:w] = Σ_d q[r, d] · kT[d, 0:w]
//
// one kernels.VecMat call per row over w keys, all whole SIMD vectors (w
// is a multiple of simdPad): D Axpy calls' FMA chain, with each score
// stored once instead of D times. A masked row only scores its first lim
// keys rounded up to simdPad; rows that see no key of the tile are left
// for the softmax pass to clear. Each score is the same FMA chain over d
// whatever w is, so the result does not depend on the mask.
func axpyScores(s []float32, ns int, q []float32, rows, D int, kT []float32, pos []int, k0, nk int, masked bool) error {
	for r := 0; r < rows; r++ {
		lim := visibleKeys(pos[r], k0, nk, masked)
		if lim == 0 {
			continue
		}
		w := (lim + simdPad - 1) / simdPad * simdPad
		if err := kernels.VecMat(s[r*ns:r*ns+w], q[r*D:r*D+D], kT, ns); err != nil {
			return err
		}
	}
	return nil
}
