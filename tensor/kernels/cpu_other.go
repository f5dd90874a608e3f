//go:build !amd64

package kernels

import "unsafe"

// detect: only the portable kernels exist off amd64.
func detect() [3]bool { return [3]bool{ImplGeneric: true} }

// simdGeometry is empty off amd64; implFor never selects a SIMD Impl here.
var simdGeometry [3][4]geometry

// The SIMD entry points below are unreachable off amd64 (available[] is
// false for every SIMD Impl); they exist so the dispatch code compiles.

func callBlock(kid int, w unsafe.Pointer, ws uintptr, s *float32, ss uintptr, x *float32, xs uintptr, n, cpg int, out *float32, os uintptr, pf unsafe.Pointer) {
	panic("kernels: SIMD kernel called without SIMD support")
}

func dotSIMD(impl Impl, a, b *float32, n int) float32 { panic("kernels: no SIMD") }

func sumSIMD(impl Impl, a *float32, n int) float32 { panic("kernels: no SIMD") }

func axpySIMD(impl Impl, a float32, x, y *float32, n int) { panic("kernels: no SIMD") }

func scaleSIMD(impl Impl, a float32, x *float32, n int) { panic("kernels: no SIMD") }

func detectVNNI() bool { return false }

func callVNNI(kid int, w unsafe.Pointer, ws uintptr, s *float32, ss uintptr, xq *int8, xqs uintptr, aux *int32, n, cpg int, sadv uintptr, prm *vnniParams, out *float32, os uintptr, pf unsafe.Pointer) {
	panic("kernels: VNNI kernel called without VNNI support")
}

func quantRowAVX512(x *float32, q *int8, s *float32, aux *int32, ngroups int, gs int) {
	panic("kernels: AVX-512 quantizer called without AVX-512")
}

func swigluAVX512(hb, hb2 *float32, n int, c *swigluConsts) {
	panic("kernels: AVX-512 SwiGLU called without AVX-512")
}

func dotRowsAVX512(out, q *float32, d int, base *float32, rows *int, n int) {
	panic("kernels: AVX-512 DotRows called without AVX-512")
}

func axpyRowsAVX512(acc *float32, d int, p, base *float32, rows *int, n int) {
	panic("kernels: AVX-512 AxpyRows called without AVX-512")
}

// The VNNI prefill block; vnniRows is unreachable off amd64.
const (
	vnniMMRows = 4
	vnniMMTok  = 3
)

func expSubAVX512(s *float32, n int, mx float32, c *expConsts) float32 {
	panic("kernels: AVX-512 ExpSub called without AVX-512")
}

func dotRows8wAVX512(out, q, base *float32, rows *int, n int) {
	panic("kernels: AVX-512 DotRows called without AVX-512")
}

func axpyRows8wAVX512(acc, p, base *float32, rows *int, n int) {
	panic("kernels: AVX-512 AxpyRows called without AVX-512")
}

func quantRowSmallAVX512(x *float32, q *int8, s *float32, aux *int32, cols int, gs int) {
	panic("kernels: AVX-512 quantizer called without AVX-512")
}

func vecMatAVX512(dst, a *float32, d int, x *float32, stride, n int) {
	panic("kernels: AVX-512 VecMat called without AVX-512")
}

func rowMaxAVX512(s *float32, n int) float32 {
	panic("kernels: AVX-512 RowMax called without AVX-512")
}

func transpose8AVX2(dst *float32, n int, src *float32, rows *int, nblocks int) {
	panic("kernels: AVX2 TransposeRows8 called without AVX2")
}

func dotRows8TAVX512(out *float32, ldo int, q *float32, n int, kT *float32, ldk int, nblk int) {
	panic("kernels: AVX-512 DotRowsN called without AVX-512")
}

func axpyRows8x4AVX512(acc, p *float32, ldp int, base *float32, rows *int, n int) {
	panic("kernels: AVX-512 AxpyRowsN called without AVX-512")
}
