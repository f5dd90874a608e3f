//go:build amd64

package kernels

// ggmlQuantQ8_0AVX2 is quantizeQ8_0Blocks for nb blocks of x (32·nb
// values) into q and d, and, unless xc is nil, laneCorrections into xc and
// xc8 (8·nb each), in AVX2 (ggml_act_amd64.s). Each step is the IEEE
// operation the Go code does (float32 divisions, an fp16 round trip by
// VCVTPS2PH/VCVTPH2PS, ties-to-even rounding by VCVTPS2DQ), so the bits
// agree, except in a block whose 127/amax overflows to +Inf (amax below
// 127/MaxFloat32): the Go code and VCVTPS2DQ convert x·Inf differently.
// Such a block has d = 0, and quantizeQ8_0Acts redoes it in Go.
//
//go:noescape
func ggmlQuantQ8_0AVX2(x *float32, q *int8, d *float32, nb int, xc *int32, xc8 *int32)

func init() {
	if available[ImplAVX2] {
		quantizeQ8_0Acts = quantizeQ8_0ActsAVX2
	}
}

// quantizeQ8_0ActsAVX2 is quantizeQ8_0ActsGo by the AVX2 kernel, with the
// blocks of d = 0 (all zeros, or amax so small that 127/amax overflows)
// redone by the Go reference.
func quantizeQ8_0ActsAVX2(q []int8, d []float32, x []float32, xc, xc8 []int32) {
	nb := len(d)
	if nb == 0 {
		return
	}
	_, _ = q[32*nb-1], x[32*nb-1]
	var pc, pc8 *int32
	if xc != nil {
		_, _ = xc[8*nb-1], xc8[8*nb-1]
		pc, pc8 = &xc[0], &xc8[0]
	}
	ggmlQuantQ8_0AVX2(&x[0], &q[0], &d[0], nb, pc, pc8)
	for b, db := range d {
		if db != 0 {
			continue
		}
		var bc, bc8 []int32
		if xc != nil {
			bc, bc8 = xc[8*b:8*b+8], xc8[8*b:8*b+8]
		}
		quantizeQ8_0ActsGo(q[32*b:32*b+32], d[b:b+1], x[32*b:32*b+32], bc, bc8)
	}
}
