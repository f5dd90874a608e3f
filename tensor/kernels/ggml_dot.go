package kernels

import "encoding/binary"

// The portable ggml dot products: one weight row (its raw blocks) against
// one token's quantized activations. Each is ggml's reference
// ggml_vec_dot_*: exact int32 sums inside a block, then one float32
// multiply-add per block (per super-block for the K-quants) by the product
// of the two scales. The SIMD kernels compute the same integers and
// differ only in the order of the float32 additions.

// dotQ8_0Q8_0 is ggml_vec_dot_q8_0_q8_0: Σ_b float(Σ_j w_q·x_q) · (d_w·d_x).
func dotQ8_0Q8_0(w []byte, xq []int8, xd []float32) float32 {
	var sumf float32
	for b, dx := range xd {
		blk := w[b*34 : b*34+34]
		x := xq[b*32 : b*32+32]
		var sumi int32
		for j, v := range blk[2:34] {
			sumi += int32(int8(v)) * int32(x[j])
		}
		sumf += float32(sumi) * (fp16(blk) * dx)
	}
	return sumf
}

// dotQ4_0Q8_0 is ggml_vec_dot_q4_0_q8_0: byte j of a block holds weight j
// (low nibble) and weight j+16 (high nibble), each stored as q+8.
func dotQ4_0Q8_0(w []byte, xq []int8, xd []float32) float32 {
	var sumf float32
	for b, dx := range xd {
		blk := w[b*18 : b*18+18]
		x := xq[b*32 : b*32+32]
		var sumi int32
		for j, v := range blk[2:18] {
			sumi += (int32(v&0x0f)-8)*int32(x[j]) + (int32(v>>4)-8)*int32(x[j+16])
		}
		sumf += float32(sumi) * (fp16(blk) * dx)
	}
	return sumf
}

// dotQ4KQ8K is ggml_vec_dot_q4_K_q8_K. Per super-block of 256:
//
//	Σ_j (d·sc_j·q_j − dmin·m_j)·x_j = d·Σ_sub sc·(Σ q·x_q) − dmin·Σ_sub m·(Σ x_q)
//
// times the activation scale, with Σ x_q from the Q8_K block sums; both
// integer sums are exact, then sumf accumulates d_w·d_x·isum and, apart,
// dmin·d_x·msum, as ggml's reference does.
func dotQ4KQ8K(w []byte, xq []int8, xd []float32, bsums []int16) float32 {
	var sums, sumMin float32
	for b, dx := range xd {
		blk := w[b*144 : b*144+144]
		sc, mn := q4KScales(blk[4:16])
		qs := blk[16:144]
		x := xq[b*256 : b*256+256]
		bs := bsums[b*16 : b*16+16]
		var isum, msum int32
		for j := 0; j < 4; j++ {
			q := qs[32*j : 32*j+32]
			var lo, hi int32
			for l, v := range q {
				lo += int32(v&0x0f) * int32(x[64*j+l])
				hi += int32(v>>4) * int32(x[64*j+32+l])
			}
			isum += int32(sc[2*j])*lo + int32(sc[2*j+1])*hi
		}
		for j := 0; j < 8; j++ {
			msum += int32(mn[j]) * (int32(bs[2*j]) + int32(bs[2*j+1]))
		}
		sums += fp16(blk[0:]) * dx * float32(isum)
		sumMin += fp16(blk[2:]) * dx * float32(msum)
	}
	return sums - sumMin
}

// dotQ6KQ8K is ggml_vec_dot_q6_K_q8_K: Σ_b d_w·d_x·Σ_k sc_k·Σ_{16} (q−32)·x_q.
func dotQ6KQ8K(w []byte, xq []int8, xd []float32) float32 {
	var sumf float32
	for b, dx := range xd {
		blk := w[b*210 : b*210+210]
		ql, qh, sc := blk[0:128], blk[128:192], blk[192:208]
		x := xq[b*256 : b*256+256]
		var isum int32
		for half := 0; half < 2; half++ {
			l8, h8 := ql[64*half:], qh[32*half:]
			xx := x[128*half:]
			var s [8]int32 // the half's 8 sub-blocks of 16
			for l := 0; l < 32; l++ {
				h := int32(h8[l])
				q1 := int32(l8[l]&0x0f) | (h&3)<<4 - 32
				q2 := int32(l8[l+32]&0x0f) | (h>>2&3)<<4 - 32
				q3 := int32(l8[l]>>4) | (h>>4&3)<<4 - 32
				q4 := int32(l8[l+32]>>4) | (h>>6&3)<<4 - 32
				is := l / 16
				s[is] += q1 * int32(xx[l])
				s[is+2] += q2 * int32(xx[l+32])
				s[is+4] += q3 * int32(xx[l+64])
				s[is+6] += q4 * int32(xx[l+96])
			}
			for k, v := range s {
				isum += int32(int8(sc[8*half+k])) * v
			}
		}
		d := f16Table()[binary.LittleEndian.Uint16(blk[208:])]
		sumf += d * dx * float32(isum)
	}
	return sumf
}
