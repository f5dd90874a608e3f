package tensor

// The strided math of attention's naive path (Matmul, ScaleInPlace,
// SoftmaxLastDimInPlace) lives in this package's matmul.go,
// elementwise.go and softmax.go; the rest of a Llama layer runs on flat
// rows in tensor/kernels. Every operand is read through its (shape,
// strides, offset), so a transposed or sliced view costs nothing to pass
// in; Matmul's result is a new contiguous tensor in the first operand's
// Ledger. Computation is in float32 whatever the storage dtype, as in
// llama2.c. On meta operands the ops return a meta result of the right
// shape (or do nothing in place), so a [2,32,4096,4096] attention can be
// traced for free.
//
// This file holds what they share: the strided walkers eachIndex and
// eachRow, and the operand checks.

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

func checkOperands(op string, ts ...*Tensor) error {
	for i, t := range ts {
		if t == nil || t.st == nil {
			return errorf(op, "operand %d is nil", i)
		}
	}
	return nil
}

func lastDim(t *Tensor) int {
	if len(t.shape) == 0 {
		return 1
	}
	return t.shape[len(t.shape)-1]
}
