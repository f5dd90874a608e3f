package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestGGMLVNNIMatchesAVX2: the VNNI kernels form the same int32 lanes as
// the AVX2 ones (VPDPBUSD for VPMADDUBSW+VPMADDWD), so every output has
// the same bits; and both agree with the generic kernels to rounding.
func TestGGMLVNNIMatchesAVX2(t *testing.T) {
	if !available[ImplAVX2] {
		t.Skip("no AVX2 on this CPU")
	}
	if simdGGMLDots[ImplAVX2].q8_0 == nil || simdGGMLDots[ImplAVX2].q4K == nil || simdGGMLDots[ImplAVX2].q6K == nil {
		t.Fatal("amd64 build without the ggml AVX2 kernels")
	}
	rng := rand.New(rand.NewPCG(11, 12))
	prev := CurrentImpl()
	defer func() { _ = SetImpl(prev) }()
	for _, typ := range ggmlTypes {
		rows, cols := 40, 1024
		m := newRandGGML(t, rng, typ, rows, cols)
		x := make([]float32, cols)
		randF32(rng, x)
		outs := map[Impl][]float32{}
		for _, impl := range Available() {
			if err := SetImpl(impl); err != nil {
				t.Fatal(err)
			}
			out := make([]float32, rows)
			if err := MatMul(nil, out, x, m, 1); err != nil {
				t.Fatal(err)
			}
			outs[impl] = out
		}
		ref, mag := refGGMLMatMul(m, x, 1)
		for impl, out := range outs {
			for i := range out {
				if d := math.Abs(float64(out[i]) - ref[i]); d > tol(cols, mag[i]) {
					t.Errorf("%v %v row %d: %g, float64 %g", typ, impl, i, out[i], ref[i])
				}
			}
		}
		if a, b := outs[ImplAVX2], outs[ImplAVX512]; a != nil && b != nil {
			for i := range a {
				if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
					t.Fatalf("%v row %d: avx512 %g, avx2 %g", typ, i, b[i], a[i])
				}
			}
		}
	}
}

// fma32 is float32 a·b + c rounded once (through float64: a·b is exact
// there, and the double rounding of the sum matters only at a float32
// midpoint, which these inputs do not hit).
func fma32(a, b, c float32) float32 { return float32(math.FMA(float64(a), float64(b), float64(c))) }

// hsum8 is ggml's hsum_float_8: (hi + lo), + movehl, + movehdup.
func hsum8(a [8]float32) float32 {
	r := [4]float32{a[4] + a[0], a[5] + a[1], a[6] + a[2], a[7] + a[3]}
	return (r[0] + r[2]) + (r[1] + r[3])
}

// ggmlAVX2Row emulates ggml's AVX2 vec_dot for one row, written from
// ggml-cpu-quants.c's intrinsics rather than from our assembly: int32 lane
// j of a 32-value chunk holds values 4j … 4j+3 (VPMADDUBSW pairs bytes,
// VPMADDWD pairs those), each times its sub-block scale; one 8-lane
// float32 accumulator takes acc = fma(d_w·d_x, float(lane), acc) per
// block (super-block), then hsum_float_8; Q4_K adds its mins on a
// separate 4-lane accumulator, −d_x·dmin × madd(mins, pairwise bsums);
// Q4_1 and Q5_1 add m·s per block into one scalar (llama.cpp's x86
// build fuses the multiply-add; m·s, two fp16 values, is exact anyway),
// Q5_K its mins per super-block (fused too, and there it matters).
func ggmlAVX2Row(m *Matrix, i int, xq []int8, xd, xs []float32, bs []int16) float32 {
	var acc [8]float32
	var accm [4]float32
	row := m.Blocks[i*m.rowBytes():]
	f := func(p []byte) float32 { return F16ToFloat32(uint16(p[0]) | uint16(p[1])<<8) }
	switch m.Format {
	case GGMLQ8_0, Q4_0:
		bb := 34
		if m.Format == Q4_0 {
			bb = 18
		}
		for b := range xd {
			blk := row[b*bb:]
			d := f(blk) * xd[b]
			for j := 0; j < 8; j++ {
				var s int32
				for k := 4 * j; k < 4*j+4; k++ {
					var w int32
					if m.Format == GGMLQ8_0 {
						w = int32(int8(blk[2+k]))
					} else if k < 16 {
						w = int32(blk[2+k]&0x0f) - 8
					} else {
						w = int32(blk[2+k-16]>>4) - 8
					}
					s += w * int32(xq[32*b+k])
				}
				acc[j] = fma32(d, float32(s), acc[j])
			}
		}
		return hsum8(acc)
	case Q5_0, Q4_1, Q5_1:
		var summs float32
		for b := range xd {
			var blk []byte
			var code func(k int) int32 // weight k's integer (q − 16 for Q5_0)
			switch m.Format {
			case Q5_0:
				blk = row[b*22:]
				qh := binary.LittleEndian.Uint32(blk[2:])
				code = func(k int) int32 { return int32(nibble(blk[6:], k)|uint8(qh>>k&1)<<4) - 16 }
			case Q4_1:
				blk = row[b*20:]
				code = func(k int) int32 { return int32(nibble(blk[4:], k)) }
			default:
				blk = row[b*24:]
				qh := binary.LittleEndian.Uint32(blk[4:])
				code = func(k int) int32 { return int32(nibble(blk[8:], k) | uint8(qh>>k&1)<<4) }
			}
			d := f(blk) * xd[b]
			for j := 0; j < 8; j++ {
				var s int32
				for k := 4 * j; k < 4*j+4; k++ {
					s += code(k) * int32(xq[32*b+k])
				}
				acc[j] = fma32(d, float32(s), acc[j])
			}
			if m.Format != Q5_0 {
				summs = fma32(f(blk[2:]), xs[b], summs)
			}
		}
		return hsum8(acc) + summs
	case Q4_K:
		for b := range xd {
			blk := row[b*144:]
			sc, mn := q4KScales(blk[4:16])
			var lanes [8]int32
			for c := 0; c < 8; c++ { // 32-value sub-blocks
				for j := 0; j < 8; j++ {
					for k := 4 * j; k < 4*j+4; k++ {
						v := 32*c + k
						q := blk[16+32*(c/2)+k]
						if c%2 == 0 {
							q &= 0x0f
						} else {
							q >>= 4
						}
						lanes[j] += int32(sc[c]) * int32(q) * int32(xq[256*b+v])
					}
				}
			}
			d := xd[b] * f(blk)
			for j := range lanes {
				acc[j] = fma32(d, float32(lanes[j]), acc[j])
			}
			dmin := -xd[b] * f(blk[2:])
			for l := 0; l < 4; l++ {
				q8s0 := int32(bs[16*b+4*l]) + int32(bs[16*b+4*l+1])
				q8s1 := int32(bs[16*b+4*l+2]) + int32(bs[16*b+4*l+3])
				prod := int32(mn[2*l])*q8s0 + int32(mn[2*l+1])*q8s1
				accm[l] = fma32(dmin, float32(prod), accm[l])
			}
		}
		return hsum8(acc) + ((accm[0] + accm[2]) + (accm[1] + accm[3]))
	case Q5_K:
		// As Q4_K, with bit c of qh[k] as the fifth bit of sub-block c's
		// weight k; but the mins go, per super-block, from madd(mins,
		// pairwise bsums) through an int32 horizontal sum to one scalar,
		// summs = fma(dmin, float(Σ), summs) (GCC's -march=native build
		// emits VFMADD231SS), and the row is hsum_float_8(acc) + summs.
		var summs float32
		for b := range xd {
			blk := row[b*176:]
			sc, mn := q4KScales(blk[4:16])
			qh, qs := blk[16:48], blk[48:176]
			var lanes [8]int32
			for c := 0; c < 8; c++ { // 32-value sub-blocks
				for j := 0; j < 8; j++ {
					for k := 4 * j; k < 4*j+4; k++ {
						q := qs[32*(c/2)+k]
						if c%2 == 0 {
							q &= 0x0f
						} else {
							q >>= 4
						}
						q |= (qh[k] >> c & 1) << 4
						lanes[j] += int32(sc[c]) * int32(q) * int32(xq[256*b+32*c+k])
					}
				}
			}
			d := xd[b] * f(blk)
			for j := range lanes {
				acc[j] = fma32(d, float32(lanes[j]), acc[j])
			}
			var msum int32
			for l := 0; l < 8; l++ {
				msum += int32(mn[l]) * (int32(bs[16*b+2*l]) + int32(bs[16*b+2*l+1]))
			}
			summs = fma32(-xd[b]*f(blk[2:]), float32(msum), summs)
		}
		return hsum8(acc) + summs
	case Q6_K:
		for b := range xd {
			blk := row[b*210:]
			var lanes [8]int32
			for c := 0; c < 8; c++ { // 32-value quads, in value order
				for j := 0; j < 8; j++ {
					for k := 4 * j; k < 4*j+4; k++ {
						v := 32*c + k
						q := int32(q6KValue(blk[0:128], blk[128:192], v))
						lanes[j] += int32(int8(blk[192+v/16])) * q * int32(xq[256*b+v])
					}
				}
			}
			d := xd[b] * f(blk[208:])
			for j := range lanes {
				acc[j] = fma32(d, float32(lanes[j]), acc[j])
			}
		}
		return hsum8(acc)
	}
	panic("format")
}

// nibble is weight k (0..31) of a block's 16 nibble bytes: byte k's low
// nibble for k < 16, byte k−16's high one after.
func nibble(qs []byte, k int) uint8 {
	if k < 16 {
		return qs[k] & 0x0f
	}
	return qs[k-16] >> 4
}

// TestGGMLSIMDIsGGMLAVX2: the SIMD kernels give, bit for bit, what
// ggml's AVX2 code computes from the same quantized activations (so what
// llama.cpp's x86 builds compute, whose tinyBLAS Q8_0/Q4_0 path sums in
// the same order).
func TestGGMLSIMDIsGGMLAVX2(t *testing.T) {
	if !available[ImplAVX2] {
		t.Skip("no AVX2 on this CPU")
	}
	prev := CurrentImpl()
	defer func() { _ = SetImpl(prev) }()
	rng := rand.New(rand.NewPCG(21, 22))
	for _, impl := range []Impl{ImplAVX2, ImplAVX512} {
		if !available[impl] {
			continue
		}
		_ = SetImpl(impl)
		for _, typ := range slices.Concat(ggmlSIMDTypes, ggmlRowSIMDTypes) {
			// 13 rows: groups of four and a remainder; the 32-weight
			// types also an odd block count.
			rows, cols := 13, 768
			if typ.BlockSize() == 32 {
				cols = 608
			}
			m := newRandGGML(t, rng, typ, rows, cols)
			x := make([]float32, cols)
			randF32(rng, x)
			out := make([]float32, rows)
			if err := MatMul(nil, out, x, m, 1); err != nil {
				t.Fatal(err)
			}
			var a ggmlActs
			a.prepare(nil, actKindFor(m), x, 1, cols)
			for i := range out {
				want := ggmlAVX2Row(m, i, a.q, a.d, a.s, a.bsums)
				if math.Float32bits(out[i]) != math.Float32bits(want) {
					t.Errorf("%v %v row %d: %g (%08x), ggml AVX2 %g (%08x)", impl, typ, i, out[i], math.Float32bits(out[i]), want, math.Float32bits(want))
				}
			}
		}
	}
}
