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

// ggmlTileTokens is the widest tile kernel's tokens: the token panels of
// ggmlTiles are multiples of it, so only a call's last panel runs
// narrower tiles.
const ggmlTileTokens = 8

// ggmlTiles computes the whole tiles of rows [r0, r1) for all T tokens,
// the tokens no tile kernel fits by the row kernel, and returns the first
// row it left (fewer than ggmlTileRows before r1).
//
// The loops are blocked for the caches as walkBlocks does for Stride's
// formats: a panel of rows whose blocks fit l2Budget, and within it a
// panel of tokens whose activations (about 2 bytes a value: the quants and
// the lane corrections or pair sums) fit l1Budget; every tile of the row
// panel runs for those tokens before the next token panel. Row by row over
// all T tokens instead re-read a prefill's activations from L2 for every
// 4 rows (393 KiB for T = 128 at 1536 columns).
func ggmlTiles(rows ggmlRowsFn, tile ggmlTileFn, out []float32, a *ggmlActs, m *Matrix, T, r0, r1 int) int {
	rb := m.rowBytes()
	rEnd := r0 + (r1-r0)/ggmlTileRows*ggmlTileRows
	rp := max(l2Budget/rb/ggmlTileRows, 1) * ggmlTileRows
	tp := max(l1Budget/(2*m.Cols)/ggmlTileTokens, 1) * ggmlTileTokens
	for p0 := r0; p0 < rEnd; p0 += rp {
		p1 := min(p0+rp, rEnd)
		for t0 := 0; t0 < T; t0 += tp {
			t1 := min(t0+tp, T)
			for r := p0; r < p1; r += ggmlTileRows {
				ggmlTile(rows, tile, out, a, m, rb, r, t0, t1)
			}
		}
	}
	return rEnd
}

// ggmlTile computes rows r … r+ggmlTileRows−1 for tokens [t0, t1): tiles
// while a tile kernel fits, the rest by the row kernel.
func ggmlTile(rows ggmlRowsFn, tile ggmlTileFn, out []float32, a *ggmlActs, m *Matrix, rb, r, t0, t1 int) {
	w := m.Blocks[r*rb : (r+ggmlTileRows)*rb]
	t := t0
	for t < t1 {
		n := tile(w, rb, a, t, t1-t, out[t*m.Rows+r:], m.Rows)
		if n == 0 {
			break
		}
		t += n
	}
	for ; t < t1; t++ {
		rows(w, rb, &a.toks[t], out[t*m.Rows+r:t*m.Rows+r+ggmlTileRows])
	}
}
