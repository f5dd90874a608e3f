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

// exp2Frac holds the float32 bits of 2^(j/128), j = 0 … 127: expSub's
// table, so that only a short polynomial remains to evaluate.
var exp2Frac = func() (t [128]uint32) {
	for j := range t {
		t[j] = math.Float32bits(float32(math.Exp2(float64(j) / 128)))
	}
	return t
}()

// expSub replaces every x of s by exp(x − mx) and returns their sum: the
// softmax numerators of one score row, in one tight loop. It is the
// kernel's hottest scalar code (one exponential per score, and a small
// head has few multiply-adds per score to hide it behind), so it uses a
// table instead of expf's degree-7 polynomial: write
//
//	x = (128·n + j)·ln2/128 + r,   0 ≤ j < 128,  |r| ≤ ln2/256 ≈ 0.0027
//
// so that e^x = 2^n · 2^(j/128) · e^r, read 2^(j/128) from exp2Frac, put
// n into its exponent bits, and approximate e^r by 1 + r + r²/2, whose
// truncation error r³/6 < 3.4e-9 is far below float32's 6e-8. Evaluated
// as 2^(n+j/128) + 2^(n+j/128)·(r + r²/2), the result is rounded
// essentially once: its relative error is ≤ 1.2e-7 (1 ulp) over
// [expCut, 0]. It takes about as many instructions as the degree-7
// polynomial (43 per score against 46), but its dependency chain is two
// multiply-adds instead of seven, so more scores are in flight at once:
// 1.2–1.6× faster in a micro-benchmark.
//
// mx must be at least every x (their running max), so every argument is
// ≤ 0. Arguments below expCut give exactly 0 (see expCut), and a NaN
// score stays NaN.
func expSub(s []float32, mx float32) float32 {
	const (
		inv = 184.66496523378731 // 128/ln2
		// ln2/128 in two parts: hi has 11 significant bits, so k·hi is
		// exact for the |k| ≤ 128·64 that arguments ≥ expCut give.
		hi = 0.0054168701171875
		lo = -1.6577690629274514e-06
		// Adding 1.5·2^23 to a float32 of magnitude < 2^22 rounds it to an
		// integer held in the low mantissa bits: k without a float→int
		// conversion, and t − magic is k back as a float.
		magic = 12582912.0
	)
	var sum float32
	for i, x := range s {
		x -= mx
		keep := ^uint32(0)
		if x < expCut { // false for NaN, which is kept
			keep = 0
			x = expCut
		}
		t := x*inv + magic
		kf := t - magic
		r := x - kf*hi - kf*lo
		k := int32(math.Float32bits(t) - 0x4B400000)
		sc := math.Float32frombits(exp2Frac[k&127] + uint32(k>>7)<<23)
		p := sc + sc*(r+r*r*0.5) // 2^(n+j/128)·(1 + (e^r − 1)), rounded once at the end
		p = math.Float32frombits(math.Float32bits(p) & keep)
		s[i] = p
		sum += p
	}
	return sum
}
