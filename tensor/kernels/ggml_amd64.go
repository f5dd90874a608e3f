//go:build amd64

package kernels

import "unsafe"

// The ggml dot-product kernels of ggml_amd64.s. Each computes nrows
// consecutive rows (stride ws bytes, nb blocks each) against one token's
// quantized activations into out[0:nrows]. They need AVX2, FMA and F16C
// (ImplAVX2); the VNNI ones also AVX512-VNNI with VL.

//go:noescape
func ggmlQ8_0RowsAVX2(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, nb int, out *float32, nrows int)

//go:noescape
func ggmlQ8_0RowsVNNI(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, nb int, out *float32, nrows int)

//go:noescape
func ggmlQ4_0RowsAVX2(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, nb int, out *float32, nrows int)

//go:noescape
func ggmlQ4_0RowsVNNI(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, nb int, out *float32, nrows int)

// The Rows4 kernels compute exactly four rows, each as the one-row kernel
// does, sharing the token's loads.

//go:noescape
func ggmlQ8_0Rows4AVX2(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, nb int, out *float32, pf unsafe.Pointer)

//go:noescape
func ggmlQ8_0Rows4VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, nb int, out *float32, pf unsafe.Pointer)

//go:noescape
func ggmlQ4_0Rows4AVX2(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, nb int, out *float32, pf unsafe.Pointer)

//go:noescape
func ggmlQ4_0Rows4VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, nb int, out *float32, pf unsafe.Pointer)

//go:noescape
func ggmlQ4KRowsAVX2(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, bs32 *int16, nb int, out *float32, nrows int)

//go:noescape
func ggmlQ6KRowsAVX2(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, q8s *int16, nb int, out *float32, nrows int)

// The tile kernels compute 4 rows × 8, 4, 3 or 2 tokens (VNNI) or 2 (AVX2)
// (ggml_amd64.s): the tokens' quants xq and lane corrections xc xs bytes
// apart, their scales ds bytes apart, token j's row i to out[j·os/4 + i].

//go:noescape
func ggmlQ8_0Tile4x8VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xc *int32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)

//go:noescape
func ggmlQ8_0Tile4x4VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xc *int32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)

//go:noescape
func ggmlQ4_0Tile4x8VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xc *int32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)

//go:noescape
func ggmlQ4_0Tile4x4VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xc *int32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)

//go:noescape
func ggmlQ8_0Tile4x3VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xc *int32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)

//go:noescape
func ggmlQ8_0Tile4x2VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xc *int32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)

//go:noescape
func ggmlQ4_0Tile4x3VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xc *int32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)

//go:noescape
func ggmlQ4_0Tile4x2VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xc *int32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)

//go:noescape
func ggmlQ8_0Tile4x2AVX2(w unsafe.Pointer, ws uintptr, xq *int8, xc *int32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)

//go:noescape
func ggmlQ4_0Tile4x2AVX2(w unsafe.Pointer, ws uintptr, xq *int8, xc *int32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)

type tileKernel func(w unsafe.Pointer, ws uintptr, xq *int8, xc *int32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)

// ggmlQ4KTile4x4VNNI computes 4 Q4_K rows × 4 tokens (ggml_ktile_amd64.s,
// on 512-bit registers): token j's quants xq + j·xs, its Q8_K scale
// xd + j·ds and pairwise sums bs32 + j·bss (bytes), row i to
// out[j·os/4 + i].
//
//go:noescape
func ggmlQ4KTile4x4VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xs uintptr, xd *float32, ds uintptr, bs32 *int16, bss uintptr, nb int, out *float32, os uintptr)

// ggmlQ4KTile4x8VNNI, ggmlQ4KTile4x3VNNI and ggmlQ4KTile4x2VNNI are
// ggmlQ4KTile4x4VNNI for 8, 3 and 2 tokens (ggml_ktile_amd64.s).
//
//go:noescape
func ggmlQ4KTile4x8VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xs uintptr, xd *float32, ds uintptr, bs32 *int16, bss uintptr, nb int, out *float32, os uintptr)

//go:noescape
func ggmlQ4KTile4x3VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xs uintptr, xd *float32, ds uintptr, bs32 *int16, bss uintptr, nb int, out *float32, os uintptr)

//go:noescape
func ggmlQ4KTile4x2VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xs uintptr, xd *float32, ds uintptr, bs32 *int16, bss uintptr, nb int, out *float32, os uintptr)

// ggmlQ4KTile4x2AVX2 is ggmlQ4KTile4x4VNNI's AVX2 form, for 2 tokens.
//
//go:noescape
func ggmlQ4KTile4x2AVX2(w unsafe.Pointer, ws uintptr, xq *int8, xs uintptr, xd *float32, ds uintptr, bs32 *int16, bss uintptr, nb int, out *float32, os uintptr)

// sized is a tile kernel and its tokens.
type sized[K any] struct {
	tokens int
	k      K
}

// tilesOf adapts tile kernels, widest first, to ggmlTileFn: the widest
// that fits the tokens left runs through run, which checks and passes
// the kernel its ranges of a; none fitting returns 0.
func tilesOf[K any](run func(k K, w []byte, rb int, a *ggmlActs, t0, nt int, out []float32, ldo int) int, ks ...sized[K]) ggmlTileFn {
	return func(w []byte, rb int, a *ggmlActs, t0, nt int, out []float32, ldo int) int {
		for _, s := range ks {
			if s.tokens <= nt {
				return run(s.k, w, rb, a, t0, s.tokens, out, ldo)
			}
		}
		return 0
	}
}

type q4KTileKernel func(w unsafe.Pointer, ws uintptr, xq *int8, xs uintptr, xd *float32, ds uintptr, bs32 *int16, bss uintptr, nb int, out *float32, os uintptr)

// q4KTile runs tile kernel k on tokens [t0, t0+nt): a Q4_K or Q5_K one,
// which read the Q8_K pairwise sums.
func q4KTile(k q4KTileKernel, w []byte, rb int, a *ggmlActs, t0, nt int, out []float32, ldo int) int {
	cols, nb := a.cols, a.cols/256
	// The kernel reads these ranges; the slices check them here.
	_ = w[ggmlTileRows*rb-1]
	_ = a.q[(t0+nt)*cols-1]
	_ = a.d[(t0+nt)*nb-1]
	_ = a.bs32[(t0+nt)*cols/32-1]
	_ = out[(nt-1)*ldo+ggmlTileRows-1]
	k(unsafe.Pointer(&w[0]), uintptr(rb), &a.q[t0*cols], uintptr(cols), &a.d[t0*nb], uintptr(4*nb),
		&a.bs32[t0*cols/32], uintptr(cols/16), nb, &out[0], uintptr(4*ldo))
	return nt
}

// ggmlQ6KTile4x4VNNI computes 4 Q6_K rows × 4 tokens (ggml_ktile_amd64.s,
// on 512-bit registers): token j's quants
// xq + j·xs and q8s + j·xs, its Q8_K scale xd + j·ds (bytes), row i to
// out[j·os/4 + i].
//
//go:noescape
func ggmlQ6KTile4x4VNNI(w unsafe.Pointer, ws uintptr, xq *int8, q8s *int16, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)

// ggmlQ6KTile4x8VNNI, ggmlQ6KTile4x3VNNI and ggmlQ6KTile4x2VNNI are
// ggmlQ6KTile4x4VNNI for 8, 3 and 2 tokens (ggml_ktile_amd64.s).
//
//go:noescape
func ggmlQ6KTile4x8VNNI(w unsafe.Pointer, ws uintptr, xq *int8, q8s *int16, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)

//go:noescape
func ggmlQ6KTile4x3VNNI(w unsafe.Pointer, ws uintptr, xq *int8, q8s *int16, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)

//go:noescape
func ggmlQ6KTile4x2VNNI(w unsafe.Pointer, ws uintptr, xq *int8, q8s *int16, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)

// ggmlQ6KTile4x2AVX2 is ggmlQ6KTile4x4VNNI's AVX2 form, for 2 tokens.
//
//go:noescape
func ggmlQ6KTile4x2AVX2(w unsafe.Pointer, ws uintptr, xq *int8, q8s *int16, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)

type q6KTileKernel func(w unsafe.Pointer, ws uintptr, xq *int8, q8s *int16, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)

// q6KTile runs Q6_K tile kernel k on tokens [t0, t0+nt).
func q6KTile(k q6KTileKernel, w []byte, rb int, a *ggmlActs, t0, nt int, out []float32, ldo int) int {
	cols, nb := a.cols, a.cols/256
	// The kernel reads these ranges; the slices check them here.
	_ = w[ggmlTileRows*rb-1]
	_ = a.q[(t0+nt)*cols-1]
	_ = a.q8s[(t0+nt)*cols/2-1]
	_ = a.d[(t0+nt)*nb-1]
	_ = out[(nt-1)*ldo+ggmlTileRows-1]
	k(unsafe.Pointer(&w[0]), uintptr(rb), &a.q[t0*cols], &a.q8s[t0*cols/2], uintptr(cols),
		&a.d[t0*nb], uintptr(4*nb), nb, &out[0], uintptr(4*ldo))
	return nt
}

// q8_0Tile runs Q8_0 or Q5_0 tile kernel k on tokens [t0, t0+nt): their
// lanes start from the corrections xc.
func q8_0Tile(k tileKernel, w []byte, rb int, a *ggmlActs, t0, nt int, out []float32, ldo int) int {
	return laneTile(k, a.xc, w, rb, a, t0, nt, out, ldo)
}

// q4_0Tile runs Q4_0 tile kernel k on tokens [t0, t0+nt): the nibbles'
// lanes start from xc8.
func q4_0Tile(k tileKernel, w []byte, rb int, a *ggmlActs, t0, nt int, out []float32, ldo int) int {
	return laneTile(k, a.xc8, w, rb, a, t0, nt, out, ldo)
}

// laneTile runs tile kernel k with the lane corrections xc.
func laneTile(k tileKernel, xc []int32, w []byte, rb int, a *ggmlActs, t0, nt int, out []float32, ldo int) int {
	cols, nb := a.cols, a.cols/32
	// The kernel reads these ranges; the slices check them here.
	_ = w[ggmlTileRows*rb-1]
	_ = a.q[(t0+nt)*cols-1]
	_ = xc[(t0+nt)*cols/4-1]
	_ = a.d[(t0+nt)*nb-1]
	_ = out[(nt-1)*ldo+ggmlTileRows-1]
	k(unsafe.Pointer(&w[0]), uintptr(rb), &a.q[t0*cols], &xc[t0*cols/4], uintptr(cols),
		&a.d[t0*nb], uintptr(4*nb), nb, &out[0], uintptr(4*ldo))
	return nt
}

type rowsKernel func(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, nb int, out *float32, nrows int)

// rows4Prefetch is how many rows ahead of its group a Rows4 kernel
// prefetches (its pf argument; the last groups prefetch the last four
// rows). Measured on the stories110M shape (docs/performance.md, "Row
// kernel prefetch distance"): 4 rows ahead, the old distance, left the
// Q8_0 decode 1.4× slower than 16; 16–48 were alike within the noise.
const rows4Prefetch = 16

type rows4Kernel func(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, nb int, out *float32, pf unsafe.Pointer)

// asmRows adapts a kernel to ggmlRowsFn: four rows at a time with k4 when
// there is one, the rest with k.
func asmRows(k rowsKernel, k4 rows4Kernel) ggmlRowsFn {
	return func(w []byte, rb int, x *tokenActs, out []float32) {
		xq, xd := x.q, x.d
		i := 0
		if k4 != nil {
			for ; i+4 <= len(out); i += 4 {
				pf := unsafe.Pointer(&w[i*rb]) // the last group prefetches itself
				if j := min(i+rows4Prefetch, len(out)-4); j > i {
					pf = unsafe.Pointer(&w[j*rb])
				}
				k4(unsafe.Pointer(&w[i*rb]), uintptr(rb), &xq[0], &xd[0], len(xd), &out[i], pf)
			}
		}
		if i < len(out) {
			k(unsafe.Pointer(&w[i*rb]), uintptr(rb), &xq[0], &xd[0], len(xd), &out[i], len(out)-i)
		}
	}
}

func init() {
	// The tile kernels of each weight type, widest first.
	type lane = sized[tileKernel]
	type k4 = sized[q4KTileKernel]
	type k6 = sized[q6KTileKernel]
	type q81 = sized[q81TileKernel]
	avx2 := ggmlDots{
		q8_0: asmRows(ggmlQ8_0RowsAVX2, ggmlQ8_0Rows4AVX2),
		q4_0: asmRows(ggmlQ4_0RowsAVX2, ggmlQ4_0Rows4AVX2),
		q4K:  asmRowsQ8_K(ggmlQ4KRowsAVX2),
		q6K: func(w []byte, rb int, x *tokenActs, out []float32) {
			ggmlQ6KRowsAVX2(unsafe.Pointer(&w[0]), uintptr(rb), &x.q[0], &x.d[0], &x.q8s[0], len(x.d), &out[0], len(out))
		},
		q5_0:     asmRows(ggmlQ5_0RowsAVX2, ggmlQ5_0Rows4AVX2),
		q4_1:     asmRowsQ8_1(ggmlQ4_1RowsAVX2, ggmlQ4_1Rows4AVX2),
		q5_1:     asmRowsQ8_1(ggmlQ5_1RowsAVX2, ggmlQ5_1Rows4AVX2),
		q5K:      asmRowsQ8_K(ggmlQ5KRowsAVX2),
		tileQ8_0: tilesOf(q8_0Tile, lane{2, ggmlQ8_0Tile4x2AVX2}),
		tileQ4_0: tilesOf(q4_0Tile, lane{2, ggmlQ4_0Tile4x2AVX2}),
		tileQ5_0: tilesOf(q8_0Tile, lane{2, ggmlQ5_0Tile4x2AVX2}),
		tileQ4K:  tilesOf(q4KTile, k4{2, ggmlQ4KTile4x2AVX2}),
		tileQ6K:  tilesOf(q6KTile, k6{2, ggmlQ6KTile4x2AVX2}),
		tileQ5K:  tilesOf(q4KTile, k4{2, ggmlQ5KTile4x2AVX2}),
		tileQ4_1: tilesOf(q81Tile, q81{2, ggmlQ4_1Tile4x2AVX2}),
		tileQ5_1: tilesOf(q81Tile, q81{2, ggmlQ5_1Tile4x2AVX2}),
	}
	simdGGMLDots[ImplAVX2] = avx2
	avx512 := avx2
	if hasVNNI {
		avx512.q8_0 = asmRows(ggmlQ8_0RowsVNNI, ggmlQ8_0Rows4VNNI)
		avx512.q4_0 = asmRows(ggmlQ4_0RowsVNNI, ggmlQ4_0Rows4VNNI)
		avx512.q5_0 = asmRows(ggmlQ5_0RowsVNNI, ggmlQ5_0Rows4VNNI)
		avx512.q4_1 = asmRowsQ8_1(ggmlQ4_1RowsVNNI, ggmlQ4_1Rows4VNNI)
		avx512.q5_1 = asmRowsQ8_1(ggmlQ5_1RowsVNNI, ggmlQ5_1Rows4VNNI)
		avx512.q5K = asmRowsQ8_K(ggmlQ5KRowsVNNI)
		avx512.tileQ8_0 = tilesOf(q8_0Tile, lane{8, ggmlQ8_0Tile4x8VNNI}, lane{4, ggmlQ8_0Tile4x4VNNI}, lane{3, ggmlQ8_0Tile4x3VNNI}, lane{2, ggmlQ8_0Tile4x2VNNI})
		avx512.tileQ4_0 = tilesOf(q4_0Tile, lane{8, ggmlQ4_0Tile4x8VNNI}, lane{4, ggmlQ4_0Tile4x4VNNI}, lane{3, ggmlQ4_0Tile4x3VNNI}, lane{2, ggmlQ4_0Tile4x2VNNI})
		avx512.tileQ5_0 = tilesOf(q8_0Tile, lane{8, ggmlQ5_0Tile4x8VNNI}, lane{4, ggmlQ5_0Tile4x4VNNI}, lane{3, ggmlQ5_0Tile4x3VNNI}, lane{2, ggmlQ5_0Tile4x2VNNI})
		avx512.tileQ4K = tilesOf(q4KTile, k4{8, ggmlQ4KTile4x8VNNI}, k4{4, ggmlQ4KTile4x4VNNI}, k4{3, ggmlQ4KTile4x3VNNI}, k4{2, ggmlQ4KTile4x2VNNI})
		avx512.tileQ6K = tilesOf(q6KTile, k6{8, ggmlQ6KTile4x8VNNI}, k6{4, ggmlQ6KTile4x4VNNI}, k6{3, ggmlQ6KTile4x3VNNI}, k6{2, ggmlQ6KTile4x2VNNI})
		avx512.tileQ5K = tilesOf(q4KTile, k4{4, ggmlQ5KTile4x4VNNI}, k4{2, ggmlQ5KTile4x2AVX2})
		avx512.tileQ4_1 = tilesOf(q81Tile, q81{8, ggmlQ4_1Tile4x8VNNI}, q81{4, ggmlQ4_1Tile4x4VNNI}, q81{3, ggmlQ4_1Tile4x3VNNI}, q81{2, ggmlQ4_1Tile4x2VNNI})
		avx512.tileQ5_1 = tilesOf(q81Tile, q81{8, ggmlQ5_1Tile4x8VNNI}, q81{4, ggmlQ5_1Tile4x4VNNI}, q81{3, ggmlQ5_1Tile4x3VNNI}, q81{2, ggmlQ5_1Tile4x2VNNI})
	}
	simdGGMLDots[ImplAVX512] = avx512
}
