package tensor

// This file holds the ops that duplicate data into new memory: Repeat and
// RepeatInterleave. Unlike Expand, whose stride-0 dims cost no bytes, each
// of them allocates its result and records one copy of the result's bytes
// in the Ledger. Both are written as a single strided
// copy from a stride-0 view of the input into a reshaped view of the
// output, so the layout math is the whole algorithm.

// Repeat tiles t: dim i of the result is reps[i]·size_i (PyTorch's
// Tensor.repeat). reps may be longer than t.Dim(); t then gets leading
// size-1 dims first. The result is always a new contiguous tensor, even
// when every rep is 1: [1,2,3].Repeat(4,1) occupies 48 bytes where
// Expand(4,3) occupies the original 12.
//
// Layout trick: for each dim the output, viewed as (reps_i, size_i), is
// the input expanded along a new stride-0 dim of length reps_i in front
// of dim i. One copy of that expanded view into the output viewed as
// (reps_0, size_0, reps_1, size_1, …) fills every tile.
func (t *Tensor) Repeat(reps ...int) (*Tensor, error) {
	nd := len(reps)
	if nd < len(t.shape) {
		return nil, errorf("repeat", "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor (repeats %s, shape %s)", FormatInts(reps), FormatInts(t.shape))
	}
	for _, r := range reps {
		if r < 0 {
			return nil, errorf("repeat", "Trying to create tensor with negative dimension %d: repeats %s, shape %s", r, FormatInts(reps), FormatInts(t.shape))
		}
	}
	// Pad t with leading size-1 dims up to len(reps).
	lead := nd - len(t.shape)
	padShape := make([]int, nd)
	padStrides := make([]int, nd)
	for i := range nd {
		if i < lead {
			padShape[i], padStrides[i] = 1, 0
		} else {
			padShape[i], padStrides[i] = t.shape[i-lead], t.strides[i-lead]
		}
	}
	outShape := make([]int, nd)
	pairShape := make([]int, 0, 2*nd)
	pairStrides := make([]int, 0, 2*nd)
	for i := range nd {
		if reps[i] != 0 && padShape[i] > maxNumel/reps[i] {
			return nil, errorf("repeat", "repeats %s of shape %s overflow the element count", FormatInts(reps), FormatInts(t.shape))
		}
		outShape[i] = reps[i] * padShape[i]
		pairShape = append(pairShape, reps[i], padShape[i])
		pairStrides = append(pairStrides, 0, padStrides[i])
	}
	if _, err := numelOf("repeat", outShape); err != nil {
		return nil, errorf("repeat", "repeats %s of shape %s give more than 2^53 elements", FormatInts(reps), FormatInts(t.shape))
	}
	return t.duplicate("repeat", outShape, pairShape, pairStrides)
}

// RepeatInterleave repeats each element of t along dim `repeats` times in
// place (PyTorch's repeat_interleave with an int): [a,b].RepeatInterleave(2,0)
// is [a,a,b,b], and dim grows from size to size·repeats. It is how a GQA
// model materializes its KV heads as many times as there are query heads,
// the copy a GQA-aware kernel avoids. A 0-dim t is treated as shape [1].
// On a meta tensor the result is a meta tensor of the result's layout.
//
// Layout trick: the output viewed as (…, size, repeats, …) is the input
// with a stride-0 dim of length repeats inserted after dim.
func (t *Tensor) RepeatInterleave(repeats, dim int) (*Tensor, error) {
	src := t
	if len(t.shape) == 0 {
		src = t.with([]int{1}, []int{1}, t.offset)
	}
	d, err := wrapDimOf("repeat_interleave", dim, src.shape)
	if err != nil {
		return nil, err
	}
	if repeats < 0 {
		return nil, errorf("repeat_interleave", "repeats can not be negative (got %d) for a tensor of shape %s", repeats, FormatInts(t.shape))
	}
	size := src.shape[d]
	if repeats != 0 && size > maxNumel/repeats {
		return nil, errorf("repeat_interleave", "repeats %d of dim %d of shape %s overflow the element count", repeats, d, FormatInts(t.shape))
	}
	outShape := src.Shape()
	outShape[d] = size * repeats
	pairShape := append(append(src.Shape()[:d+1:d+1], repeats), src.shape[d+1:]...)
	pairStrides := append(append(src.Strides()[:d+1:d+1], 0), src.strides[d+1:]...)
	return src.duplicate("repeat_interleave", outShape, pairShape, pairStrides)
}

// duplicate allocates a contiguous tensor of outShape and fills it with
// one strided copy: t's storage read as (pairShape, pairStrides, t.offset)
// written into the output read as pairShape row-major. The two shapes have
// the same element count, and pairShape's row-major order is outShape's.
func (t *Tensor) duplicate(op string, outShape, pairShape, pairStrides []int) (*Tensor, error) {
	if _, err := numelOf(op, pairShape); err != nil {
		return nil, err
	}
	out, err := newTensor(t.st.led, t.st.dtype, outShape, t.st.meta, op)
	if err != nil {
		return nil, err
	}
	if t.st.meta {
		return out, nil
	}
	src := t.with(pairShape, pairStrides, t.offset)
	dst := out.with(pairShape, ContiguousStrides(pairShape), 0)
	copyStrided(dst, src)
	out.st.led.RecordCopy(int64(out.Nbytes()))
	return out, nil
}
