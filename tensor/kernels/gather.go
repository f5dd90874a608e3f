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

// DotRows sets out[j] = Σ_d q[d]·base[rows[j]+d] (d < len(q)) for every
// j < len(rows): the scores of one query row against len(rows) key rows at
// the given element offsets of base. It returns an error, writing nothing,
// if out is shorter than rows or a row does not fit in base.
func DotRows(out, q, base []float32, rows []int) error {
	D := len(q)
	if err := checkRows("DotRows", len(out), D, len(base), rows); err != nil {
		return err
	}
	if len(rows) == 0 || D == 0 {
		clear(out[:len(rows)])
		return nil
	}
	if RowsAccelerated(D) {
		if D == 8 {
			dotRows8wAVX512(&out[0], &q[0], &base[0], &rows[0], len(rows))
		} else {
			dotRowsAVX512(&out[0], &q[0], D, &base[0], &rows[0], len(rows))
		}
		return nil
	}
	for j, o := range rows {
		out[j] = Dot(q, base[o:o+D])
	}
	return nil
}

// AxpyRows adds Σ_j p[j]·base[rows[j] : rows[j]+len(acc)] to acc, key by
// key in order: each element gets one fused multiply-add per key, as a
// sequence of Axpy calls gives it when len(acc) is a whole number of
// vectors. It returns an error, touching nothing, if
// p is shorter than rows or a row does not fit in base.
func AxpyRows(acc, p, base []float32, rows []int) error {
	D := len(acc)
	if err := checkRows("AxpyRows", len(p), D, len(base), rows); err != nil {
		return err
	}
	if len(rows) == 0 || D == 0 {
		return nil
	}
	if RowsAccelerated(D) {
		if D == 8 {
			axpyRows8wAVX512(&acc[0], &p[0], &base[0], &rows[0], len(rows))
		} else {
			axpyRowsAVX512(&acc[0], D, &p[0], &base[0], &rows[0], len(rows))
		}
		return nil
	}
	for j, o := range rows {
		Axpy(p[j], base[o:o+D], acc)
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
