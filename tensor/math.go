package tensor

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// This file holds the math of a Llama layer on strided operands: Matmul,
// softmax, RMSNorm, SiLU, broadcasting Add/Mul and the small in-place
// helpers. Every operand is read through its (shape, strides, offset), so
// a transposed or sliced view costs nothing to pass in; results are new
// contiguous tensors in the first operand's Ledger. Computation is in
// float32 whatever the storage dtype, as in llama2.c. On meta operands the
// ops return a meta result of the right shape and compute nothing, so a
// [2,32,4096,4096] attention can be traced for free.

// eachIndex visits every index of shape in row-major order, keeping one
// storage offset per layout: offs[j] = base[j] + Σ_k idx_k·strides[j][k].
// Moving to the next index adds one stride per layout and, on a carry,
// subtracts size·stride of the dim that wrapped, so the walk is O(1) per
// element whatever the layouts. A 0-dim shape is visited once.
func eachIndex(shape []int, strides [][]int, base []int, f func(offs []int)) {
	for _, s := range shape {
		if s == 0 {
			return
		}
	}
	offs := append([]int(nil), base...)
	idx := make([]int, len(shape))
	for {
		f(offs)
		d := len(shape) - 1
		for ; d >= 0; d-- {
			idx[d]++
			for j := range offs {
				offs[j] += strides[j][d]
			}
			if idx[d] < shape[d] {
				break
			}
			for j := range offs {
				offs[j] -= strides[j][d] * shape[d]
			}
			idx[d] = 0
		}
		if d < 0 {
			return
		}
	}
}

// eachRow visits the rows (every index of all dims but the last) of
// equally shaped tensors: f gets each tensor's row start offset, its
// last-dim stride and the row length. A 0-dim shape is one row of length 1.
func eachRow(ts []*Tensor, f func(offs, strides []int, n int)) {
	shape := ts[0].shape
	nd := len(shape)
	strides := make([][]int, len(ts))
	base := make([]int, len(ts))
	inner := make([]int, len(ts))
	n := 1
	for j, t := range ts {
		base[j] = t.offset
		if nd > 0 {
			strides[j] = t.strides[:nd-1]
			inner[j] = t.strides[nd-1]
		} else {
			inner[j] = 1
		}
	}
	lead := shape
	if nd > 0 {
		lead, n = shape[:nd-1], shape[nd-1]
	}
	eachIndex(lead, strides, base, func(offs []int) { f(offs, inner, n) })
}

// BroadcastShapes returns the shape two operands broadcast to under
// PyTorch's rules: align the shapes on the right; each pair of sizes must
// be equal or one of them 1, and a missing leading dim counts as 1.
func BroadcastShapes(a, b []int) ([]int, error) { return broadcastShapes("broadcast", a, b) }

func broadcastShapes(op string, a, b []int) ([]int, error) {
	nd := max(len(a), len(b))
	out := make([]int, nd)
	for i := nd - 1; i >= 0; i-- {
		sa, sb := 1, 1
		if k := i - (nd - len(a)); k >= 0 {
			sa = a[k]
		}
		if k := i - (nd - len(b)); k >= 0 {
			sb = b[k]
		}
		switch {
		case sa == sb || sb == 1:
			out[i] = sa
		case sa == 1:
			out[i] = sb
		default:
			return nil, errorf(op, "The size of tensor a (%d) must match the size of tensor b (%d) at non-singleton dimension %d (shapes %s and %s)",
				sa, sb, i, FormatInts(a), FormatInts(b))
		}
	}
	if _, err := numelOf(op, out); err != nil {
		return nil, err
	}
	return out, nil
}

// resultDType is PyTorch's type promotion restricted to Stride's dtypes:
// equal dtypes keep theirs; F16 with BF16, or anything with F32, is F32.
func resultDType(a, b *Tensor) DType {
	if a.st.dtype == b.st.dtype {
		return a.st.dtype
	}
	return F32
}

func checkOperands(op string, ts ...*Tensor) error {
	for i, t := range ts {
		if t == nil || t.st == nil {
			return errorf(op, "operand %d is nil", i)
		}
	}
	return nil
}

// gemmLayout decides how BLAS can read a rows×cols matrix whose dims have
// strides (sr, sc) without copying it, the way PyTorch hands operands to
// cuBLAS:
//
//   - row-major, sc == 1: pass as is (NoTrans) with ld = sr;
//   - column-major, sr == 1 (the transpose of a contiguous matrix, e.g.
//     k.transpose(-2, -1)): the memory is a row-major cols×rows matrix
//     with ld = sc, so pass that with Trans.
//
// BLAS also needs ld ≥ the stored row length; a size-1 dim's stride never
// matters, so it is replaced by the smallest legal ld. ok is false when
// neither order is unit-stride (a strided slice, a stride-0 broadcast,
// overlapping windows): that operand has to be copied.
func gemmLayout(rows, cols, sr, sc int) (trans bool, ld int, ok bool) {
	if cols <= 1 || sc == 1 {
		ld = sr
		if rows <= 1 {
			ld = max(1, cols)
		}
		if ld >= max(1, cols) {
			return false, ld, true
		}
	}
	if rows <= 1 || sr == 1 {
		ld = sc
		if cols <= 1 {
			ld = max(1, rows)
		}
		if ld >= max(1, rows) {
			return true, ld, true
		}
	}
	return false, 0, false
}

// gemmOperand returns t ready for BLAS: t itself when it is F32 and its
// last two dims satisfy gemmLayout, otherwise a contiguous F32 copy (the
// copy is recorded in t's Ledger, and tmp is true so the caller can
// release it when done).
func gemmOperand(t *Tensor) (out *Tensor, tmp bool, err error) {
	nd := len(t.shape)
	if t.st.dtype == F32 {
		if _, _, ok := gemmLayout(t.shape[nd-2], t.shape[nd-1], t.strides[nd-2], t.strides[nd-1]); ok {
			return t, false, nil
		}
		c, err := t.Clone()
		return c, true, err
	}
	c, err := t.To(F32)
	return c, true, err
}

// Matmul returns a @ b as a new contiguous F32 tensor in a's Ledger.
//
// Shapes follow torch.matmul: [M,K]@[K,N] → [M,N]; with more dims the
// leading (batch) dims broadcast, [...,M,K]@[...,K,N] → [...,M,N]; a 1-D
// operand is treated as a row (a) or column (b) vector and its dim dropped
// from the result.
//
// Each batch's matrices are read in place through their strides: a
// matrix that is row-major (stride[-1] = 1) goes to blas32.Gemm as is with
// ld = stride[-2], and one that is column-major (stride[-2] = 1, the
// transpose of a contiguous matrix) goes as its transpose with ld =
// stride[-1] — the cuBLAS LDA/LDB trick, so q @ k.transpose(-2, -1) copies
// nothing. Batch i starts at offset + Σ idx_k·batch_stride_k (0 for a
// broadcast dim). Only operands whose inner dims are unit-stride in neither
// order, or that are F16/BF16, are first copied to contiguous F32, and that
// copy is recorded in the operand's Ledger.
//
// If either operand is meta, the result is a meta tensor of the result
// shape and nothing is computed.
func Matmul(a, b *Tensor) (res *Tensor, err error) {
	const op = "matmul"
	if err := checkOperands(op, a, b); err != nil {
		return nil, err
	}
	if a.Dim() == 0 || b.Dim() == 0 {
		return nil, errorf(op, "both arguments to matmul need to be at least 1D, but they are %dD and %dD", a.Dim(), b.Dim())
	}
	a2, b2 := a, b
	dropM, dropN := a.Dim() == 1, b.Dim() == 1
	if dropM {
		a2 = a.with([]int{1, a.shape[0]}, []int{a.shape[0] * a.strides[0], a.strides[0]}, a.offset)
	}
	if dropN {
		b2 = b.with([]int{b.shape[0], 1}, []int{b.strides[0], 1}, b.offset)
	}
	na, nb := a2.Dim(), b2.Dim()
	m, k := a2.shape[na-2], a2.shape[na-1]
	k2, n := b2.shape[nb-2], b2.shape[nb-1]
	if k != k2 {
		return nil, errorf(op, "mat1 and mat2 shapes cannot be multiplied (%dx%d and %dx%d) (operands of shape %s and %s)",
			m, k, k2, n, FormatInts(a.shape), FormatInts(b.shape))
	}
	batch, err := broadcastShapes(op, a2.shape[:na-2], b2.shape[:nb-2])
	if err != nil {
		return nil, err
	}
	full := append(append([]int(nil), batch...), m, n)
	final := append([]int(nil), batch...)
	if !dropM {
		final = append(final, m)
	}
	if !dropN {
		final = append(final, n)
	}
	meta := a.st.meta || b.st.meta
	out, err := newTensor(a.st.led, F32, full, meta, op)
	if err != nil {
		return nil, err
	}
	out = out.with(final, ContiguousStrides(final), 0)
	if meta || m == 0 || n == 0 || k == 0 {
		return out, nil // k == 0: the sum over nothing is the zeros out holds
	}

	pa, tmpA, err := gemmOperand(a2)
	if err != nil {
		return nil, err
	}
	if tmpA {
		defer pa.Release()
	}
	pb, tmpB, err := gemmOperand(b2)
	if err != nil {
		return nil, err
	}
	if tmpB {
		defer pb.Release()
	}
	ae, err := pa.Expand(append(append([]int(nil), batch...), m, k)...)
	if err != nil {
		return nil, err
	}
	be, err := pb.Expand(append(append([]int(nil), batch...), k, n)...)
	if err != nil {
		return nil, err
	}
	nbat := len(batch)
	transA, lda, _ := gemmLayout(m, k, ae.strides[nbat], ae.strides[nbat+1])
	transB, ldb, _ := gemmLayout(k, n, be.strides[nbat], be.strides[nbat+1])
	// A BLAS panic here would be a bug in the layout logic above; turn it
	// into an error rather than let it escape.
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, errorf(op, "gemm failed on operands %v and %v: %v", a, b, r)
		}
	}()
	af, bf, cf := ae.st.f32, be.st.f32, out.st.f32
	mn := m * n
	ci := 0
	eachIndex(batch, [][]int{ae.strides[:nbat], be.strides[:nbat]}, []int{ae.offset, be.offset}, func(offs []int) {
		blas32.Gemm(blasTrans(transA), blasTrans(transB), 1,
			general(m, k, transA, lda, af[offs[0]:]),
			general(k, n, transB, ldb, bf[offs[1]:]),
			0, blas32.General{Rows: m, Cols: n, Stride: n, Data: cf[ci*mn : (ci+1)*mn]})
		ci++
	})
	return out, nil
}

func blasTrans(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}

// general describes a logical rows×cols matrix to BLAS: as stored when
// not transposed, or as the stored cols×rows matrix when it is.
func general(rows, cols int, trans bool, ld int, data []float32) blas32.General {
	if trans {
		rows, cols = cols, rows
	}
	return blas32.General{Rows: rows, Cols: cols, Stride: ld, Data: data}
}

// softmaxRow writes softmax(src row) to dst row as llama2.c does:
// subtract the max for stability, exponentiate, divide by the sum, all in
// float32. buf holds the exponentials so a half-precision row is rounded
// only once, on the final store.
func softmaxRow(dst, src *Storage, do, dstr, so, sstr, n int, buf []float32) {
	if n == 0 {
		return
	}
	buf = buf[:n]
	for j := range buf {
		buf[j] = src.load(so + j*sstr)
	}
	mx := buf[0]
	for _, v := range buf[1:] {
		if v > mx {
			mx = v
		}
	}
	var sum float32
	for j, v := range buf {
		e := float32(math.Exp(float64(v - mx)))
		buf[j] = e
		sum += e
	}
	for j, v := range buf {
		dst.store(do+j*dstr, v/sum)
	}
}

// SoftmaxLastDimInPlace replaces every row of t (its last dim) by its
// softmax, reading and writing through t's strides. It refuses a tensor
// whose elements overlap in memory (an expanded or unfolded view), as
// PyTorch's in-place ops do, since one location would be written by
// several rows. On a meta tensor it does nothing.
func SoftmaxLastDimInPlace(t *Tensor) error {
	const op = "softmax_"
	if err := checkOperands(op, t); err != nil {
		return err
	}
	if err := t.CheckNoOverlap(op); err != nil {
		return err
	}
	if t.st.meta {
		return nil
	}
	buf := make([]float32, lastDim(t))
	eachRow([]*Tensor{t}, func(offs, strs []int, n int) {
		softmaxRow(t.st, t.st, offs[0], strs[0], offs[0], strs[0], n, buf)
	})
	return nil
}

// Softmax returns softmax over the last dim of t as a new contiguous
// tensor of t's dtype in t's Ledger (meta in, meta out).
func Softmax(t *Tensor) (*Tensor, error) {
	if err := checkOperands("softmax", t); err != nil {
		return nil, err
	}
	out, err := newTensor(t.st.led, t.st.dtype, t.shape, t.st.meta, "softmax")
	if err != nil || t.st.meta {
		return out, err
	}
	buf := make([]float32, lastDim(t))
	eachRow([]*Tensor{out, t}, func(offs, strs []int, n int) {
		softmaxRow(out.st, t.st, offs[0], strs[0], offs[1], strs[1], n, buf)
	})
	return out, nil
}

func lastDim(t *Tensor) int {
	if len(t.shape) == 0 {
		return 1
	}
	return t.shape[len(t.shape)-1]
}

// RMSNorm returns x·w / sqrt(mean(x²) + eps) over the last dim of x, as a
// new contiguous tensor of x's dtype in x's Ledger. w is 1-D with the
// size of that dim (any stride). The arithmetic is llama2.c's rmsnorm in
// float32: ss = Σx², ss = 1/sqrt(ss/n + eps), out = w·(ss·x).
func RMSNorm(x, w *Tensor, eps float32) (*Tensor, error) {
	const op = "rms_norm"
	if err := checkOperands(op, x, w); err != nil {
		return nil, err
	}
	d := lastDim(x)
	if x.Dim() == 0 || w.Dim() != 1 || w.shape[0] != d {
		return nil, errorf(op, "weight of shape %s does not match the last dim of input of shape %s", FormatInts(w.shape), FormatInts(x.shape))
	}
	meta := x.st.meta || w.st.meta
	out, err := newTensor(x.st.led, x.st.dtype, x.shape, meta, op)
	if err != nil || meta {
		return out, err
	}
	ws, wo, wstr := w.st, w.offset, w.strides[0]
	eachRow([]*Tensor{out, x}, func(offs, strs []int, n int) {
		var ss float32
		for j := 0; j < n; j++ {
			v := x.st.load(offs[1] + j*strs[1])
			ss += v * v
		}
		ss /= float32(n)
		ss += eps
		ss = 1 / float32(math.Sqrt(float64(ss)))
		for j := 0; j < n; j++ {
			v := x.st.load(offs[1] + j*strs[1])
			out.st.store(offs[0]+j*strs[0], ws.load(wo+j*wstr)*(ss*v))
		}
	})
	return out, nil
}

// unary returns f applied to every element of t as a new contiguous
// tensor of t's dtype.
func unary(op string, t *Tensor, f func(float32) float32) (*Tensor, error) {
	if err := checkOperands(op, t); err != nil {
		return nil, err
	}
	out, err := newTensor(t.st.led, t.st.dtype, t.shape, t.st.meta, op)
	if err != nil || t.st.meta {
		return out, err
	}
	eachRow([]*Tensor{out, t}, func(offs, strs []int, n int) {
		for j := 0; j < n; j++ {
			out.st.store(offs[0]+j*strs[0], f(t.st.load(offs[1]+j*strs[1])))
		}
	})
	return out, nil
}

// SiLU returns x·σ(x) = x / (1 + e^-x) elementwise (llama2.c's SwiGLU
// gate) as a new contiguous tensor.
func SiLU(t *Tensor) (*Tensor, error) {
	return unary("silu", t, func(v float32) float32 {
		return v * (1 / (1 + float32(math.Exp(float64(-v)))))
	})
}

// binary broadcasts a and b to a common shape (stride 0 along broadcast
// dims, so nothing is materialized) and returns f of each pair as a new
// contiguous tensor in a's Ledger.
func binary(op string, a, b *Tensor, f func(x, y float32) float32) (*Tensor, error) {
	if err := checkOperands(op, a, b); err != nil {
		return nil, err
	}
	shape, err := broadcastShapes(op, a.shape, b.shape)
	if err != nil {
		return nil, err
	}
	meta := a.st.meta || b.st.meta
	out, err := newTensor(a.st.led, resultDType(a, b), shape, meta, op)
	if err != nil || meta {
		return out, err
	}
	ae, err := a.Expand(shape...)
	if err != nil {
		return nil, err
	}
	be, err := b.Expand(shape...)
	if err != nil {
		return nil, err
	}
	eachRow([]*Tensor{out, ae, be}, func(offs, strs []int, n int) {
		for j := 0; j < n; j++ {
			out.st.store(offs[0]+j*strs[0], f(ae.st.load(offs[1]+j*strs[1]), be.st.load(offs[2]+j*strs[2])))
		}
	})
	return out, nil
}

// Add returns a + b with PyTorch broadcasting, as a new contiguous tensor.
func Add(a, b *Tensor) (*Tensor, error) {
	return binary("add", a, b, func(x, y float32) float32 { return x + y })
}

// Mul returns a · b elementwise with PyTorch broadcasting, as a new
// contiguous tensor.
func Mul(a, b *Tensor) (*Tensor, error) {
	return binary("mul", a, b, func(x, y float32) float32 { return x * y })
}

// AddInPlace does a += b (PyTorch's a.add_(b)): b is broadcast to a's
// shape, a keeps its shape. a must not overlap itself: adding into
// bias.expand(4, 3) would add four times into each bias element, so it is
// refused with PyTorch's "more than one element of the written-to tensor
// refers to a single memory location". If b views a's storage with a
// different layout it is cloned first, so no element is read after being
// written. On a meta a it only checks shapes.
func AddInPlace(a, b *Tensor) error {
	const op = "add_"
	if err := checkOperands(op, a, b); err != nil {
		return err
	}
	be, err := b.Expand(a.shape...)
	if err != nil {
		return errorf(op, "output with shape %s doesn't match the broadcast shape of %s and %s", FormatInts(a.shape), FormatInts(a.shape), FormatInts(b.shape))
	}
	if err := a.CheckNoOverlap(op); err != nil {
		return err
	}
	if a.st.meta || b.st.meta {
		return nil
	}
	if be.st == a.st && (be.offset != a.offset || !slices.Equal(be.strides, a.strides)) {
		c, err := b.Clone()
		if err != nil {
			return err
		}
		defer c.Release()
		if be, err = c.Expand(a.shape...); err != nil {
			return err
		}
	}
	eachRow([]*Tensor{a, be}, func(offs, strs []int, n int) {
		for j := 0; j < n; j++ {
			o := offs[0] + j*strs[0]
			a.st.store(o, a.st.load(o)+be.st.load(offs[1]+j*strs[1]))
		}
	})
	return nil
}

// ScaleInPlace multiplies every element of t by s (t.mul_(s)); like
// AddInPlace it refuses an overlapping t, and does nothing on a meta t.
func ScaleInPlace(t *Tensor, s float32) error {
	const op = "mul_"
	if err := checkOperands(op, t); err != nil {
		return err
	}
	if err := t.CheckNoOverlap(op); err != nil {
		return err
	}
	if t.st.meta {
		return nil
	}
	eachRow([]*Tensor{t}, func(offs, strs []int, n int) {
		for j := 0; j < n; j++ {
			o := offs[0] + j*strs[0]
			t.st.store(o, t.st.load(o)*s)
		}
	})
	return nil
}

// Argmax returns the index of the largest element of a 1-D tensor; ties go
// to the first, as in llama2.c's greedy sampler (a NaN never wins).
func Argmax(t *Tensor) (int, error) {
	const op = "argmax"
	if err := checkOperands(op, t); err != nil {
		return 0, err
	}
	if t.Dim() != 1 {
		return 0, errorf(op, "expected a 1-D tensor, got shape %s", FormatInts(t.shape))
	}
	if t.shape[0] == 0 {
		return 0, errorf(op, "argmax(): Expected reduction dim 0 to have non-zero size (shape %s)", FormatInts(t.shape))
	}
	if t.st.meta {
		return 0, fmt.Errorf("%s: %w", op, ErrMeta)
	}
	best, bestV := 0, t.st.load(t.offset)
	for i := 1; i < t.shape[0]; i++ {
		if v := t.st.load(t.offset + i*t.strides[0]); v > bestV {
			best, bestV = i, v
		}
	}
	return best, nil
}

// SumDim returns the sum of t over dim (which is removed from the shape),
// as a new contiguous tensor of t's dtype. Sums accumulate in float64 and
// round once, so they do not depend on the reduction order.
func SumDim(t *Tensor, dim int) (*Tensor, error) {
	const op = "sum"
	if err := checkOperands(op, t); err != nil {
		return nil, err
	}
	d, err := wrapDim(op, dim, len(t.shape))
	if err != nil {
		return nil, err
	}
	if len(t.shape) == 0 {
		return t.Clone()
	}
	// Move dim last: then every row of the permuted view is one sum.
	perm := make([]int, 0, len(t.shape))
	for i := range t.shape {
		if i != d {
			perm = append(perm, i)
		}
	}
	p, err := t.Permute(append(perm, d)...)
	if err != nil {
		return nil, err
	}
	shape := p.shape[:len(p.shape)-1]
	out, err := newTensor(t.st.led, t.st.dtype, shape, t.st.meta, op)
	if err != nil || t.st.meta {
		return out, err
	}
	n := p.shape[len(p.shape)-1]
	i := 0
	eachIndex(shape, [][]int{p.strides[:len(shape)]}, []int{p.offset}, func(offs []int) {
		var s float64
		for j := 0; j < n; j++ {
			s += float64(p.st.load(offs[0] + j*p.strides[len(shape)]))
		}
		out.st.store(i, float32(s))
		i++
	})
	return out, nil
}
