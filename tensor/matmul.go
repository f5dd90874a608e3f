package tensor

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

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
func Matmul(a, b *Tensor) (*Tensor, error) {
	const op = "matmul"
	if err := checkOperands(op, a, b); err != nil {
		return nil, err
	}
	p, err := planMatmul(op, a, b)
	if err != nil {
		return nil, err
	}
	meta := a.st.meta || b.st.meta
	out, err := newTensor(a.st.led, F32, append(append([]int(nil), p.batch...), p.m, p.n), meta, op)
	if err != nil {
		return nil, err
	}
	out = out.with(p.final, ContiguousStrides(p.final), 0)
	if meta || p.m == 0 || p.n == 0 || p.k == 0 {
		return out, nil // k == 0: the sum over nothing is the zeros out holds
	}
	if err := p.gemm(op, out); err != nil {
		return nil, err
	}
	return out, nil
}

// matmulPlan is the shape of one Matmul: a2 @ b2 are the operands with a
// 1-D a promoted to a [1,K] row and a 1-D b to a [K,1] column, batch is
// their broadcast leading dims, each batch an [m,k]@[k,n] product, and
// final is the result shape with the promoted dims dropped again.
type matmulPlan struct {
	a, b    *Tensor // the operands as given, for error messages
	a2, b2  *Tensor
	m, k, n int
	batch   []int
	final   []int
}

// planMatmul checks a and b against torch.matmul's shape rules and
// returns the plan of their product.
func planMatmul(op string, a, b *Tensor) (*matmulPlan, error) {
	if a.Dim() == 0 || b.Dim() == 0 {
		return nil, errorf(op, "both arguments to matmul need to be at least 1D, but they are %dD and %dD", a.Dim(), b.Dim())
	}
	p := &matmulPlan{a: a, b: b, a2: a, b2: b}
	dropM, dropN := a.Dim() == 1, b.Dim() == 1
	if dropM {
		p.a2 = a.with([]int{1, a.shape[0]}, []int{a.shape[0] * a.strides[0], a.strides[0]}, a.offset)
	}
	if dropN {
		p.b2 = b.with([]int{b.shape[0], 1}, []int{b.strides[0], 1}, b.offset)
	}
	na, nb := p.a2.Dim(), p.b2.Dim()
	m, k := p.a2.shape[na-2], p.a2.shape[na-1]
	k2, n := p.b2.shape[nb-2], p.b2.shape[nb-1]
	if k != k2 {
		return nil, errorf(op, "mat1 and mat2 shapes cannot be multiplied (%dx%d and %dx%d) (operands of shape %s and %s)",
			m, k, k2, n, FormatInts(a.shape), FormatInts(b.shape))
	}
	p.m, p.k, p.n = m, k, n
	batch, err := broadcastShapes(op, p.a2.shape[:na-2], p.b2.shape[:nb-2])
	if err != nil {
		return nil, err
	}
	p.batch = batch
	p.final = append([]int(nil), batch...)
	if !dropM {
		p.final = append(p.final, p.m)
	}
	if !dropN {
		p.final = append(p.final, p.n)
	}
	return p, nil
}

// gemm computes the plan into out's storage (contiguous [batch..., m, n]):
// each operand is brought to a BLAS-readable layout (gemmOperand), expanded
// over the broadcast batch, and every batch's matrices go to one
// blas32.Gemm starting at offset + Σ idx_k·batch_stride_k.
func (p *matmulPlan) gemm(op string, out *Tensor) (err error) {
	m, k, n, batch := p.m, p.k, p.n, p.batch
	pa, tmpA, err := gemmOperand(p.a2)
	if err != nil {
		return err
	}
	if tmpA {
		defer pa.Release()
	}
	pb, tmpB, err := gemmOperand(p.b2)
	if err != nil {
		return err
	}
	if tmpB {
		defer pb.Release()
	}
	ae, err := pa.Expand(append(append([]int(nil), batch...), m, k)...)
	if err != nil {
		return err
	}
	be, err := pb.Expand(append(append([]int(nil), batch...), k, n)...)
	if err != nil {
		return err
	}
	nbat := len(batch)
	transA, lda, _ := gemmLayout(m, k, ae.strides[nbat], ae.strides[nbat+1])
	transB, ldb, _ := gemmLayout(k, n, be.strides[nbat], be.strides[nbat+1])
	// A BLAS panic here would be a bug in the layout logic above; turn it
	// into an error rather than let it escape.
	defer func() {
		if r := recover(); r != nil {
			err = errorf(op, "gemm failed on operands %v and %v: %v", p.a, p.b, r)
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
	return nil
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
