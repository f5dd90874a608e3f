package kvcache

import (
	"math"

	"github.com/stride-lm/stride/tensor"
)

// f16Row converts src[so], src[so+stride], … to binary16 bits in dst,
// bit-identical to tensor.F16Bits (round to nearest, ties to even) but
// without data-dependent branches for values in the normal half range:
// the rounding decision on random activations is a coin flip that a
// branch predictor loses half the time, which made the F16 cache write
// conversion-bound. Subnormals, overflow, Inf and NaN take tensor.F16Bits.
func f16Row(dst []uint16, src []float32, so, stride int) {
	for j := range dst {
		f := src[so+j*stride]
		u := math.Float32bits(f)
		exp := int32(u>>23&0xff) - 127 + 15 // biased half exponent
		if uint32(exp-1) > 29 {             // exp outside [1, 30]
			dst[j] = tensor.F16Bits(f)
			continue
		}
		coef := u & 0x7fffff
		h := u>>16&0x8000 | uint32(exp)<<10 | coef>>13
		round := coef >> 12 & 1              // first dropped bit
		sticky := (coef&0xfff + 0xfff) >> 12 // 1 if any lower dropped bit is set
		lsb := coef >> 13 & 1                // ties go to even
		// A carry out of the mantissa rounds up into the exponent, and
		// from exponent 30 to Inf, as it should.
		dst[j] = uint16(h + round&(sticky|lsb))
	}
}
