package kernels

import (
	"fmt"
	"math"
	"unsafe"
)

// Register-block shapes of the generated kernels (see asmgen.go).
const (
	shape1x1 = iota // one row, one token: the fallback for ranges < mvRows rows
	shapeMV         // geometry.mvRows rows × 1 token: decode
	shapeMM         // geometry.mmRows rows × geometry.mmTok tokens: prefill
)

// minWorkPerPart is the smallest number of multiply-adds worth handing to
// another thread: a hand-off to a polling worker costs about 1 µs here (two
// cross-core cache-line round trips plus bookkeeping), which is what 64K
// multiply-adds take on one core from L2. So a 288×288 matvec stays on one
// thread and a 768×288 one is split.
const minWorkPerPart = 1 << 16

// MatMul computes out = x · wᵀ for a batch of T tokens:
//
//	out[t·Rows + i] = Σ_j w[i, j] · x[t·Cols + j]   for t < T, i < Rows
//
// x is T row-major token vectors of Cols values (x_stride = Cols) and out is
// T vectors of Rows values (out_stride = Rows), llama2.c's matmul(xout, x, w,
// n=Cols, d=Rows) repeated over tokens. T == 1 is the decode matvec; T > 1
// is prefill, where each block of weight rows is loaded once and used for
// a block of tokens (4, or 3 for AVX-512 Q8_0) straight from registers, so
// the weights stream from memory once per call instead of once per token.
//
// F32, F16 and BF16 weights are computed in float32 (half-precision weights
// widened exactly). Q8_0 quantizes x per group first, as runq.c does, and
// sums int32 group dot products times both scales (integer VNNI kernels
// where the CPU has them); see the package documentation.
//
// Rows are split across p's threads in contiguous ranges (p may be nil).
// Each output is computed by one thread with a summation order fixed by
// the implementation alone, so out is bit-identical for any thread count
// and any T. MatMul does not allocate. It returns an error, without
// touching out, if w is malformed, T < 0, a slice is too short, or out
// overlaps x or the weights.
func MatMul(p *Pool, out []float32, x []float32, w *Matrix, T int) error {
	if err := checkMatMul(out, x, w, T); err != nil || T == 0 {
		return err
	}
	job := matmulJob{out: out[:T*w.Rows], x: x[:T*w.Cols], w: w, T: T, impl: implFor(CurrentImpl(), w)}
	// Ranges start on multiples of 16 rows: whole 8-row blocks, and each
	// thread's slice of out starts on a 64-byte line (no false sharing).
	const align = 16
	minRows := (minWorkPerPart + w.Cols*T - 1) / (w.Cols * T)
	s := p.tryAcquire()
	if s == nil {
		job.onCaller(p, minRows, align)
		return nil
	}
	defer s.mu.Unlock()
	job.onPool(s, minRows, align)
	return nil
}

// checkMatMul returns MatMul's error for malformed arguments, or nil
// (also for T == 0, which computes nothing).
func checkMatMul(out, x []float32, w *Matrix, T int) error {
	if err := w.Validate(); err != nil {
		return err
	}
	if T < 0 {
		return fmt.Errorf("kernels: MatMul token count T = %d is negative", T)
	}
	if T == 0 {
		return nil
	}
	if T > math.MaxInt32 || T > math.MaxInt/max(w.Rows, w.Cols) {
		return fmt.Errorf("kernels: MatMul token count T = %d is too large", T)
	}
	if len(x) < T*w.Cols {
		return fmt.Errorf("kernels: MatMul x has %d values, T=%d × Cols=%d needs %d", len(x), T, w.Cols, T*w.Cols)
	}
	if len(out) < T*w.Rows {
		return fmt.Errorf("kernels: MatMul out has %d values, T=%d × Rows=%d needs %d", len(out), T, w.Rows, T*w.Rows)
	}
	out, x = out[:T*w.Rows], x[:T*w.Cols]
	if overlaps(out, x) {
		return fmt.Errorf("kernels: MatMul out overlaps x")
	}
	if w.Format == F32 && overlaps(out, w.F32[:w.Rows*w.Cols]) {
		return fmt.Errorf("kernels: MatMul out overlaps the weights")
	}
	return nil
}

// tryAcquire locks p's state for one call and returns it, or nil when
// there is no pool or it is busy or closed (p may be nil).
func (p *Pool) tryAcquire() *poolState {
	if p == nil || !p.s.mu.TryLock() {
		return nil
	}
	if p.s.closed {
		p.s.mu.Unlock()
		return nil
	}
	return p.s
}

// onCaller runs the job on the calling goroutine, when there is no pool
// or it is busy or closed: the same ranges as the pool would use, with
// the shared scratch q8Shared (or ggmlShared) for the converted x.
func (j *matmulJob) onCaller(p *Pool, minRows, align int) {
	k := 1
	if p != nil {
		k = parts(p.s.threads, j.w.Rows, minRows, align)
	}
	if j.w.Format == Q8_0 {
		a := &q8Shared.a
		if q8Shared.mu.TryLock() {
			defer q8Shared.mu.Unlock()
		} else {
			a = new(q8Acts) // another caller holds it: rare, so allocate
		}
		j.quantize(nil, a)
	} else if kind := actKindFor(j.w); kind != actNone {
		a := &ggmlShared.a
		if ggmlShared.mu.TryLock() {
			defer ggmlShared.mu.Unlock()
		} else {
			a = new(ggmlActs)
		}
		j.prepareGGML(nil, a, kind)
	}
	j.serial(k, align)
}

// onPool runs the job on s's threads (s locked by the caller). The pool
// owns one scratch per activation kind, used under s.mu, so pooled calls
// never allocate once it has grown to the largest shape.
func (j *matmulJob) onPool(s *poolState, minRows, align int) {
	if j.w.Format == Q8_0 {
		j.quantize(s, &s.q8)
	} else if kind := actKindFor(j.w); kind != actNone {
		j.prepareGGML(s, &s.ggml, kind)
	}
	k := parts(s.threads, j.w.Rows, minRows, align)
	if k == 1 {
		j.run(0, j.w.Rows)
		return
	}
	s.mm = *j
	s.dispatch(j.w.Rows, k, align, &s.mm)
	s.mm = matmulJob{}
}

// quantize prepares a Q8_0 job: x quantized once for the whole call, as
// runq.c does before each matmul, on s's threads when it is long (s is
// locked by the caller, or nil).
func (j *matmulJob) quantize(s *poolState, a *q8Acts) {
	j.route = routeQ8(j.impl, j.w)
	j.acts = a
	a.quantize(s, j.impl, j.x, j.T, j.w.Cols, j.w.GroupSize, j.route == q8VNNI, j.route == q8Float)
}

// prepareGGML converts x for a ggml matrix (ggml_act.go): quantized
// blocks for the block formats, or a rounded copy that replaces x for F16
// and BF16 ones.
func (j *matmulJob) prepareGGML(s *poolState, a *ggmlActs, kind actKind) {
	a.prepare(s, kind, j.x, j.T, j.w.Cols)
	if kind == actF16 || kind == actBF16 {
		j.x = a.f[:j.T*j.w.Cols]
		return
	}
	j.gacts = a
}

// overlaps reports whether two float32 slices share memory.
func overlaps(a, b []float32) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	a0 := uintptr(unsafe.Pointer(&a[0]))
	b0 := uintptr(unsafe.Pointer(&b[0]))
	return a0 < b0+uintptr(len(b))*4 && b0 < a0+uintptr(len(a))*4
}

// matmulJob is one MatMul call, split over rows.
type matmulJob struct {
	out, x []float32
	w      *Matrix
	T      int
	impl   Impl
	route  q8Route   // Q8_0 only
	acts   *q8Acts   // Q8_0 only: x quantized
	gacts  *ggmlActs // ggml block formats only: x quantized
}

func (j *matmulJob) serial(k, align int) {
	for i := 0; i < k; i++ {
		if start, end := bounds(j.w.Rows, k, align, i); start < end {
			j.run(start, end)
		}
	}
}

// run computes out for rows [r0, r1) and every token.
func (j *matmulJob) run(r0, r1 int) {
	if j.gacts != nil {
		ggmlRows(j.impl, j.out, j.gacts, j.w, j.T, r0, r1)
		return
	}
	if j.w.Format == Q8_0 {
		switch j.route {
		case q8VNNI:
			vnniRows(j.out, j.acts, j.w, j.T, r0, r1)
		case q8Float:
			simdRows(j.impl, j.out, j.acts.dq, j.w, j.T, r0, r1)
		default:
			genericRowsQ8(j.out, j.acts, j.w, j.T, r0, r1)
		}
		return
	}
	if j.impl == ImplGeneric {
		genericRows(j.out, j.x, j.w, j.T, r0, r1)
		return
	}
	simdRows(j.impl, j.out, j.x, j.w, j.T, r0, r1)
}

// blockArgs are the byte-level kernel arguments for one matrix, derived once
// per range. The kernels see row i at w + i·ws and token t at x + t·xs.
type blockArgs struct {
	m          *Matrix
	x          []float32
	impl       Impl
	esize      uintptr // weight bytes per element
	ws, ss, xs uintptr // row, scale-row and token strides in bytes
	nArg, gArg int     // the kernel's n and g (asmgen.go contract)
	nAsm       int     // columns the kernel covers; [nAsm, Cols) is the Go tail
	kid        int     // kernelID(impl, format, 0)
	pfOK       bool    // the matvec kernel may prefetch the next block
}

// kernelID numbers the generated kernels for callBlock's jump table.
func kernelID(impl Impl, f Format, shape int) int { return (int(impl)*4+int(f))*3 + shape }

func newBlockArgs(impl Impl, m *Matrix, x []float32) blockArgs {
	W := vecWidth(impl)
	a := blockArgs{m: m, x: x, impl: impl, esize: uintptr(m.Format.elemBytes()), kid: kernelID(impl, m.Format, 0)}
	a.ws = uintptr(m.Cols) * a.esize
	a.xs = uintptr(m.Cols) * 4
	if m.Format == Q8_0 {
		// implFor guarantees GroupSize % W == 0 and Validate Cols % GroupSize == 0.
		a.ss = uintptr(m.Cols/m.GroupSize) * 4
		a.nArg, a.gArg, a.nAsm = m.Cols/m.GroupSize, m.GroupSize/W, m.Cols
	} else if impl == ImplAVX512 {
		// The AVX-512 kernels finish the row with a masked chunk.
		a.nAsm, a.nArg = m.Cols, m.Cols
	} else {
		a.nAsm = m.Cols &^ (W - 1)
		a.nArg = a.nAsm
	}
	a.pfOK = 8*int(a.ws) <= pfMaxBlock && m.Bytes() >= pfMinMatrix
	return a
}

// pfMaxBlock bounds the software prefetch of the matvec kernels: they
// prefetch the next 8-row block into L2 while computing this one, which keeps more
// bytes in flight than the out-of-order window alone (compressed formats
// spend several instructions per 64-byte line). For long rows the next
// block is far enough ahead that prefetched lines would be evicted before
// use, and the hardware streamers already do well, so it is skipped.
// Matrices under pfMinMatrix (64 KiB) skip it too: only a tiny model keeps
// such weights in cache between tokens, where the extra instructions only
// cost time. The lower bound is low enough for a Q8_0 768×768 projection
// (648 KiB) to be prefetched: without it stories110M Q8_0 decode was
// measurably slower (docs/kernels.md, "Decisions the benchmarks made").
const (
	pfMaxBlock  = 32 << 10
	pfMinMatrix = 64 << 10
)

// wptr returns the address of weight row r and, for Q8_0, of its scales.
func (a *blockArgs) wptr(r int) (unsafe.Pointer, *float32) {
	m := a.m
	off := r * m.Cols
	switch m.Format {
	case F32:
		return unsafe.Pointer(&m.F32[off]), nil
	case F16, BF16:
		return unsafe.Pointer(&m.U16[off]), nil
	}
	return unsafe.Pointer(&m.Q[off]), &m.Scales[off/m.GroupSize]
}

// call runs kernel shape at weight row r and token t, storing (row r+i,
// token t+j) at out[(t+j)·Rows + r+i].
func (a *blockArgs) call(shape, r, t int, out []float32) {
	wp, sp := a.wptr(r)
	var pf unsafe.Pointer
	if shape == shapeMV && a.pfOK && r+8 < a.m.Rows {
		pf, _ = a.wptr(r + 8)
	}
	callBlock(a.kid+shape, wp, a.ws, sp, a.ss, &a.x[t*a.m.Cols], a.xs, a.nArg, a.gArg, &out[t*a.m.Rows+r], uintptr(a.m.Rows)*4, pf)
}

// tail is Σ_{j ≥ nAsm} w[r, j]·x[t, j], the columns past the last whole
// vector, added in column order after the kernel's vector sum.
func (a *blockArgs) tail(r, t int) float32 {
	m := a.m
	if a.nAsm == m.Cols {
		return 0
	}
	off := r * m.Cols
	x := a.x[t*m.Cols+a.nAsm : (t+1)*m.Cols]
	var s float32
	switch m.Format {
	case F32:
		for j, v := range m.F32[off+a.nAsm : off+m.Cols] {
			s += v * x[j]
		}
	case BF16:
		for j, v := range m.U16[off+a.nAsm : off+m.Cols] {
			s += BF16ToFloat32(v) * x[j]
		}
	case F16:
		t16 := f16Table()
		for j, v := range m.U16[off+a.nAsm : off+m.Cols] {
			s += t16[v] * x[j]
		}
	}
	return s
}

// simdRows computes rows [r0, r1) for all T tokens with the assembly
// kernels, in the blocks walkBlocks lays out. Every kernel of an Impl sums
// each (row, token) in the same order, so the mix of shapes is invisible
// in the output.
func simdRows(impl Impl, out, x []float32, m *Matrix, T, r0, r1 int) {
	geo := simdGeometry[impl][m.Format]
	a := newBlockArgs(impl, m, x)
	var tail func(r, t, n int)
	if a.nAsm < m.Cols {
		tail = func(r, t, n int) {
			o := out[t*m.Rows+r : t*m.Rows+r+n]
			for rr := range o {
				o[rr] += a.tail(r+rr, t)
			}
		}
	}
	walkBlocks(m, T, r0, r1, geo.mmRows, geo.mmTok, geo.mvRows,
		func(shape, r, t int) { a.call(shape, r, t, out) }, tail)
}

// walkBlocks covers rows [r0, r1) × tokens [0, T) of a matmul with register
// blocks, calling kernel(shape, r, t) for the block at row r and token t
// and then, if tail is not nil, tail(r, t, n) for each of its tokens (n
// rows), to add the columns the kernel left to Go:
//
//   - T ≥ NT and at least MR rows: MR×NT blocks. Tokens are cut into
//     panels whose x rows stay in L2 while every row block of the range
//     streams past once, and G row blocks (in L1) share each x tile.
//   - otherwise mvRows×1 blocks, or 1×1 for a range shorter than that.
//
// A range that does not divide into whole blocks ends with a block shifted
// back to end at r1 (and a panel shifted back to end at its last token):
// it recomputes a few outputs with bit-identical results, so no kernel
// reads past the range or the matrix.
func walkBlocks(m *Matrix, T, r0, r1, MR, NT, mvRows int, kernel func(shape, r, t int), tail func(r, t, n int)) {
	if T >= NT && r1-r0 >= MR {
		tp, G := prefillBlocking(m, MR, NT)
		nblocks := (r1 - r0 + MR - 1) / MR
		for t0 := 0; t0 < T; t0 += tp {
			t1 := min(t0+tp, T)
			pt0 := min(t0, t1-NT)
			for b0 := 0; b0 < nblocks; b0 += G {
				for t := pt0; t < t1; t += NT {
					ts := min(t, t1-NT)
					for b := b0; b < min(b0+G, nblocks); b++ {
						rs := min(r0+b*MR, r1-MR)
						kernel(shapeMM, rs, ts)
						if tail != nil {
							for tt := ts; tt < ts+NT; tt++ {
								tail(rs, tt, MR)
							}
						}
					}
				}
			}
		}
		return
	}
	if r1-r0 < mvRows {
		for r := r0; r < r1; r++ {
			for t := 0; t < T; t++ {
				kernel(shape1x1, r, t)
				if tail != nil {
					tail(r, t, 1)
				}
			}
		}
		return
	}
	for r := r0; r < r1; r += mvRows {
		rs := min(r, r1-mvRows)
		for t := 0; t < T; t++ {
			kernel(shapeMV, rs, t)
			if tail != nil {
				tail(rs, t, mvRows)
			}
		}
	}
}

// Cache budgets for prefill blocking. L1 holds the G row blocks being
// reused plus one x tile; L2 holds a panel of token rows. The values fit
// the smallest common cores (32 KiB L1D, 1 MiB L2) with room to spare.
const (
	l1Budget = 32 << 10
	l2Budget = 512 << 10
)

// prefillBlocking picks the token panel tp (a multiple of NT, at least NT)
// whose x rows fit l2Budget, and the number G of MR-row weight blocks that
// fit l1Budget next to one NT-token x tile.
func prefillBlocking(m *Matrix, MR, NT int) (tp, G int) {
	xrow := m.Cols * 4
	tp = max(l2Budget/xrow/NT*NT, NT)
	wblock := MR * m.Cols * m.Format.elemBytes()
	G = min(max((l1Budget-NT*xrow)/wblock, 1), 8)
	return tp, G
}
