package kernels

import "fmt"

// Row-gather kernels for paged attention. In a paged KV cache the keys of
// one head are not a matrix: key j lives at an offset computed from the
// block table (block·kv_block_stride + slot·kv_token_stride +
// head·kv_head_stride), so consecutive keys are kv_token_stride apart
// inside a block and anywhere at all across blocks. vLLM's paged-attention
// kernel reads them straight through the block table; these do the same on
// the CPU, one call per tile of keys instead of one Dot or Axpy call (and
// one horizontal sum) per key, with the query (or the output accumulator)
// held in registers for the whole tile.

// maxGatherDim is the widest row the AVX-512 gather kernels keep in
// registers (16 vectors of 16).
const maxGatherDim = 256

// DotRowsN sets out[i·ldo+j] = Σ_d q[i·D+d]·base[rows[j]+d] (d < D) for
// n query rows of D values and every j < len(rows) (ldo ≥ len(rows)): the
// scores of each query row against len(rows) key rows at the given element
// offsets of base, with the offsets checked once for all n; query row i's
// scores are the bits it gets alone (n = 1). It returns an error, writing
// nothing, if out is too short or a row does not fit in base. Attention
// scores the query rows that share a KV head this way, one call per key
// tile.
func DotRowsN(out []float32, ldo int, q []float32, D, n int, base []float32, rows []int) error {
	return dotRows("DotRowsN", out, ldo, q, D, n, base, rows)
}

// dotRows checks a DotRowsN call and runs it: one kernel call per query
// row, or at head width 8 with several rows on AVX-512 dotRows8T.
func dotRows(op string, out []float32, ldo int, q []float32, D, n int, base []float32, rows []int) error {
	if err := checkRowsN(op, len(out), ldo, len(q), D, n, len(rows)); err != nil {
		return err
	}
	if err := checkRows(op, ldo, D, len(base), rows); err != nil {
		return err
	}
	if D == 8 && n >= 2 && len(rows) >= 16 && RowsAccelerated(D) {
		dotRows8T(out, ldo, q, n, base, rows)
		return nil
	}
	for i := 0; i < n; i++ {
		o, qi := out[i*ldo:i*ldo+len(rows)], q[i*D:i*D+D]
		switch {
		case len(rows) == 0 || D == 0:
			clear(o)
		case RowsAccelerated(D) && D == 8:
			dotRows8wAVX512(&o[0], &qi[0], &base[0], &rows[0], len(rows))
		case RowsAccelerated(D):
			dotRowsAVX512(&o[0], &qi[0], D, &base[0], &rows[0], len(rows))
		default:
			for j, r := range rows {
				o[j] = Dot(qi, base[r:r+D])
			}
		}
	}
	return nil
}

// transposeKeys is the most keys dotRows8T stages transposed at once
// (the fused attention kernel's default key tile).
const transposeKeys = 128

// dotRows8T is DotRowsN for D = 8 on AVX-512 with several query rows: it
// stages the keys, up to transposeKeys at a time in whole groups of 16,
// transposed (eight columns of Kᵀ, TransposeRows8's 8 × 8 register
// transposes) and scores every row against sixteen keys per
// instruction with the products and adds of dotRows8wAVX512's horizontal
// sum (dotRows8TAVX512), so each score keeps the bits of a one-row
// DotRows call while the staging is shared by all the rows. The keys past
// the last group of 16 go through dotRows8wAVX512 itself.
func dotRows8T(out []float32, ldo int, q []float32, n int, base []float32, rows []int) {
	var kT [8 * transposeKeys]float32
	for j0 := 0; j0 < len(rows); j0 += transposeKeys {
		m := min(transposeKeys, len(rows)-j0)
		full := m &^ 15
		if full > 0 {
			transpose8AVX2(&kT[0], full, &base[0], &rows[j0], full/8)
			dotRows8TAVX512(&out[j0], ldo, &q[0], n, &kT[0], full, full/16)
		}
		if full < m {
			for i := 0; i < n; i++ {
				dotRows8wAVX512(&out[i*ldo+j0+full], &q[i*8], &base[0], &rows[j0+full], m-full)
			}
		}
	}
}

// AxpyRowsN adds Σ_j p[i·ldp+j]·base[rows[j] : rows[j]+D] to each of n
// accumulators of D values (acc[i·D : (i+1)·D]), key by key in order:
// each element gets one fused multiply-add per key, as a sequence of Axpy
// calls gives it when D is a whole number of vectors. The rows are checked
// once for all n, and accumulator i gets the bits it gets alone (n = 1).
// It returns an error, touching nothing, if p is too short (ldp ≥
// len(rows)) or a row does not fit in base.
func AxpyRowsN(acc []float32, D, n int, p []float32, ldp int, base []float32, rows []int) error {
	return axpyRows("AxpyRowsN", acc, D, n, p, ldp, base, rows)
}

// axpyRows checks an AxpyRowsN call and runs it: one kernel call per
// accumulator, or at head width 8 on AVX-512 one per four of them.
func axpyRows(op string, acc []float32, D, n int, p []float32, ldp int, base []float32, rows []int) error {
	if err := checkRowsN(op, len(p), ldp, len(acc), D, n, len(rows)); err != nil {
		return err
	}
	if err := checkRows(op, ldp, D, len(base), rows); err != nil {
		return err
	}
	if len(rows) == 0 || D == 0 {
		return nil
	}
	i := 0
	if D == 8 && RowsAccelerated(D) {
		// Four accumulators per pass, each with its own FMA chain.
		for ; i+4 <= n; i += 4 {
			axpyRows8x4AVX512(&acc[i*D], &p[i*ldp], ldp, &base[0], &rows[0], len(rows))
		}
	}
	for ; i < n; i++ {
		a, pi := acc[i*D:i*D+D], p[i*ldp:i*ldp+len(rows)]
		switch {
		case RowsAccelerated(D) && D == 8:
			axpyRows8wAVX512(&a[0], &pi[0], &base[0], &rows[0], len(rows))
		case RowsAccelerated(D):
			axpyRowsAVX512(&a[0], D, &pi[0], &base[0], &rows[0], len(rows))
		default:
			for j, r := range rows {
				Axpy(pi[j], base[r:r+D], a)
			}
		}
	}
	return nil
}

// checkRowsN validates the shapes of an n-row gather: vals holds n rows of
// ld ≥ nk values (the last may end after its nk), and vecs n rows of D.
func checkRowsN(op string, vals, ld, vecs, D, n, nk int) error {
	switch {
	case n < 0 || D < 0:
		return fmt.Errorf("kernels: %s with %d rows of width %d", op, n, D)
	case n == 0:
		return nil
	case ld < nk || vals < (n-1)*ld+nk:
		return fmt.Errorf("kernels: %s has %d rows of %d keys but room for %d values at stride %d", op, n, nk, vals, ld)
	case vecs < n*D:
		return fmt.Errorf("kernels: %s has %d rows of width %d but %d values", op, n, D, vecs)
	}
	return nil
}

// RowsAccelerated reports whether DotRows and AxpyRows run a SIMD kernel
// for rows of D floats with the current implementation (AVX-512 and D = 8
// or a multiple of 16 up to 256), rather than one Dot or Axpy call per row.
func RowsAccelerated(D int) bool {
	return CurrentImpl() == ImplAVX512 && (D == 8 || (D%16 == 0 && D > 0 && D <= maxGatherDim))
}

// checkRows validates a gather: n values per row (out or p) for every row,
// and each row's D elements inside base.
func checkRows(op string, n, D, baseLen int, rows []int) error {
	if n < len(rows) {
		return fmt.Errorf("kernels: %s has %d rows but room for %d values", op, len(rows), n)
	}
	for j, o := range rows {
		if o < 0 || o > baseLen-D {
			return fmt.Errorf("kernels: %s row %d at offset %d does not fit %d values in a base of %d", op, j, o, D, baseLen)
		}
	}
	return nil
}
