//go:build amd64

package kernels

import "unsafe"

// The Q4_1 and Q5_1 tile kernels (prefill and multi-row decode steps) of
// ggml_q1tile_amd64.s compute 4 rows × 8, 4, 3 or 2 tokens (VNNI) or 2 (AVX2), each output with
// the bits of the Rows kernels (the "_1" row kernels' lanes, scale fma
// and summs per block): the weights' codes and scales are loaded once
// per block for all the tokens. xsum is the tokens' Q8_1 block sums s
// (ds bytes apart, like their scales xd); the quants are xs bytes apart.

//go:noescape
func ggmlQ4_1Tile4x8VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xsum *float32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)

//go:noescape
func ggmlQ5_1Tile4x8VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xsum *float32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)

//go:noescape
func ggmlQ4_1Tile4x4VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xsum *float32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)

//go:noescape
func ggmlQ4_1Tile4x3VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xsum *float32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)

//go:noescape
func ggmlQ4_1Tile4x2VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xsum *float32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)

//go:noescape
func ggmlQ5_1Tile4x4VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xsum *float32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)

//go:noescape
func ggmlQ5_1Tile4x3VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xsum *float32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)

//go:noescape
func ggmlQ5_1Tile4x2VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xsum *float32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)

// The AVX2 forms, 4 rows × 2 tokens (no VNNI needed).

//go:noescape
func ggmlQ4_1Tile4x2AVX2(w unsafe.Pointer, ws uintptr, xq *int8, xsum *float32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)

//go:noescape
func ggmlQ5_1Tile4x2AVX2(w unsafe.Pointer, ws uintptr, xq *int8, xsum *float32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)

type q81TileKernel func(w unsafe.Pointer, ws uintptr, xq *int8, xsum *float32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)

// q81Tile runs Q4_1 or Q5_1 tile kernel k on tokens [t0, t0+nt), which
// reads their Q8_1 quants, scales and block sums.
func q81Tile(k q81TileKernel, w []byte, rb int, a *ggmlActs, t0, nt int, out []float32, ldo int) int {
	cols, nb := a.cols, a.cols/32
	// The kernel reads these ranges; the slices check them here.
	_ = w[ggmlTileRows*rb-1]
	_ = a.q[(t0+nt)*cols-1]
	_ = a.s[(t0+nt)*nb-1]
	_ = a.d[(t0+nt)*nb-1]
	_ = out[(nt-1)*ldo+ggmlTileRows-1]
	k(unsafe.Pointer(&w[0]), uintptr(rb), &a.q[t0*cols], &a.s[t0*nb], uintptr(cols),
		&a.d[t0*nb], uintptr(4*nb), nb, &out[0], uintptr(4*ldo))
	return nt
}
