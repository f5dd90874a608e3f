package attention

import (
	"math"

	"github.com/stride-lm/stride/tensor/kernels"
)

// expf is exp for float32, the Cephes expf algorithm: write
// x = n·ln2 + r with n an integer and |r| ≤ ln2/2, approximate e^r by a
// degree-7 polynomial, and put n into the exponent bits. It is within 2
// ulp of exp over the range softmax uses (x ≤ 0) and several times faster
// than converting to float64 for math.Exp, which matters because the
// kernel takes one exponential per score. Results below 2^-126 flush to 0,
// which a softmax weight of that size is anyway.
func expf(x float32) float32 {
	const (
		log2e = 1.44269504088896341
		c1    = 0.693359375    // ln2 split in two so n·c1 is exact
		c2    = -2.12194440e-4 // ln2 − c1
		maxX  = 88.72283905206835
		minX  = -87.33654475
	)
	switch {
	case x != x: // NaN
		return x
	case x > maxX:
		return float32(math.Inf(1))
	case x < minX:
		return 0
	}
	fx := x * log2e
	if fx < 0 {
		fx -= 0.5
	} else {
		fx += 0.5
	}
	n := int32(fx) // round half away from zero
	fn := float32(n)
	r := x - fn*c1 - fn*c2
	p := float32(1.9875691500e-4)
	p = p*r + 1.3981999507e-3
	p = p*r + 8.3334519073e-3
	p = p*r + 4.1665795894e-2
	p = p*r + 1.6666665459e-1
	p = p*r + 5.0000001201e-1
	p = p*r*r + r + 1
	if n > 127 { // 2^128 is past float32's exponent range: scale in two steps
		return p * 2 * math.Float32frombits(uint32(n+126)<<23)
	}
	return p * math.Float32frombits(uint32(n+127)<<23)
}

// expCut is the exponent below which the kernel's softmax weights are
// exactly 0: ln 2^-64 ≈ −44.36 (see kernels.ExpCut). On stories260K, whose
// attention is peaked, subnormal weights made P·V the slowest part of a
// decode step before they were cut.
const expCut = kernels.ExpCut

// expSub replaces every x of s by exp(x − mx) and returns their sum: the
// softmax numerators of one score row (kernels.ExpSub: a table method
// within 1 ulp of exp, weights below expCut exactly 0, NaN kept; 16 scores
// per step on AVX-512). mx must be at least every x.
func expSub(s []float32, mx float32) float32 { return kernels.ExpSub(s, mx) }
