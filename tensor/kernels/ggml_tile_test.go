package kernels

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// rowKernelOutputs is every output of m against x's T tokens computed by
// impl's row kernel, one token and one row at a time: what the tiles must
// reproduce bit for bit.
func rowKernelOutputs(impl Impl, m *Matrix, a *ggmlActs, T int) []float32 {
	rows, _ := ggmlDotsFor(impl).forFormat(m.Format)
	rb := m.rowBytes()
	out := make([]float32, T*m.Rows)
	for t := 0; t < T; t++ {
		x := a.token(t)
		for r := 0; r < m.Rows; r++ {
			rows(m.Blocks[r*rb:(r+1)*rb], rb, &x, out[t*m.Rows+r:t*m.Rows+r+1])
		}
	}
	return out
}

// TestGGMLTilesMatchRowKernel: the prefill, tiles of ggmlTileRows rows ×
// 8 or 4 tokens with the rows and tokens no tile covers left to the row
// kernel, gives every output the bits of the row kernel, for every impl
// (the generic one has no tiles: the fallback), on rows and token counts
// that are and are not multiples of the tile, over row ranges [r0, r1)
// that start and end anywhere, as the thread partitions do.
func TestGGMLTilesMatchRowKernel(t *testing.T) {
	withImpl(t, func(t *testing.T, impl Impl) {
		rng := rand.New(rand.NewPCG(31, 32))
		for _, typ := range ggmlTypes {
			cols := 512
			if typ == TypeQ8_0 || typ == TypeQ4_0 {
				cols = 96 // three blocks
			}
			for _, rows := range []int{4, 7, 13} {
				m := newRandGGML(t, rng, typ, rows, cols)
				for _, T := range []int{2, 3, 4, 5, 7, 8, 9, 12, 15, 16, 21} {
					x := make([]float32, T*cols)
					randF32(rng, x)
					var a ggmlActs
					a.prepare(nil, actKindFor(m), x, T, cols)
					want := rowKernelOutputs(impl, m, &a, T)
					// The whole matrix, then two ranges split at a random row.
					split := rng.IntN(rows + 1)
					for _, rr := range [][2]int{{0, rows}, {0, split}, {split, rows}} {
						got := make([]float32, T*rows)
						ggmlRows(impl, got, &a, m, T, rr[0], rr[1])
						for tk := 0; tk < T; tk++ {
							for r := rr[0]; r < rr[1]; r++ {
								g, w := got[tk*rows+r], want[tk*rows+r]
								if math.Float32bits(g) != math.Float32bits(w) {
									t.Fatalf("%v %d×%d T=%d rows [%d, %d): token %d row %d = %g, row kernel %g",
										typ, rows, cols, T, rr[0], rr[1], tk, r, g, w)
								}
							}
						}
					}
				}
			}
		}
	})
}

// TestGGMLTilesBlockedPanels: on a matrix wide enough that ggmlTiles
// splits a call into several row panels (l2Budget) and token panels
// (l1Budget), the last of each partial, every output still has the row
// kernel's bits, over a whole range and two split ones.
func TestGGMLTilesBlockedPanels(t *testing.T) {
	withImpl(t, func(t *testing.T, impl Impl) {
		rng := rand.New(rand.NewPCG(33, 34))
		const rows, T = 270, 21
		for _, typ := range []GGMLType{TypeQ8_0, TypeQ4_K} {
			cols := 4096 // Q8_0: 120-row panels
			if typ == TypeQ4_K {
				cols = 8192 // 112-row panels
			}
			m := newRandGGML(t, rng, typ, rows, cols)
			if rp := l2Budget / m.rowBytes(); rp >= rows/2 {
				t.Fatalf("%v: a row panel of %d rows leaves %d rows whole", typ, rp, rows)
			}
			if tp := l1Budget / (2 * cols); tp > 8 {
				t.Fatalf("token panel %d leaves T = %d whole", tp, T)
			}
			x := make([]float32, T*cols)
			randF32(rng, x)
			var a ggmlActs
			a.prepare(nil, actKindFor(m), x, T, cols)
			want := rowKernelOutputs(impl, m, &a, T)
			split := 1 + rng.IntN(rows-2)
			for _, rr := range [][2]int{{0, rows}, {0, split}, {split, rows}} {
				got := make([]float32, T*rows)
				ggmlRows(impl, got, &a, m, T, rr[0], rr[1])
				for tk := 0; tk < T; tk++ {
					for r := rr[0]; r < rr[1]; r++ {
						if g, w := got[tk*rows+r], want[tk*rows+r]; math.Float32bits(g) != math.Float32bits(w) {
							t.Fatalf("%v rows [%d, %d): token %d row %d = %g, row kernel %g", typ, rr[0], rr[1], tk, r, g, w)
						}
					}
				}
			}
		}
	})
}

// tileWidths are the token counts of impl's tile kernels for typ, widest
// first (none: the row kernels run the prefill; the types without SIMD
// kernels have no tiles either).
func tileWidths(impl Impl, typ GGMLType) []int {
	vnni := impl == ImplAVX512 && hasVNNI
	switch {
	case vnni && slices.Contains(ggmlRowSIMDTypes, typ):
		return []int{8, 4, 3, 2}
	case impl != ImplGeneric && slices.Contains(ggmlRowSIMDTypes, typ):
		return []int{2}
	}
	if impl == ImplGeneric || !slices.Contains(ggmlSIMDTypes, typ) {
		return nil
	}
	switch {
	case (typ == TypeQ4_K || typ == TypeQ6_K) && vnni:
		return []int{8, 4, 3, 2}
	case typ == TypeQ5_K && vnni:
		return []int{4, 2}
	case typ == TypeQ4_K || typ == TypeQ5_K || typ == TypeQ6_K:
		return []int{2}
	case vnni && (typ == TypeQ8_0 || typ == TypeQ4_0 || typ == TypeQ5_0):
		return []int{8, 4, 3, 2}
	case vnni:
		return []int{8, 4, 2}
	}
	return []int{2}
}

// tileWidth is the tokens a tile covers of nt: the widest width that fits.
func tileWidth(impl Impl, typ GGMLType, nt int) int {
	for _, w := range tileWidths(impl, typ) {
		if w <= nt {
			return w
		}
	}
	return 0
}

// TestGGMLTileWidths: each impl has the tile kernels it should (so the
// test above exercises them), and each computes the widest tile that fits
// the tokens left, starting at any token, with the row kernel's bits, and
// leaves the outputs around its tile untouched.
func TestGGMLTileWidths(t *testing.T) {
	withImpl(t, func(t *testing.T, impl Impl) {
		rng := rand.New(rand.NewPCG(33, 34))
		for _, typ := range ggmlTypes {
			cols := 256
			m := newRandGGML(t, rng, typ, ggmlTileRows, cols)
			_, tile := ggmlDotsFor(impl).forFormat(m.Format)
			if (tile != nil) != (tileWidths(impl, typ) != nil) {
				t.Fatalf("%v %v: tile kernel %v, want widths %v", impl, typ, tile != nil, tileWidths(impl, typ))
			}
			if tile == nil {
				continue
			}
			T := 13
			x := make([]float32, T*cols)
			randF32(rng, x)
			var a ggmlActs
			a.prepare(nil, actKindFor(m), x, T, cols)
			want := rowKernelOutputs(impl, m, &a, T)
			for t0 := 0; t0 < T; t0++ {
				for nt := 1; t0+nt <= T; nt++ {
					got := make([]float32, T*ggmlTileRows)
					for i := range got {
						got[i] = -1
					}
					n := tile(m.Blocks, m.rowBytes(), &a, t0, nt, got[t0*ggmlTileRows:], ggmlTileRows)
					if want := tileWidth(impl, typ, nt); n != want {
						t.Fatalf("%v tile(t0 %d, nt %d) did %d tokens, want %d", typ, t0, nt, n, want)
					}
					for k, g := range got {
						inside := k >= t0*ggmlTileRows && k < (t0+n)*ggmlTileRows
						if w := want[k]; inside && math.Float32bits(g) != math.Float32bits(w) {
							t.Fatalf("%v tile(t0 %d, nt %d): out[%d] = %g, row kernel %g", typ, t0, nt, k, g, w)
						} else if !inside && g != -1 {
							t.Fatalf("%v tile(t0 %d, nt %d) wrote out[%d] outside its %d tokens", typ, t0, nt, k, n)
						}
					}
				}
			}
		}
	})
}
