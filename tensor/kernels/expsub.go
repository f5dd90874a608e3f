package kernels

import "math"

// ExpCut is the exponent below which ExpSub's softmax weights are exactly
// 0: ln 2^-64 ≈ −44.36. A weight exp(x − m) < 2^-64 is more than 2^40 times
// below what float32 can still add to a softmax row's sum (which is ≥ 1,
// the weight of the row's maximum), so dropping it changes no sum; keeping
// it would make later products subnormal whenever the values are small,
// and x86 CPUs (which Go runs without flush-to-zero) take a ~100-cycle
// microcode assist on every subnormal operation.
const ExpCut = -44.361419555836500

// ExpSub replaces every x of s by exp(x − mx) and returns their sum: the
// numerators of one softmax row. mx must be at least every x (their
// running max), so every argument is ≤ 0; arguments below ExpCut give
// exactly 0, and a NaN stays NaN.
//
// The exponential uses a table: write x = (128·n + j)·ln2/128 + r with
// 0 ≤ j < 128 and |r| ≤ ln2/256, so e^x = 2^n · 2^(j/128) · e^r; 2^(j/128)
// comes from a table, n goes into its exponent bits, and e^r ≈ 1 + r + r²/2
// (truncation error r³/6 < 3.4e-9). Evaluated as 2^(n+j/128) +
// 2^(n+j/128)·(r + r²/2) the result is rounded essentially once: relative
// error ≤ 1.2e-7 (1 ulp) over [ExpCut, 0].
//
// The AVX-512 kernel computes each value with the same float32 operations
// in the same order (no FMA), so the values are the portable loop's bit
// for bit; only the sum differs, summed in 16 lanes and folded at the end
// instead of left to right, so it agrees to rounding.
func ExpSub(s []float32, mx float32) float32 {
	if len(s) == 0 {
		return 0
	}
	if CurrentImpl() == ImplAVX512 {
		return expSubAVX512(&s[0], len(s), mx, &expConst)
	}
	return expSubGeneric(s, mx)
}

// expConsts is the constant block of expsub_amd64.s (layout fixed there).
type expConsts struct {
	cut, inv, hi, lo, magic, half float32
	_                             [10]uint32
	table                         [128]uint32 // byte 64: float32 bits of 2^(j/128)
}

const (
	expInv = 184.66496523378731 // 128/ln2
	// ln2/128 in two parts: hi has 11 significant bits, so k·hi is exact
	// for the |k| ≤ 128·64 that arguments ≥ ExpCut give.
	expHi = 0.0054168701171875
	expLo = -1.6577690629274514e-06
	// Adding 1.5·2^23 to a float32 of magnitude < 2^22 rounds it to an
	// integer held in the low mantissa bits: k without a float→int
	// conversion, and t − magic is k back as a float.
	expMagic = 12582912.0
)

var expConst = func() (c expConsts) {
	c.cut, c.inv, c.hi, c.lo, c.magic, c.half = ExpCut, expInv, expHi, expLo, expMagic, 0.5
	for j := range c.table {
		c.table[j] = math.Float32bits(float32(math.Exp2(float64(j) / 128)))
	}
	return c
}()

// expSubGeneric is ExpSub's portable loop.
func expSubGeneric(s []float32, mx float32) float32 {
	var sum float32
	for i, x := range s {
		x -= mx
		keep := ^uint32(0)
		if x < ExpCut { // false for NaN, which is kept
			keep = 0
			x = ExpCut
		}
		t := x*expInv + expMagic
		kf := t - expMagic
		r := x - kf*expHi - kf*expLo
		k := int32(math.Float32bits(t) - 0x4B400000)
		sc := math.Float32frombits(expConst.table[k&127] + uint32(k>>7)<<23)
		p := sc + sc*(r+r*r*0.5) // 2^(n+j/128)·(1 + (e^r − 1)), rounded once at the end
		p = math.Float32frombits(math.Float32bits(p) & keep)
		s[i] = p
		sum += p
	}
	return sum
}
