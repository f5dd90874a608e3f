package kernels

import (
	"math"
	"sync"
)

// This file is the portable kernel set (ImplGeneric). It is always compiled:
// it is the fallback on CPUs without AVX2/FMA/F16C and on other
// architectures, and the bit-exact baseline the SIMD kernels are tested
// against (to rounding). Every dot product uses four float32 partial sums
// s0..s3 over columns j ≡ 0..3 (mod 4), combined as (s0+s1)+(s2+s3), then the
// columns past the last multiple of 4 in order.

// f16Table maps every binary16 bit pattern to its exact float32 value
// (256 KiB, built on first use), so F16 weights decode with one load.
var f16Table = sync.OnceValue(func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for h := range t {
		t[h] = f16Decode(uint16(h))
	}
	return &t
})

// f16Decode widens binary16 to float32 exactly: sign, 5-bit exponent (bias
// 15), 10-bit fraction; subnormals scale the fraction by 2^-24.
func f16Decode(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // Inf or NaN: keep the payload's top bits
		return math.Float32frombits(sign | 0x7f800000 | frac<<13)
	case exp == 0:
		v := float32(frac) * (1.0 / (1 << 24))
		if sign != 0 {
			v = -v
		}
		return v
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
}

// dotF32 is Σ a[j]·b[j] over len(a) (b at least as long).
func dotF32(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	j := 0
	for ; j+4 <= len(a); j += 4 {
		s0 += a[j] * b[j]
		s1 += a[j+1] * b[j+1]
		s2 += a[j+2] * b[j+2]
		s3 += a[j+3] * b[j+3]
	}
	s := (s0 + s1) + (s2 + s3)
	for ; j < len(a); j++ {
		s += a[j] * b[j]
	}
	return s
}

// dotBF16 is Σ bf16(w[j])·x[j].
func dotBF16(w []uint16, x []float32) float32 {
	x = x[:len(w)]
	var s0, s1, s2, s3 float32
	j := 0
	for ; j+4 <= len(w); j += 4 {
		s0 += math.Float32frombits(uint32(w[j])<<16) * x[j]
		s1 += math.Float32frombits(uint32(w[j+1])<<16) * x[j+1]
		s2 += math.Float32frombits(uint32(w[j+2])<<16) * x[j+2]
		s3 += math.Float32frombits(uint32(w[j+3])<<16) * x[j+3]
	}
	s := (s0 + s1) + (s2 + s3)
	for ; j < len(w); j++ {
		s += math.Float32frombits(uint32(w[j])<<16) * x[j]
	}
	return s
}

// dotF16 is Σ f16(w[j])·x[j] through the decode table.
func dotF16(t *[1 << 16]float32, w []uint16, x []float32) float32 {
	x = x[:len(w)]
	var s0, s1, s2, s3 float32
	j := 0
	for ; j+4 <= len(w); j += 4 {
		s0 += t[w[j]] * x[j]
		s1 += t[w[j+1]] * x[j+1]
		s2 += t[w[j+2]] * x[j+2]
		s3 += t[w[j+3]] * x[j+3]
	}
	s := (s0 + s1) + (s2 + s3)
	for ; j < len(w); j++ {
		s += t[w[j]] * x[j]
	}
	return s
}

// dotQ8 is Σ_groups scale_g · Σ_{j in g} q[j]·x[j]: the int8 values are
// widened exactly to float32 and the group's scale is applied once per group,
// so x stays float32 (no activation quantization).
func dotQ8(q []int8, scales []float32, gs int, x []float32) float32 {
	x = x[:len(q)]
	var acc float32
	for g, sc := range scales[:len(q)/gs] {
		qq := q[g*gs : (g+1)*gs]
		xx := x[g*gs : (g+1)*gs]
		var s0, s1, s2, s3 float32
		j := 0
		for ; j+4 <= gs; j += 4 {
			s0 += float32(qq[j]) * xx[j]
			s1 += float32(qq[j+1]) * xx[j+1]
			s2 += float32(qq[j+2]) * xx[j+2]
			s3 += float32(qq[j+3]) * xx[j+3]
		}
		s := (s0 + s1) + (s2 + s3)
		for ; j < gs; j++ {
			s += float32(qq[j]) * xx[j]
		}
		acc += sc * s
	}
	return acc
}

// genericRows computes out[t·Rows + i] for rows [r0, r1) and all T tokens.
// Each weight row is reused for all T tokens while it is in L1.
func genericRows(out, x []float32, m *Matrix, T, r0, r1 int) {
	cols := m.Cols
	var t16 *[1 << 16]float32
	if m.Format == F16 {
		t16 = f16Table()
	}
	for i := r0; i < r1; i++ {
		off := i * cols
		for t := 0; t < T; t++ {
			xt := x[t*cols : (t+1)*cols]
			var s float32
			switch m.Format {
			case F32:
				s = dotF32(m.F32[off:off+cols], xt)
			case BF16:
				s = dotBF16(m.U16[off:off+cols], xt)
			case F16:
				s = dotF16(t16, m.U16[off:off+cols], xt)
			case Q8_0:
				gs := m.GroupSize
				s = dotQ8(m.Q[off:off+cols], m.Scales[off/gs:(off+cols)/gs], gs, xt)
			}
			out[t*m.Rows+i] = s
		}
	}
}

// sumGeneric is Σ a[j] with four partial sums (the streaming-read kernel).
func sumGeneric(a []float32) float32 {
	var s0, s1, s2, s3 float32
	j := 0
	for ; j+4 <= len(a); j += 4 {
		s0 += a[j]
		s1 += a[j+1]
		s2 += a[j+2]
		s3 += a[j+3]
	}
	s := (s0 + s1) + (s2 + s3)
	for ; j < len(a); j++ {
		s += a[j]
	}
	return s
}
