package kernels

import (
	"math"
	"sync"
	"unsafe"
)

// Q8_0 activations. A Q8_0 matmul quantizes its input the way llama2.c's
// runq.c does before every quantized matmul: each token vector is cut into
// groups of the weights' GroupSize, and each group gets
//
//	scale = max|x| / 127,   q[j] = round(x[j] / scale)   (half away from zero)
//
// so one output is a sum of exact int32 group dot products:
//
//	out[t, i] = Σ_g float(Σ_{j∈g} w_q[i, j]·x_q[t, j]) · w_scale[i, g] · x_scale[t, g]
//
// The integer products are what make int8 weights pay off in arithmetic as
// well as in bytes: AVX-512 VNNI's VPDPBUSD does 64 int8 multiply-adds per
// instruction, where float32 FMA does 16 after two widening steps.

// q8Acts holds x quantized for one MatMul call. Each Pool owns one (used
// under its lock); calls without a pool use q8Shared. Both are reused, so
// steady-state calls allocate nothing.
type q8Acts struct {
	x              []float32 // the input being quantized, [T, cols]
	T, cols, gs    int
	avx512         bool      // quantize with quantRow(Small)AVX512 (gs % 16 == 0, or 4 or 8)
	qs             int       // row stride of q in bytes: cols rounded up to 64
	q              []int8    // [T, qs] quantized values; columns ≥ cols are 0
	s              []float32 // [T, cols/gs] group scales
	aux            []int32   // VNNI side data [T, 2·qs/4]; see vnniBlock in asmgen.go
	dq             []float32 // [T, cols] q·scale, for the float32 kernels
	wantAux, wantD bool
}

// q8Shared is the scratch of calls without a pool (or whose pool is busy).
// A caller that finds it taken allocates its own, so a single caller never
// allocates in steady state (a sync.Pool would: it drops items at GC).
var q8Shared struct {
	mu sync.Mutex
	a  q8Acts
}

// grow returns s with length n, reusing its array when it is large enough.
func grow[E any](s []E, n int) []E {
	if cap(s) < n {
		return make([]E, n)
	}
	return s[:n]
}

// minQuantTokens is the token count from which quantization is split across
// the pool: below it the hand-off costs more than the work.
const minQuantTokens = 8

// quantize fills a from x (T tokens of cols values) with groups of gs, on
// the threads of s (locked by the caller; nil runs on the caller) when T is
// large. aux and dq are built only when asked for.
func (a *q8Acts) quantize(s *poolState, impl Impl, x []float32, T, cols, gs int, aux, dq bool) {
	a.x, a.T, a.cols, a.gs, a.wantAux, a.wantD = x, T, cols, gs, aux, dq
	a.avx512 = impl == ImplAVX512 && (gs%16 == 0 || gs == 4 || gs == 8)
	a.qs = (cols + 63) &^ 63
	a.q = grow(a.q, T*a.qs)
	a.s = grow(a.s, T*(cols/gs))
	if aux {
		a.aux = grow(a.aux, T*a.qs/2)
	}
	if dq {
		a.dq = grow(a.dq, T*cols)
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

// run quantizes tokens [t0, t1) (the pool's runner interface).
func (a *q8Acts) run(t0, t1 int) {
	cols, gs, ng := a.cols, a.gs, a.cols/a.gs
	for t := t0; t < t1; t++ {
		q := a.q[t*a.qs : (t+1)*a.qs]
		s := a.s[t*ng : (t+1)*ng]
		x := a.x[t*cols : (t+1)*cols]
		clear(q[cols:])
		switch {
		case a.avx512:
			var aux *int32
			if a.wantAux {
				aux = &a.aux[t*a.qs/2]
			}
			if gs%16 == 0 {
				quantRowAVX512(&x[0], &q[0], &s[0], aux, ng, gs)
			} else {
				quantRowSmallAVX512(&x[0], &q[0], &s[0], aux, cols, gs)
			}
			if a.wantAux {
				clearAuxTail(a.aux[t*a.qs/2:(t+1)*a.qs/2], cols)
			}
		default:
			quantizeRow(q[:cols], s, x, gs)
			if a.wantAux {
				laneAux(a.aux[t*a.qs/2:(t+1)*a.qs/2], q, s, cols, gs)
			}
		}
		if a.wantD {
			dq := a.dq[t*cols : (t+1)*cols]
			for j := range dq {
				dq[j] = float32(q[j]) * s[j/gs]
			}
		}
	}
}

// quantizeRow is runq.c's quantize() for one token: per group of gs,
// scale = max|x|/127 and q = round(x/scale), half away from zero. A group
// of zeros gets scale 0 and q = 0. A group holding NaN or ±Inf gets scale
// NaN (and q = 0), so the outputs it touches are NaN, as float math gives.
func quantizeRow(q []int8, s []float32, x []float32, gs int) {
	for g := range s {
		xx := x[g*gs : (g+1)*gs]
		qq := q[g*gs : (g+1)*gs]
		var amax float32
		finite := true
		for _, v := range xx {
			if v < 0 {
				v = -v
			}
			if v > amax {
				amax = v
			}
			if !(v <= math.MaxFloat32) { // ±Inf or NaN
				finite = false
			}
		}
		scale := amax / 127
		switch {
		case !finite:
			s[g] = float32(math.NaN())
			clear(qq)
			continue
		case scale == 0:
			s[g] = 0
			clear(qq)
			continue
		}
		s[g] = scale
		for j, v := range xx {
			// v/scale is in [-127, 127] (up to rounding of the scale), so
			// adding ±0.5 in float64 is exact and truncation rounds half
			// away from zero, like C's round().
			f := float64(v / scale)
			if f >= 0 {
				qq[j] = int8(int32(f + 0.5))
			} else {
				qq[j] = int8(int32(f - 0.5))
			}
		}
	}
}

// laneAux writes one token's VNNI side data for every whole 64-column chunk:
// 16 int32 biases −128·(sum of the lane's 4 quantized values), then the 16
// lanes' x scales as float32 bits. The kernels flip the weights to w+128 for
// VPDPBUSD (unsigned × signed), and the bias takes the 128·Σx back out.
//
// A last, partial chunk (cols not a multiple of 64, cols a multiple of 4)
// gets the same for its lanes inside the row and zero biases and scales
// past it, which the kernels' masked tail chunk meets with zero weights.
func laneAux(aux []int32, q []int8, s []float32, cols, gs int) {
	for c := 0; c < (cols+63)/64; c++ {
		blk := aux[c*32 : c*32+32]
		for l := 0; l < 16; l++ {
			j := c*64 + 4*l
			if j+4 > cols {
				blk[l], blk[16+l] = 0, 0
				continue
			}
			sum := int32(q[j]) + int32(q[j+1]) + int32(q[j+2]) + int32(q[j+3])
			blk[l] = -128 * sum
			blk[16+l] = int32(math.Float32bits(s[j/gs]))
		}
	}
}

// clearAuxTail zeroes the lanes of a partial last chunk that lie past the
// row (the assembly quantizer writes only the lanes inside it).
func clearAuxTail(aux []int32, cols int) {
	if cols%64 == 0 {
		return
	}
	blk := aux[cols/64*32 : cols/64*32+32]
	for l := cols % 64 / 4; l < 16; l++ {
		blk[l], blk[16+l] = 0, 0
	}
}

// dotQ8Q8 is runq.c's matmul for one output: exact int32 sums per group,
// then val += float(ival) · w_scale · x_scale in group order.
func dotQ8Q8(wq []int8, ws []float32, xq []int8, xs []float32, gs int) float32 {
	var val float32
	for g, sw := range ws {
		w := wq[g*gs : (g+1)*gs]
		x := xq[g*gs : (g+1)*gs]
		var ival int32
		for j, v := range w {
			ival += int32(v) * int32(x[j])
		}
		val += float32(ival) * sw * xs[g]
	}
	return val
}

// q8Route is how a Q8_0 matmul runs on an Impl.
type q8Route uint8

const (
	q8Generic q8Route = iota // dotQ8Q8 in Go
	q8Float                  // the float32 assembly kernels on dequantized activations
	q8VNNI                   // integer dot products with AVX-512 VNNI
)

// hasVNNI reports AVX-512 VNNI (VPDPBUSD); set once by detect.
var hasVNNI = detectVNNI()

// useVNNI lets tests and benchmarks turn the VNNI kernels off, to exercise
// the q8Float route on a VNNI machine.
var useVNNI = true

// vnniGroupOK reports whether the VNNI kernels handle group size gs: whole
// int32 lanes (gs % 4 == 0) that either tile a 64-column chunk or span
// whole chunks.
func vnniGroupOK(gs int) bool { return gs%4 == 0 && (64%gs == 0 || gs%64 == 0) }

// useVNNIFor reports whether Q8_0 matrix m runs the VNNI kernels under
// impl: AVX-512 with VNNI (hasVNNI implies AVX-512 is available), not
// switched off, and a group size the kernels take.
func useVNNIFor(impl Impl, m *Matrix) bool {
	return impl == ImplAVX512 && hasVNNI && useVNNI && vnniGroupOK(m.GroupSize)
}

// routeQ8 picks the route for Q8_0 matrix m under impl (as adjusted by
// implFor).
func routeQ8(impl Impl, m *Matrix) q8Route {
	switch {
	case useVNNIFor(impl, m):
		return q8VNNI
	case impl != ImplGeneric && m.GroupSize%vecWidth(impl) == 0:
		return q8Float
	}
	return q8Generic
}

// genericRowsQ8 computes rows [r0, r1) of a Q8_0 matmul with dotQ8Q8.
func genericRowsQ8(out []float32, a *q8Acts, m *Matrix, T, r0, r1 int) {
	cols, gs, ng := m.Cols, m.GroupSize, m.Cols/m.GroupSize
	for i := r0; i < r1; i++ {
		wq := m.Q[i*cols : (i+1)*cols]
		ws := m.Scales[i*ng : (i+1)*ng]
		for t := 0; t < T; t++ {
			out[t*m.Rows+i] = dotQ8Q8(wq, ws, a.q[t*a.qs:t*a.qs+cols], a.s[t*ng:(t+1)*ng], gs)
		}
	}
}

// vnniRows computes rows [r0, r1) for all T tokens with the VNNI kernels,
// blocked like simdRows. Columns past the last whole 64-column chunk are
// whole groups (vnniGroupOK), summed in Go with dotQ8Q8 and added last.
func vnniRows(out []float32, a *q8Acts, m *Matrix, T, r0, r1 int) {
	cols, gs, ng := m.Cols, m.GroupSize, m.Cols/m.GroupSize
	nch := cols / 64
	nAsm := nch * 64
	var prm vnniParams
	n, cpg, sadv, kid := nch, 1, uintptr(0), 0
	if gs%64 == 0 {
		n, cpg, kid = cols/gs, gs/64, 3
	} else {
		spc := 64 / gs
		sadv = uintptr(4 * spc)
		prm.Mask = uint16(1<<spc - 1)
		for l := range prm.Idx {
			prm.Idx[l] = int32(4 * l / gs)
		}
		if tail := cols - nAsm; tail > 0 {
			// The kernels finish the row with a masked chunk.
			prm.TailMask = 1<<tail - 1
			prm.TailScaleMask = uint16(1<<(tail/gs) - 1)
			nAsm = cols
		}
	}
	if nch == 0 {
		n = 0
	}
	ws, ss, xqs := uintptr(cols), uintptr(ng*4), uintptr(a.qs)
	rows := m.Rows
	pfOK := 8*cols <= pfMaxBlock && m.Bytes() >= pfMinMatrix
	// call runs a kernel at row r, token t; it stores into out directly.
	call := func(shape, r, t int) {
		var pf unsafe.Pointer
		if shape == shapeMV && pfOK && r+8 < rows {
			pf = unsafe.Pointer(&m.Q[(r+8)*cols])
		}
		callVNNI(kid+shape, unsafe.Pointer(&m.Q[r*cols]), ws, &m.Scales[r*ng], ss,
			&a.q[t*a.qs], xqs, &a.aux[t*a.qs/2], n, cpg, sadv, &prm, &out[t*rows+r], uintptr(rows)*4, pf)
	}
	tail := func(r, t int) float32 {
		if nAsm == cols {
			return 0
		}
		g0 := nAsm / gs
		return dotQ8Q8(m.Q[r*cols+nAsm:(r+1)*cols], m.Scales[r*ng+g0:(r+1)*ng],
			a.q[t*a.qs+nAsm:t*a.qs+cols], a.s[t*ng+g0:(t+1)*ng], gs)
	}
	var addTail func(r, t, n int)
	if nAsm < cols {
		addTail = func(r, t, n int) {
			o := out[t*rows+r : t*rows+r+n]
			for rr := range o {
				o[rr] += tail(r+rr, t)
			}
		}
	}
	walkBlocks(m, T, r0, r1, vnniMMRows, vnniMMTok, 8, call, addTail)
}
