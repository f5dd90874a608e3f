package tensor

import "fmt"

// This file holds the reductions: Argmax over a 1-D tensor and SumDim
// over any one dim.

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
