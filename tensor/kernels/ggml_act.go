package kernels

import (
	"math"
	"sync"
)

// Activations for ggml weights. ggml never multiplies a quantized weight
// by a float32 activation: each weight type names a vec_dot_type, and
// ggml_compute_forward_mul_mat converts the activations to it once per
// matmul before the dot products (ggml-cpu.c's type_traits_cpu):
//
//	weights      activations
//	Q8_0, Q4_0, Q5_0    Q8_0 blocks: 32 int8 and an fp16 scale
//	Q4_1, Q5_1          Q8_1 blocks: Q8_0's, plus s = d·Σq (fp16)
//	Q4_K, Q5_K, Q6_K    Q8_K blocks: 256 int8, a float32 scale and 16 sums of 16
//	F16          F16 (activations rounded to binary16)
//	BF16         BF16
//
// Matching that is what makes perplexity agree with llama.cpp's: the
// activation rounding is part of the result.

// actKind is the activation type a matrix's MatMul prepares.
type actKind uint8

const (
	actNone actKind = iota // float32 as given
	actQ8_0
	actQ8_1
	actQ8_K
	actF16
	actBF16
)

// actKindFor is the vec_dot_type of matrix m (actNone for the non-ggml
// formats, which have their own activation handling).
func actKindFor(m *Matrix) actKind {
	switch m.Format {
	case GGMLQ8_0, Q4_0, Q5_0:
		return actQ8_0
	case Q4_1, Q5_1:
		return actQ8_1
	case Q4_K, Q5_K, Q6_K:
		return actQ8_K
	case F16:
		if m.GGML {
			return actF16
		}
	case BF16:
		if m.GGML {
			return actBF16
		}
	}
	return actNone
}

// ggmlActs holds one MatMul call's activations converted for ggml
// weights. Like q8Acts, each Pool owns one and calls without a pool use
// ggmlShared, so steady-state calls do not allocate.
type ggmlActs struct {
	x       []float32 // input being converted, [T, cols]
	kind    actKind
	T, cols int
	q       []int8    // [T, cols] quantized values (Q8_0, Q8_K)
	d       []float32 // [T, cols/32] Q8_0/Q8_1 scales (fp16 values) or [T, cols/256] Q8_K scales
	s       []float32 // [T, cols/32] Q8_1 d·Σq (fp16 values)
	bsums   []int16   // [T, cols/16] Q8_K sums of 16 quantized values
	bs32    []int16   // [T, cols/32] pairwise bsums: sums of 32
	q8s     []int16   // [T, cols/2] 32·(q[2i] + q[2i+1])
	xc      []int32   // [T, cols/4] Q8_0 with T > 1: −128·(q[4i] + … + q[4i+3]) (the VNNI tiles' lane start)
	xc8     []int32   // [T, cols/4] the same for Q4_0: −8·(q[4i] + … + q[4i+3])
	f       []float32 // [T, cols] activations rounded to F16 or BF16
	// toks[t] is token t's slices of the block activations (token), set
	// once per call: the row kernels take a pointer, and one to a local
	// tokenActs escaped, an allocation per call and thread.
	toks []tokenActs
}

var ggmlShared struct {
	mu sync.Mutex
	a  ggmlActs
}

// prepare converts x (T tokens of cols values) to kind, on s's threads
// when T is large (s locked by the caller, or nil).
func (a *ggmlActs) prepare(s *poolState, kind actKind, x []float32, T, cols int) {
	a.x, a.kind, a.T, a.cols = x, kind, T, cols
	switch kind {
	case actQ8_0:
		a.q = grow(a.q, T*cols)
		a.d = grow(a.d, T*cols/32)
		if T > 1 {
			a.xc = grow(a.xc, T*cols/4)
			a.xc8 = grow(a.xc8, T*cols/4)
		}
	case actQ8_1:
		a.q = grow(a.q, T*cols)
		a.d = grow(a.d, T*cols/32)
		a.s = grow(a.s, T*cols/32)
	case actQ8_K:
		a.q = grow(a.q, T*cols)
		a.d = grow(a.d, T*cols/256)
		a.bsums = grow(a.bsums, T*cols/16)
		a.bs32 = grow(a.bs32, T*cols/32)
		a.q8s = grow(a.q8s, T*cols/2)
	case actF16, actBF16:
		a.f = grow(a.f, T*cols)
	}
	if kind == actQ8_0 || kind == actQ8_1 || kind == actQ8_K {
		a.toks = grow(a.toks, T)
		for t := range a.toks {
			a.toks[t] = a.token(t)
		}
	}
	k := 1
	if s != nil {
		k = parts(s.threads, T, minQuantTokens, 1)
	}
	if k > 1 {
		s.dispatch(T, k, 1, a)
	} else {
		a.run(0, T)
	}
	a.x = nil
}

// run converts tokens [t0, t1) (the pool's runner interface).
func (a *ggmlActs) run(t0, t1 int) {
	cols := a.cols
	for t := t0; t < t1; t++ {
		x := a.x[t*cols : (t+1)*cols]
		switch a.kind {
		case actQ8_0:
			var xc, xc8 []int32 // the tiles' lane corrections, for a prefill only
			if a.T > 1 {
				xc, xc8 = a.xc[t*cols/4:(t+1)*cols/4], a.xc8[t*cols/4:(t+1)*cols/4]
			}
			quantizeQ8_0Acts(a.q[t*cols:(t+1)*cols], a.d[t*cols/32:(t+1)*cols/32], x, xc, xc8)
		case actQ8_1:
			quantizeQ8_1Blocks(a.q[t*cols:(t+1)*cols], a.d[t*cols/32:(t+1)*cols/32], a.s[t*cols/32:(t+1)*cols/32], x)
		case actQ8_K:
			bs := a.bsums[t*cols/16 : (t+1)*cols/16]
			quantizeQ8_KBlocks(a.q[t*cols:(t+1)*cols], a.d[t*cols/256:(t+1)*cols/256], bs, x)
			b32 := a.bs32[t*cols/32 : (t+1)*cols/32]
			for k := range b32 {
				b32[k] = bs[2*k] + bs[2*k+1]
			}
			q, q8s := a.q[t*cols:(t+1)*cols], a.q8s[t*cols/2:(t+1)*cols/2]
			for k := range q8s {
				q8s[k] = 32 * (int16(q[2*k]) + int16(q[2*k+1]))
			}
		case actF16:
			f := a.f[t*cols : (t+1)*cols]
			for j, v := range x {
				f[j] = f16RoundF32(v)
			}
		case actBF16:
			f := a.f[t*cols : (t+1)*cols]
			for j, v := range x {
				f[j] = BF16ToFloat32(BF16FromFloat32(v))
			}
		}
	}
}

// quantizeQ8_0Acts quantizes one token's x to Q8_0 blocks q, d
// (quantizeQ8_0Blocks) and, unless xc is nil, sets its lane corrections
// xc, xc8 (laneCorrections). It is quantizeQ8_0ActsGo, or on amd64 with
// AVX2 an assembly kernel with the same bits: in Go this conversion cost
// a prefill on Q8_0 weights 13% of its time (docs/formats.md).
var quantizeQ8_0Acts = quantizeQ8_0ActsGo

// quantizeQ8_0ActsGo is quantizeQ8_0Acts in Go, the reference.
func quantizeQ8_0ActsGo(q []int8, d []float32, x []float32, xc, xc8 []int32) {
	quantizeQ8_0Blocks(q, d, x)
	if xc != nil {
		laneCorrections(xc, xc8, q)
	}
}

// laneCorrections sets xc[i] = −128·s and xc8[i] = −8·s, s = q[4i] +
// q[4i+1] + q[4i+2] + q[4i+3]: a VNNI tile multiplies the weights as
// unsigned bytes, w+128 for Q8_0 and w+8 for Q4_0, and starting each
// int32 lane (4 products) there takes the 128·s or 8·s back out, leaving
// Σ w·q exactly.
func laneCorrections(xc, xc8 []int32, q []int8) {
	for i := range xc {
		s := int32(q[4*i]) + int32(q[4*i+1]) + int32(q[4*i+2]) + int32(q[4*i+3])
		xc[i], xc8[i] = -128*s, -8*s
	}
}

// quantizeQ8_0Blocks quantizes x (len a multiple of 32) to ggml Q8_0
// blocks as ggml's x86 quantize_row_q8_0 does (the AVX/AVX2 path llama.cpp
// runs on amd64), per block of 32:
//
//	amax = max|x|,  d = fp16(amax/127),  id = 127/amax (0 if amax is 0)
//	q = round(x·id), ties to even (_mm256_round_ps); |x·id| ≤ 127, so
//	    the int8 packing never saturates
//
// The portable reference (quantize_row_q8_0_ref, and gguf-py) differs in
// two roundings only: id = 1/(amax/127) and ties away from zero, so a q
// differs by one only where x·id lies within a rounding of a half
// (TestQuantizeQ8_0MatchesGGUFPy). d[b] receives the fp16 scale as
// float32, the value the dot products multiply by. A block holding NaN or
// ±Inf gets d = NaN and q = 0, so the outputs it touches are NaN.
func quantizeQ8_0Blocks(q []int8, d []float32, x []float32) {
	t16 := f16Table()
	for b := range d {
		xx := x[b*32 : b*32+32]
		qq := q[b*32 : b*32+32]
		// max|x| on the bit patterns: for non-negative floats they order as
		// the values do, and NaN and Inf compare above every finite one.
		var amaxBits uint32
		for _, v := range xx {
			amaxBits = max(amaxBits, math.Float32bits(v)&0x7fffffff)
		}
		if amaxBits >= 0x7f800000 {
			d[b] = float32(math.NaN())
			clear(qq)
			continue
		}
		amax := math.Float32frombits(amaxBits)
		d[b] = t16[F16FromFloat32(amax/127)]
		var id float32
		if amax != 0 {
			id = 127 / amax
		}
		for j, v := range xx {
			qq[j] = int8(roundEven(float32(v * id))) // |v·id| ≤ 127 (+ a rounding)
		}
	}
}

// roundEven rounds f (|f| < 2^22) to the nearest integer, ties to even, as
// ggml's nearest_int does: adding 1.5·2^23 leaves the integer in the low
// mantissa bits, rounded by the float32 addition itself.
func roundEven(f float32) int32 {
	r := f + 12582912
	return int32(math.Float32bits(r)&0x007fffff) - 0x00400000
}

// quantizeQ8_KBlocks quantizes x (len a multiple of 256) to ggml Q8_K
// blocks as quantize_row_q8_K_ref does (x86 runs the reference), per block
// of 256:
//
//	max = the x of largest |x| (the first, on ties); a block of zeros gets d = 0, q = 0
//	iscale = −127/max,  q = min(127, nearest_int(iscale·x))  (ties to even)
//	d = 1/iscale (float32),  bsums[k] = Σ q over values 16k … 16k+15
//
// A block holding NaN or ±Inf gets d = NaN and q = 0.
func quantizeQ8_KBlocks(q []int8, d []float32, bsums []int16, x []float32) {
	for b := range d {
		xx := x[b*256 : b*256+256]
		qq := q[b*256 : b*256+256]
		// The first x of largest |x|, compared as bit patterns (see
		// quantizeQ8_0Blocks); a NaN or Inf wins and is caught below.
		var amaxBits uint32
		var mx float32
		for _, v := range xx {
			if ab := math.Float32bits(v) & 0x7fffffff; ab > amaxBits {
				amaxBits, mx = ab, v
			}
		}
		amax := math.Float32frombits(amaxBits)
		switch {
		case amaxBits >= 0x7f800000:
			d[b] = float32(math.NaN())
			clear(qq)
		case amax == 0:
			d[b] = 0
			clear(qq)
		default:
			iscale := -127 / mx
			for j, v := range xx {
				qq[j] = int8(min(127, roundEven(float32(iscale*v))))
			}
			d[b] = 1 / iscale
		}
		for k := 0; k < 16; k++ {
			var s int16
			for _, v := range qq[16*k : 16*k+16] {
				s += int16(v)
			}
			bsums[b*16+k] = s
		}
	}
}

// f16RoundF32 is v rounded to binary16 and widened back,
// F16ToFloat32(F16FromFloat32(v)), with a fast path for the normal
// binary16 range: there the rounding to nearest even is one add on v's own
// bits (0xfff plus the lowest kept bit, then the 13 low bits dropped; a
// mantissa carry moves into the exponent, as it should), with no binary16
// in between. Everything else (subnormal, overflow, Inf, NaN) goes the
// long way.
func f16RoundF32(v float32) float32 {
	b := math.Float32bits(v)
	a := b & 0x7fffffff
	if a >= 0x38800000 && a < 0x477ff000 {
		return math.Float32frombits(b&0x80000000 | (a+0xfff+(a>>13)&1)&^0x1fff)
	}
	return F16ToFloat32(F16FromFloat32(v))
}
