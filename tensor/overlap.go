package tensor

import "slices"

// This file holds the predicates on a layout's memory footprint: whether
// its elements overlap (in-place writers refuse that), tile storage
// densely (one memcpy copies them) or are stored channels-last.

// overlapEnumLimit bounds the element count Overlaps enumerates when the
// quick stride test cannot decide.
const overlapEnumLimit = 1 << 20

// Overlaps reports whether two distinct indices of t address the same
// storage element (a stride-0 or overlapping unfold layout).
//
// The quick test sorts the dims by stride and checks that each stride
// clears the extent of the dims below it; passing it proves there is no
// overlap. Failing it does not prove overlap: sizes [n,3] with strides
// [3,2] (unfold(0,5,3) then [:, ::2]) reach distinct offsets 3i+2j though
// 3 < 2·2+1. So unless a size>1 dim has stride 0, a failed quick test is
// settled by enumerating the offsets; beyond overlapEnumLimit elements
// Overlaps answers true, the safe answer for an in-place writer.
func (t *Tensor) Overlaps() bool {
	if t.Numel() == 0 {
		return false
	}
	type ds struct{ size, stride int }
	var dims []ds
	for i, s := range t.shape {
		if s > 1 {
			if t.strides[i] == 0 {
				return true
			}
			dims = append(dims, ds{s, t.strides[i]})
		}
	}
	// insertion sort by stride: ndim is tiny
	for i := 1; i < len(dims); i++ {
		for j := i; j > 0 && dims[j].stride < dims[j-1].stride; j-- {
			dims[j], dims[j-1] = dims[j-1], dims[j]
		}
	}
	extent := 1 // elements spanned by the dims so far, plus one
	quick := true
	for _, d := range dims {
		if d.stride < extent {
			quick = false
			break
		}
		extent = d.stride*(d.size-1) + extent
	}
	if quick {
		return false
	}
	if t.Numel() > overlapEnumLimit {
		return true
	}
	offs := make([]int, 0, t.Numel())
	forEachOffset(t.shape, t.strides, 0, func(o int) { offs = append(offs, o) })
	slices.Sort(offs)
	for i := 1; i < len(offs); i++ {
		if offs[i] == offs[i-1] {
			return true
		}
	}
	return false
}

// CheckNoOverlap returns an error naming op when t's elements overlap in
// memory, for in-place ops that would otherwise write one location many
// times.
func (t *Tensor) CheckNoOverlap(op string) error {
	if t.Overlaps() {
		return errorf(op, "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation. (size %s, stride %s)", FormatInts(t.shape), FormatInts(t.strides))
	}
	return nil
}

// IsNonOverlappingAndDense reports whether t's elements tile a contiguous
// range of storage exactly once in some dim order (a permutation of a
// contiguous tensor, channels-last included): such a tensor can be copied
// with one memcpy.
func (t *Tensor) IsNonOverlappingAndDense() bool {
	if t.Numel() <= 1 {
		return true
	}
	idx := make([]int, len(t.shape))
	for i := range idx {
		idx[i] = i
	}
	for i := 1; i < len(idx); i++ {
		for j := i; j > 0; j-- {
			a, b := idx[j], idx[j-1]
			if t.strides[a] < t.strides[b] || (t.strides[a] == t.strides[b] && t.shape[a] < t.shape[b]) {
				idx[j], idx[j-1] = b, a
			} else {
				break
			}
		}
	}
	expected := 1
	for _, d := range idx {
		if t.shape[d] == 1 {
			continue
		}
		if t.strides[d] != expected {
			return false
		}
		expected *= t.shape[d]
	}
	return true
}

// ChannelsLastStrides returns the strides of a 4-D NCHW shape stored as
// NHWC: C is innermost, then W, then H, then N. [2,3,32,32] → (3072,1,96,3).
// It is PyTorch's get_channels_last_strides_2d, sizes used as they are: a
// size-0 dim zeroes the strides outside it ([2,0,6,1] → (0,1,0,0)).
func ChannelsLastStrides(shape []int) ([]int, error) {
	if len(shape) != 4 {
		return nil, errorf("channels_last", "ChannelsLast format requires a 4-D shape, got %s", FormatInts(shape))
	}
	st := make([]int, 4)
	st[1] = 1
	st[3] = shape[1]
	st[2] = st[3] * shape[3]
	st[0] = st[2] * shape[2]
	return st, nil
}

// IsChannelsLast reports whether a 4-D tensor has channels-last strides
// (PyTorch's is_contiguous(memory_format=torch.channels_last)): walking
// C, W, H, N, every dim of size != 1 has the running stride. Unlike
// IsContiguous there is no shortcut for empty tensors, as in PyTorch 1.13.
func (t *Tensor) IsChannelsLast() bool {
	if len(t.shape) != 4 {
		return false
	}
	expected := 1
	for _, d := range []int{1, 3, 2, 0} {
		if t.shape[d] == 1 {
			continue
		}
		if t.strides[d] != expected {
			return false
		}
		expected *= t.shape[d]
	}
	return true
}
