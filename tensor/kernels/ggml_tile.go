package kernels

// The prefill tiles of the ggml block formats. A row kernel computes one
// token against a few rows, so a prefill of T tokens loads every weight
// block T times and forms its scales and quants T times. A tile kernel
// computes ggmlTileRows rows × several tokens with all the accumulators
// in registers: each weight block is loaded and unpacked once for the
// tile's tokens and each activation block once for its rows (llamafile's
// tinyBLAS does the same for llama.cpp). Each output still runs the row
// kernel's instruction sequence on its own accumulator (the same int32
// lanes, the same fma per block, the same final fold), so a tile's
// outputs have the row kernel's bits, whatever the tiling: MatMul stays
// bit-identical for any thread count, row partition and T.

// ggmlTileRows is the rows of a tile.
const ggmlTileRows = 4

// ggmlTileFn computes a tile: the ggmlTileRows rows w (rb bytes each)
// against tokens t0, t0+1, … of a, as many as it has a kernel for up to
// nt, and returns that count (0: none fits, the row kernel does the rest).
// Token t0+j's row i goes to out[j·ldo + i].
type ggmlTileFn func(w []byte, rb int, a *ggmlActs, t0, nt int, out []float32, ldo int) int

// ggmlTiles computes the whole tiles of rows [r0, r1) for all T tokens,
// the tokens no tile kernel fits by the row kernel, and returns the first
// row it left (fewer than ggmlTileRows before r1).
func ggmlTiles(rows ggmlRowsFn, tile ggmlTileFn, sd int, out []float32, a *ggmlActs, m *Matrix, T, r0, r1 int) int {
	rb := m.rowBytes()
	var x tokenActs
	r := r0
	for ; r+ggmlTileRows <= r1; r += ggmlTileRows {
		w := m.Blocks[r*rb : (r+ggmlTileRows)*rb]
		t := 0
		for t < T {
			n := tile(w, rb, a, t, T-t, out[t*m.Rows+r:], m.Rows)
			if n == 0 {
				break
			}
			t += n
		}
		for ; t < T; t++ {
			x = a.token(t, sd)
			rows(w, rb, &x, out[t*m.Rows+r:t*m.Rows+r+ggmlTileRows])
		}
	}
	return r
}
