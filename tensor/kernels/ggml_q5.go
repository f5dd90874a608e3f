package kernels

import (
	"encoding/binary"
	"math"
)

// The ggml types llama-quantize falls back to when a row is not a whole
// number of 256-weight super-blocks (Q5_0 for Q4_K, Q5_1 for Q5_K,
// Q8_0 for Q6_K; SmolLM2-135M's width 576 is one), the 5-bit K-quant of
// the Q5_K_M files, and the "_1" types of older files: Q4_1, Q5_0, Q5_1
// and Q5_K. Block layouts are in ggml.go's comment. Their dot products,
// as ggml's reference ggml_vec_dot_*, take
//
//	Q5_0         Q8_0 activations (as Q4_0)
//	Q4_1, Q5_1   Q8_1 activations: Q8_0's values and scale, plus
//	             s = d·Σq per block, which carries the weights' offset m
//	Q5_K         Q8_K activations (as Q4_K)
//
// These are the portable Go kernels: exact int32 sums inside a block, one
// float32 multiply-add per block, in the reference's order. On amd64,
// all four also have AVX2 and VNNI row kernels (ggml_q5_amd64.s and
// ggml_q5k_amd64.s, ggml's AVX2 order; four rows per call but for Q5_K),
// and Q5_0 and Q5_K prefill tiles.

// q5Bit is the fifth bit of weight j (0..31) of a Q5_0/Q5_1 block: bit j
// of its little-endian uint32 qh, moved to bit 4.
func q5Bit(qh uint32, j int) uint8 { return uint8(qh>>j&1) << 4 }

// dequantRowQ5 is dequantize_row_q4_1, _q5_0, _q5_1 and _q5_K for one row
// of format f: each product and sum rounded to float32 in gguf-py's order
// (d·q first, then + m or − dmin·m), so the explicit float32 conversions
// keep a compiler from fusing them.
func dequantRowQ5(f Format, row []byte, dst []float32) {
	switch f {
	case Q4_1:
		for b := 0; b < len(dst)/32; b++ {
			blk, y := row[b*20:b*20+20], dst[b*32:b*32+32]
			d, m := fp16(blk[0:]), fp16(blk[2:])
			for j, v := range blk[4:20] {
				y[j] = float32(d*float32(v&0x0f)) + m
				y[j+16] = float32(d*float32(v>>4)) + m
			}
		}
	case Q5_0:
		for b := 0; b < len(dst)/32; b++ {
			blk, y := row[b*22:b*22+22], dst[b*32:b*32+32]
			d, qh := fp16(blk[0:]), binary.LittleEndian.Uint32(blk[2:6])
			for j, v := range blk[6:22] {
				y[j] = d * float32(int(v&0x0f|q5Bit(qh, j))-16)
				y[j+16] = d * float32(int(v>>4|q5Bit(qh, j+16))-16)
			}
		}
	case Q5_1:
		for b := 0; b < len(dst)/32; b++ {
			blk, y := row[b*24:b*24+24], dst[b*32:b*32+32]
			d, m, qh := fp16(blk[0:]), fp16(blk[2:]), binary.LittleEndian.Uint32(blk[4:8])
			for j, v := range blk[8:24] {
				y[j] = float32(d*float32(v&0x0f|q5Bit(qh, j))) + m
				y[j+16] = float32(d*float32(v>>4|q5Bit(qh, j+16))) + m
			}
		}
	case Q5_K:
		for b := 0; b < len(dst)/256; b++ {
			dequantQ5K(dst[b*256:b*256+256], row[b*176:b*176+176])
		}
	}
}

// q5KValue is the 5-bit code (0..31) of weight l (0..31) of sub-block s
// (0..7) of a Q5_K block: the nibble from qs (sub-blocks 2k and 2k+1
// share 32 bytes, low nibbles then high), bit s of qh[l] on top.
func q5KValue(qh, qs []byte, s, l int) int32 {
	v := qs[32*(s/2)+l]
	if s%2 == 1 {
		v >>= 4
	}
	return int32(v&0x0f) | int32(qh[l]>>s&1)<<4
}

// dequantQ5K is dequantize_row_q5_K for one 176-byte block.
func dequantQ5K(y []float32, blk []byte) {
	d, dmin := fp16(blk[0:]), fp16(blk[2:])
	sc, mn := q4KScales(blk[4:16])
	qh, qs := blk[16:48], blk[48:176]
	for s := 0; s < 8; s++ {
		ds, ms := d*float32(sc[s]), dmin*float32(mn[s])
		for l := 0; l < 32; l++ {
			y[32*s+l] = float32(ds*float32(q5KValue(qh, qs, s, l))) - ms
		}
	}
}

// dotQ5_0Q8_0 is ggml_vec_dot_q5_0_q8_0: Σ_b float(Σ_j (q_j−16)·x_j) · (d_w·d_x).
func dotQ5_0Q8_0(w []byte, xq []int8, xd []float32) float32 {
	var sumf float32
	for b, dx := range xd {
		blk := w[b*22 : b*22+22]
		qh := binary.LittleEndian.Uint32(blk[2:6])
		x := xq[b*32 : b*32+32]
		var sumi int32
		for j, v := range blk[6:22] {
			sumi += (int32(v&0x0f|q5Bit(qh, j))-16)*int32(x[j]) + (int32(v>>4|q5Bit(qh, j+16))-16)*int32(x[j+16])
		}
		sumf += float32(sumi) * (fp16(blk) * dx)
	}
	return sumf
}

// dotQ4_1Q8_1 is ggml_vec_dot_q4_1_q8_1. With w = d_w·q + m and x ≈ d_x·x_q,
//
//	Σ_j w_j·x_j = d_w·d_x·Σ q·x_q + m·(d_x·Σ x_q) = d_w·d_x·sumi + m·s_x
//
// where s_x is the activation block's precomputed d_x·Σ x_q (fp16).
func dotQ4_1Q8_1(w []byte, xq []int8, xd, xs []float32) float32 {
	var sumf float32
	for b, dx := range xd {
		blk := w[b*20 : b*20+20]
		x := xq[b*32 : b*32+32]
		var sumi int32
		for j, v := range blk[4:20] {
			sumi += int32(v&0x0f)*int32(x[j]) + int32(v>>4)*int32(x[j+16])
		}
		sumf += (fp16(blk[0:])*dx)*float32(sumi) + fp16(blk[2:])*xs[b]
	}
	return sumf
}

// dotQ5_1Q8_1 is ggml_vec_dot_q5_1_q8_1: dotQ4_1Q8_1 with 5-bit codes.
func dotQ5_1Q8_1(w []byte, xq []int8, xd, xs []float32) float32 {
	var sumf float32
	for b, dx := range xd {
		blk := w[b*24 : b*24+24]
		qh := binary.LittleEndian.Uint32(blk[4:8])
		x := xq[b*32 : b*32+32]
		var sumi int32
		for j, v := range blk[8:24] {
			sumi += int32(v&0x0f|q5Bit(qh, j))*int32(x[j]) + int32(v>>4|q5Bit(qh, j+16))*int32(x[j+16])
		}
		sumf += (fp16(blk[0:])*dx)*float32(sumi) + fp16(blk[2:])*xs[b]
	}
	return sumf
}

// dotQ5KQ8K is ggml_vec_dot_q5_K_q8_K, dotQ4KQ8K's algebra with 5-bit
// codes: d·Σ_sub sc·(Σ q·x_q) − dmin·Σ_sub m·(Σ x_q), times the activation
// scale, the mins' sums from the Q8_K block sums.
func dotQ5KQ8K(w []byte, xq []int8, xd []float32, bsums []int16) float32 {
	var sums, sumMin float32
	for b, dx := range xd {
		blk := w[b*176 : b*176+176]
		sc, mn := q4KScales(blk[4:16])
		qh, qs := blk[16:48], blk[48:176]
		x := xq[b*256 : b*256+256]
		bs := bsums[b*16 : b*16+16]
		var isum, msum int32
		for s := 0; s < 8; s++ {
			var sub int32
			for l := 0; l < 32; l++ {
				sub += q5KValue(qh, qs, s, l) * int32(x[32*s+l])
			}
			isum += int32(sc[s]) * sub
			msum += int32(mn[s]) * (int32(bs[2*s]) + int32(bs[2*s+1]))
		}
		sums += fp16(blk[0:]) * dx * float32(isum)
		sumMin += fp16(blk[2:]) * dx * float32(msum)
	}
	return sums - sumMin
}

// quantizeQ8_1Blocks quantizes x (len a multiple of 32) to ggml Q8_1
// blocks as ggml's x86 quantize_row_q8_1 (AVX2 path) does: q and d
// exactly as quantizeQ8_0Blocks, and per block
//
//	s = fp16(amax/127 · Σ q)
//
// with amax/127 the float32 scale before its fp16 rounding (the AVX2 code
// multiplies by it; the portable reference's sum·d rounds the same way).
// A block holding NaN or ±Inf gets s = NaN.
func quantizeQ8_1Blocks(q []int8, d, s []float32, x []float32) {
	quantizeQ8_0Blocks(q, d, x)
	t16 := f16Table()
	for b := range d {
		var amaxBits uint32
		for _, v := range x[b*32 : b*32+32] {
			amaxBits = max(amaxBits, math.Float32bits(v)&0x7fffffff)
		}
		if amaxBits >= 0x7f800000 {
			s[b] = float32(math.NaN())
			continue
		}
		var sum int32
		for _, v := range q[b*32 : b*32+32] {
			sum += int32(v)
		}
		s[b] = t16[F16FromFloat32(math.Float32frombits(amaxBits)/127*float32(sum))]
	}
}

// rowsQ8_1 lifts a one-row dot product on Q8_1 activations to a ggmlRowsFn.
func rowsQ8_1(dot func(w []byte, xq []int8, xd, xs []float32) float32) ggmlRowsFn {
	return func(w []byte, rb int, x *tokenActs, out []float32) {
		for i := range out {
			out[i] = dot(w[i*rb:(i+1)*rb], x.q, x.d, x.s)
		}
	}
}
