//go:build amd64

package kernels

import "unsafe"

// The row kernels of ggml_q5_amd64.s, for the Q5_0 (Q8_0 activations),
// Q4_1 and Q5_1 (Q8_1 activations) and Q5_K (Q8_K) weights; each computes nrows
// consecutive rows (stride ws bytes, nb blocks each) against one token
// into out[0:nrows], as asmRows's kernels do. They need ImplAVX2; the
// VNNI ones also AVX512-VNNI with VL.

//go:noescape
func ggmlQ5_0RowsAVX2(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, nb int, out *float32, nrows int)

//go:noescape
func ggmlQ5_0RowsVNNI(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, nb int, out *float32, nrows int)

// The Rows4 kernels compute exactly four rows, each as the one-row kernel
// does, sharing the token's loads; pf is the four rows rows4Prefetch rows on,
// prefetched.

//go:noescape
func ggmlQ5_0Rows4AVX2(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, nb int, out *float32, pf unsafe.Pointer)

//go:noescape
func ggmlQ5_0Rows4VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, nb int, out *float32, pf unsafe.Pointer)

// The Q8_1 kernels also read the activation blocks' s = d·Σq (xs).

//go:noescape
func ggmlQ4_1RowsAVX2(w unsafe.Pointer, ws uintptr, xq *int8, xd, xs *float32, nb int, out *float32, nrows int)

//go:noescape
func ggmlQ4_1RowsVNNI(w unsafe.Pointer, ws uintptr, xq *int8, xd, xs *float32, nb int, out *float32, nrows int)

//go:noescape
func ggmlQ5_1RowsAVX2(w unsafe.Pointer, ws uintptr, xq *int8, xd, xs *float32, nb int, out *float32, nrows int)

//go:noescape
func ggmlQ5_1RowsVNNI(w unsafe.Pointer, ws uintptr, xq *int8, xd, xs *float32, nb int, out *float32, nrows int)

// The Q8_1 Rows4 kernels compute exactly four rows, each as the one-row
// kernel does, sharing the token's loads; pf is the four rows rows4Prefetch
// rows on, prefetched.

//go:noescape
func ggmlQ4_1Rows4AVX2(w unsafe.Pointer, ws uintptr, xq *int8, xd, xs *float32, nb int, out *float32, pf unsafe.Pointer)

//go:noescape
func ggmlQ4_1Rows4VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xd, xs *float32, nb int, out *float32, pf unsafe.Pointer)

//go:noescape
func ggmlQ5_1Rows4AVX2(w unsafe.Pointer, ws uintptr, xq *int8, xd, xs *float32, nb int, out *float32, pf unsafe.Pointer)

//go:noescape
func ggmlQ5_1Rows4VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xd, xs *float32, nb int, out *float32, pf unsafe.Pointer)

// The Q5_K kernels take Q8_K activations: quants, scales and the
// pairwise bsums (bs32), as ggmlQ4KRowsAVX2.

//go:noescape
func ggmlQ5KRowsAVX2(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, bs32 *int16, nb int, out *float32, nrows int)

//go:noescape
func ggmlQ5KRowsVNNI(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, bs32 *int16, nb int, out *float32, nrows int)

// The Q5_0 tile kernels (prefill) compute 4 rows × 8, 4, 3 or 2 tokens (VNNI)
// or 2 (AVX2), as the Q8_0 ones of ggml_amd64.go, with Q8_0's lane
// corrections xc (−128·Σx).

//go:noescape
func ggmlQ5_0Tile4x8VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xc *int32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)

//go:noescape
func ggmlQ5_0Tile4x4VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xc *int32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)

// ggmlQ5_0Tile4x3VNNI is ggmlQ5_0Tile4x4VNNI cut to 3 tokens.
//
//go:noescape
func ggmlQ5_0Tile4x3VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xc *int32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)

// ggmlQ5_0Tile4x2VNNI is ggmlQ5_0Tile4x4VNNI cut to 2 tokens.
//
//go:noescape
func ggmlQ5_0Tile4x2VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xc *int32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)

//go:noescape
func ggmlQ5_0Tile4x2AVX2(w unsafe.Pointer, ws uintptr, xq *int8, xc *int32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)

// The Q5_K tile kernels (prefill) compute 4 rows × 4 tokens (VNNI) or 2
// (AVX2), as the Q4_K ones of ggml_amd64.go, with the same arguments.

//go:noescape
func ggmlQ5KTile4x4VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xs uintptr, xd *float32, ds uintptr, bs32 *int16, bss uintptr, nb int, out *float32, os uintptr)

//go:noescape
func ggmlQ5KTile4x2AVX2(w unsafe.Pointer, ws uintptr, xq *int8, xs uintptr, xd *float32, ds uintptr, bs32 *int16, bss uintptr, nb int, out *float32, os uintptr)

// asmRowsQ8_K adapts a Q8_K-activation kernel to ggmlRowsFn.
func asmRowsQ8_K(k func(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, bs32 *int16, nb int, out *float32, nrows int)) ggmlRowsFn {
	return func(w []byte, rb int, x *tokenActs, out []float32) {
		k(unsafe.Pointer(&w[0]), uintptr(rb), &x.q[0], &x.d[0], &x.bs32[0], len(x.d), &out[0], len(out))
	}
}

type rowsQ8_1Kernel func(w unsafe.Pointer, ws uintptr, xq *int8, xd, xs *float32, nb int, out *float32, nrows int)

type rows4Q8_1Kernel func(w unsafe.Pointer, ws uintptr, xq *int8, xd, xs *float32, nb int, out *float32, pf unsafe.Pointer)

// asmRowsQ8_1 adapts a Q8_1 kernel to ggmlRowsFn as asmRows does: four
// rows at a time with k4, the rest with k.
func asmRowsQ8_1(k rowsQ8_1Kernel, k4 rows4Q8_1Kernel) ggmlRowsFn {
	return func(w []byte, rb int, x *tokenActs, out []float32) {
		xq, xd, xs := x.q, x.d, x.s
		i := 0
		for ; i+4 <= len(out); i += 4 {
			pf := unsafe.Pointer(&w[i*rb]) // the last group prefetches itself
			if j := min(i+rows4Prefetch, len(out)-4); j > i {
				pf = unsafe.Pointer(&w[j*rb])
			}
			k4(unsafe.Pointer(&w[i*rb]), uintptr(rb), &xq[0], &xd[0], &xs[0], len(xd), &out[i], pf)
		}
		if i < len(out) {
			k(unsafe.Pointer(&w[i*rb]), uintptr(rb), &xq[0], &xd[0], &xs[0], len(xd), &out[i], len(out)-i)
		}
	}
}
