package kernels

import (
	"fmt"
	"math"
)

// SwiGLU computes hb = silu(hb) ⊙ hb2, silu(z) = z·σ(z), the way llama2.c's
// run.c does: s = z·(1/(1 + expf(−z))) with expf(−z) rounded to float32
// first, then hb[i] = s·hb2[i]. It returns an error, touching nothing, if
// hb2 is shorter than hb.
//
// expf(−z) is computed in float64 by math.Exp's method with a table: x = −z
// = (64·n + j)·ln2/64 + r with |r| ≤ ln2/128, so e^x = 2^n · 2^(j/64) · e^r,
// with 2^(j/64) from a table and e^r from its degree-4 Taylor polynomial
// (truncation error r⁵/120 < 4e-14). Rounded to float32 that is the
// correctly rounded value run.c's expf gives, except when the error
// straddles a rounding boundary (1 argument in 2·10^7 in a test sweep).
// Two ranges skip the exponential: for z > 18, 1 + expf(−z) rounds to 1 and
// s = z exactly (keeping expf's subnormal values, each a ~100-cycle
// microcode assist, out of float32 arithmetic); for z < −89, expf(−z)
// overflows and s = z·0. NaN propagates.
//
// The AVX-512 kernel runs the same float64 and float32 operations, in the
// same order and without fused multiply-adds, on 8 values at a time, so it
// is bit-identical to the portable loop (TestSwiGLUSIMDMatchesGeneric).
func SwiGLU(hb, hb2 []float32) error {
	if len(hb2) < len(hb) {
		return fmt.Errorf("kernels: SwiGLU gate has %d values, the input %d", len(hb2), len(hb))
	}
	hb2 = hb2[:len(hb)]
	n := 0
	if CurrentImpl() == ImplAVX512 {
		n = len(hb) &^ 7
		if n > 0 {
			swigluAVX512(&hb[0], &hb2[0], n, &swigluConst)
		}
	}
	swigluGeneric(hb[n:], hb2[n:])
	return nil
}

// swigluK are SwiGLU's float64 constants, shared by both kernels.
const (
	swigluInv = 92.332482616893656 // 64/ln2
	// ln2/64 in two parts; hi has trailing zero bits, so k·hi is exact.
	swigluHi    = 6.93147180369123816490e-01 / 64
	swigluLo    = 1.90821492927058770002e-10 / 64
	swigluMagic = 6755399441055744.0 // 1.5·2^52: x + magic rounds x to an integer held in the low bits
)

// swigluConsts is the constant block the assembly reads; the layout is
// fixed by swiglu_amd64.s.
type swigluConsts struct {
	inv, hi, lo, magic, c6, c24, half, one64 float64     // byte 0
	table                                    [64]float64 // byte 64: 2^(j/64)
}

var swigluConst = swigluConsts{
	inv: swigluInv, hi: swigluHi, lo: swigluLo, magic: swigluMagic,
	c6: 1.0 / 6, c24: 1.0 / 24, half: 0.5, one64: 1,
	table: exp2Frac64,
}

// exp2Frac64 holds 2^(j/64), j = 0 … 63.
var exp2Frac64 = func() (t [64]float64) {
	for j := range t {
		t[j] = math.Exp2(float64(j) / 64)
	}
	return t
}()

// swigluGeneric is SwiGLU's portable loop.
func swigluGeneric(hb, hb2 []float32) {
	magicBits := math.Float64bits(swigluMagic)
	hb2 = hb2[:len(hb)]
	for i, z := range hb {
		s := z
		switch {
		case z > 18:
		case z < -89:
			s = z * 0
		default: // also NaN, which propagates
			x := float64(-z)
			t := x*swigluInv + swigluMagic
			kf := t - swigluMagic
			r := x - kf*swigluHi - kf*swigluLo
			k := int64(math.Float64bits(t) - magicBits)
			sc := math.Float64frombits(math.Float64bits(exp2Frac64[k&63]) + uint64(k>>6)<<52)
			e := sc + sc*(r+r*r*(0.5+r*(1.0/6+r*(1.0/24))))
			s = z * (1 / (1 + float32(e)))
		}
		hb[i] = s * hb2[i]
	}
}
