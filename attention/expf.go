package attention

import "math"

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
// exactly 0: ln 2^-64 ≈ −44.36. A weight exp(x − m) < 2^-64 is more than
// 2^40 times below what float32 can still add to the row's sum (which is
// ≥ 1, the weight of the row's maximum), so dropping it changes no sum;
// keeping it would make the products p·v of the P·V step, and the
// rescaled accumulators, subnormal whenever |v| is small, and x86 CPUs
// (which Go runs without flush-to-zero) take a ~100-cycle microcode assist
// on every subnormal operation. On stories260K, whose attention is
// peaked, that made P·V the slowest part of a decode step.
const expCut = -44.361419555836500

// expSub replaces every x of s by exp(x − mx) and returns their sum: the
// softmax numerators of one score row, in one tight loop with expf's
// polynomial inlined. mx must be at least every x (their running max), so
// every argument is ≤ 0. Arguments below expCut give exactly 0 (see
// expCut; the polynomial is evaluated at expCut and its bits masked off,
// without a branch), and a NaN score stays NaN.
func expSub(s []float32, mx float32) float32 {
	const (
		log2e = 1.44269504088896341
		c1    = 0.693359375
		c2    = -2.12194440e-4
		// Adding 1.5·2^23 to a float32 of magnitude < 2^22 rounds it to an
		// integer held in the low mantissa bits: n without a float→int
		// conversion, and t − magic is n back as a float.
		magic = 12582912.0
	)
	var sum float32
	for j, x := range s {
		x -= mx
		keep := ^uint32(0)
		if x < expCut { // false for NaN, which is kept
			keep = 0
			x = expCut
		}
		t := x*log2e + magic
		fn := t - magic
		r := x - fn*c1 - fn*c2
		p := float32(1.9875691500e-4)
		p = p*r + 1.3981999507e-3
		p = p*r + 8.3334519073e-3
		p = p*r + 4.1665795894e-2
		p = p*r + 1.6666665459e-1
		p = p*r + 5.0000001201e-1
		p = (p*r*r + r + 1) * math.Float32frombits((math.Float32bits(t)-0x4B400000+127)<<23)
		p = math.Float32frombits(math.Float32bits(p) & keep)
		s[j] = p
		sum += p
	}
	return sum
}
