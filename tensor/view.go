package tensor

import "slices"

// This file holds the view ops: each one rewrites (shape, strides, offset)
// and shares the storage, so it costs O(ndim) whatever the numel, and
// copies 0 bytes.

func (t *Tensor) with(shape, strides []int, offset int) *Tensor {
	return &Tensor{st: t.st, shape: shape, strides: strides, offset: offset}
}

// inferSize resolves one -1 in shape against numel, with PyTorch's errors.
func inferSize(op string, shape []int, numel int) ([]int, error) {
	out := append([]int(nil), shape...)
	infer := -1
	prod := 1
	for i, s := range shape {
		switch {
		case s == -1:
			if infer >= 0 {
				return nil, errorf(op, "only one dimension can be inferred (shape %s)", FormatInts(shape))
			}
			infer = i
		case s < 0:
			return nil, errorf(op, "invalid shape dimension %d in shape %s", s, FormatInts(shape))
		default:
			if s != 0 && prod > maxNumel/s {
				return nil, errorf(op, "shape '%s' is invalid for input of size %d", FormatInts(shape), numel)
			}
			prod *= s
		}
	}
	if infer >= 0 {
		if prod == 0 {
			return nil, errorf(op, "cannot reshape tensor of %d elements into shape %s because the unspecified dimension size -1 can be any value and is ambiguous", numel, FormatInts(shape))
		}
		if numel%prod != 0 {
			return nil, errorf(op, "shape '%s' is invalid for input of size %d", FormatInts(shape), numel)
		}
		out[infer] = numel / prod
		return out, nil
	}
	if prod != numel {
		return nil, errorf(op, "shape '%s' is invalid for input of size %d", FormatInts(shape), numel)
	}
	return out, nil
}

// ComputeViewStrides is PyTorch's computeStride: the strides that let a
// tensor of (oldShape, oldStrides) be viewed as newShape without a copy, or
// ok=false when no such strides exist. It walks the old dims right to left,
// grouping them into chunks that are contiguous with each other (dim d-1's
// stride equals size·stride of the chunk so far); each chunk must be covered
// exactly by a run of new dims, which then get strides inside that chunk.
func ComputeViewStrides(oldShape, oldStrides, newShape []int) (strides []int, ok bool) {
	numel := 1
	for _, s := range oldShape {
		numel *= s
	}
	if len(oldShape) == 0 {
		st := make([]int, len(newShape))
		for i := range st {
			st[i] = 1
		}
		return st, true
	}
	if numel == 0 {
		if slices.Equal(oldShape, newShape) {
			return append([]int(nil), oldStrides...), true
		}
		return ContiguousStrides(newShape), true
	}
	newStrides := make([]int, len(newShape))
	viewD := len(newShape) - 1
	chunkBase := oldStrides[len(oldStrides)-1]
	tensorNumel, viewNumel := 1, 1
	for td := len(oldShape) - 1; td >= 0; td-- {
		tensorNumel *= oldShape[td]
		if td == 0 || (oldShape[td-1] != 1 && oldStrides[td-1] != tensorNumel*chunkBase) {
			for viewD >= 0 && (viewNumel < tensorNumel || newShape[viewD] == 1) {
				newStrides[viewD] = viewNumel * chunkBase
				viewNumel *= newShape[viewD]
				viewD--
			}
			if viewNumel != tensorNumel {
				return nil, false
			}
			if td > 0 {
				chunkBase = oldStrides[td-1]
				tensorNumel, viewNumel = 1, 1
			}
		}
	}
	if viewD != -1 {
		return nil, false
	}
	return newStrides, true
}

// View returns a tensor with the given shape sharing t's storage. One size
// may be -1 (inferred). It fails, as PyTorch's view does, when the new
// shape would need a dim to span two non-contiguous chunks of memory; use
// Reshape then.
func (t *Tensor) View(shape ...int) (*Tensor, error) {
	shape, err := inferSize("view", shape, t.Numel())
	if err != nil {
		return nil, err
	}
	st, ok := ComputeViewStrides(t.shape, t.strides, shape)
	if !ok {
		return nil, errorf("view", "view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead. (size %s, stride %s, requested %s)",
			FormatInts(t.shape), FormatInts(t.strides), FormatInts(shape))
	}
	return t.with(shape, st, t.offset), nil
}

// Reshape returns View(shape) when that succeeds, and otherwise a
// contiguous copy viewed as shape. SharesStorage(t, result) tells which
// happened; the copy, if any, is recorded in t's Ledger.
func (t *Tensor) Reshape(shape ...int) (*Tensor, error) {
	shape, err := inferSize("reshape", shape, t.Numel())
	if err != nil {
		return nil, err
	}
	if st, ok := ComputeViewStrides(t.shape, t.strides, shape); ok {
		return t.with(shape, st, t.offset), nil
	}
	c, err := t.Clone()
	if err != nil {
		return nil, err
	}
	return c.with(shape, ContiguousStrides(shape), 0), nil
}

// Flatten views (or, like Reshape, copies) t as 1-D.
func (t *Tensor) Flatten() (*Tensor, error) { return t.Reshape(-1) }

// Transpose swaps dims d0 and d1 by swapping their sizes and strides.
func (t *Tensor) Transpose(d0, d1 int) (*Tensor, error) {
	a, err := wrapDimOf("transpose", d0, t.shape)
	if err != nil {
		return nil, err
	}
	b, err := wrapDimOf("transpose", d1, t.shape)
	if err != nil {
		return nil, err
	}
	shape, strides := t.Shape(), t.Strides()
	if len(shape) == 0 {
		return t.with(shape, strides, t.offset), nil
	}
	shape[a], shape[b] = shape[b], shape[a]
	strides[a], strides[b] = strides[b], strides[a]
	return t.with(shape, strides, t.offset), nil
}

// T is PyTorch's t(): the transpose of a tensor of at most 2 dims.
func (t *Tensor) T() (*Tensor, error) {
	if len(t.shape) > 2 {
		return nil, errorf("t", "t() expects a tensor with <= 2 dimensions, but self is %dD (shape %s)", len(t.shape), FormatInts(t.shape))
	}
	if len(t.shape) < 2 {
		return t.with(t.Shape(), t.Strides(), t.offset), nil
	}
	return t.Transpose(0, 1)
}

// Permute reorders the dims: result dim i is t's dim dims[i].
func (t *Tensor) Permute(dims ...int) (*Tensor, error) {
	if len(dims) != len(t.shape) {
		return nil, errorf("permute", "number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = %d is not equal to len(dims) = %d (shape %s, dims %s)", len(t.shape), len(dims), FormatInts(t.shape), FormatInts(dims))
	}
	seen := make([]bool, len(dims))
	shape := make([]int, len(dims))
	strides := make([]int, len(dims))
	for i, d := range dims {
		w, err := wrapDimOf("permute", d, t.shape)
		if err != nil {
			return nil, err
		}
		if seen[w] {
			return nil, errorf("permute", "duplicate dims are not allowed (dims %s, shape %s)", FormatInts(dims), FormatInts(t.shape))
		}
		seen[w] = true
		shape[i], strides[i] = t.shape[w], t.strides[w]
	}
	return t.with(shape, strides, t.offset), nil
}

// Slice is Python's t[..., start:end:step, ...] on dim: negative start and
// end count from the end, both are clamped to [0, size] as Python does,
// and step must be positive. The view starts start·stride further into the
// storage and steps by stride·step.
func (t *Tensor) Slice(dim, start, end, step int) (*Tensor, error) {
	d, err := wrapDimOf("slice", dim, t.shape)
	if err != nil {
		return nil, err
	}
	if len(t.shape) == 0 {
		return nil, errorf("slice", "slice() cannot be applied to a 0-dim tensor.")
	}
	if step <= 0 {
		return nil, errorf("slice", "slice step must be positive (got %d) for a tensor of shape %s", step, FormatInts(t.shape))
	}
	size := t.shape[d]
	clamp := func(i int) int {
		if i < 0 {
			i += size
		}
		return min(max(i, 0), size)
	}
	start, end = clamp(start), clamp(end)
	n := 0
	if end > start {
		n = (end-start-1)/step + 1 // ⌈(end−start)/step⌉ without overflow
	}
	shape, strides := t.Shape(), t.Strides()
	// PyTorch moves the offset by start·stride even when the slice is
	// empty (start is clamped to the size first): empty(5,3)[7:9] has
	// storage_offset 15.
	offset := t.offset + start*t.strides[d]
	shape[d] = n
	if st := strides[d]; st != 0 && step > maxNumel/st {
		return nil, errorf("slice", "slice step %d times stride %d overflows for a tensor of shape %s", step, st, FormatInts(t.shape))
	}
	strides[d] *= step
	return t.with(shape, strides, offset), nil
}

// Narrow returns length elements of dim starting at start (negative start
// counts from the end). Unlike Slice, a range past the end is an error.
func (t *Tensor) Narrow(dim, start, length int) (*Tensor, error) {
	d, err := wrapDimOf("narrow", dim, t.shape)
	if err != nil {
		return nil, err
	}
	if len(t.shape) == 0 {
		return nil, errorf("narrow", "narrow() cannot be applied to a 0-dim tensor.")
	}
	size := t.shape[d]
	if start < -size || start > size {
		return nil, errorf("narrow", "start out of range (expected to be in range of [%d, %d], but got %d) at dimension %d of shape %s", -size, size, start, d, FormatInts(t.shape))
	}
	if start < 0 {
		start += size
	}
	if length < 0 {
		return nil, errorf("narrow", "narrow(): length must be non-negative (got %d) for a tensor of shape %s", length, FormatInts(t.shape))
	}
	if start+length > size {
		return nil, errorf("narrow", "start (%d) + length (%d) exceeds dimension size (%d). (dimension %d of shape %s)", start, length, size, d, FormatInts(t.shape))
	}
	shape, strides := t.Shape(), t.Strides()
	shape[d] = length
	return t.with(shape, strides, t.offset+start*t.strides[d]), nil
}

// Select removes dim, keeping index i of it (negative i counts from the
// end): the offset moves by i·stride[dim].
func (t *Tensor) Select(dim, i int) (*Tensor, error) {
	if len(t.shape) == 0 {
		return nil, errorf("select", "select() cannot be applied to a 0-dim tensor.")
	}
	d, err := wrapDimOf("select", dim, t.shape)
	if err != nil {
		return nil, err
	}
	size := t.shape[d]
	if i < -size || i >= size {
		return nil, errorf("select", "select(): index %d out of range for tensor of size %s at dimension %d", i, FormatInts(t.shape), d)
	}
	if i < 0 {
		i += size
	}
	shape := append(t.Shape()[:d:d], t.shape[d+1:]...)
	strides := append(t.Strides()[:d:d], t.strides[d+1:]...)
	return t.with(shape, strides, t.offset+i*t.strides[d]), nil
}

// Expand broadcasts size-1 dims (and new leading dims) to the given sizes
// by giving them stride 0: every index along them reads the same element.
// A new leading dim of size 1 is not broadcast and keeps a real stride.
// -1 keeps a dim's size. No memory is allocated, whatever the target size.
func (t *Tensor) Expand(sizes ...int) (*Tensor, error) {
	nd, nt := len(sizes), len(t.shape)
	if nd < nt {
		return nil, errorf("expand", "the number of sizes provided (%d) must be greater or equal to the number of dimensions in the tensor (%d).  Target sizes: %s.  Tensor sizes: %s", nd, nt, FormatInts(sizes), FormatInts(t.shape))
	}
	shape := make([]int, nd)
	strides := make([]int, nd)
	for i := nd - 1; i >= 0; i-- {
		off := nt - nd + i
		want := sizes[i]
		if off < 0 {
			if want < 0 {
				return nil, errorf("expand", "The expanded size of the tensor (%d) isn't allowed in a leading, non-existing dimension %d.  Target sizes: %s.  Tensor sizes: %s", want, i, FormatInts(sizes), FormatInts(t.shape))
			}
			// PyTorch's inferExpandGeometry: a new leading dim of size 1
			// gets size·stride of the dim after it (as unsqueeze would);
			// only a dim really broadcast, or any dim of a 0-d input, gets
			// stride 0.
			shape[i] = want
			if want == 1 && nt > 0 {
				strides[i] = shape[i+1] * strides[i+1]
			}
			continue
		}
		have := t.shape[off]
		if want == -1 {
			want = have
		}
		if want < 0 {
			return nil, errorf("expand", "The expanded size of the tensor (%d) is negative at dimension %d.  Target sizes: %s.  Tensor sizes: %s", want, i, FormatInts(sizes), FormatInts(t.shape))
		}
		switch {
		case have == want:
			shape[i], strides[i] = have, t.strides[off]
		case have == 1:
			shape[i], strides[i] = want, 0
		default:
			return nil, errorf("expand", "The expanded size of the tensor (%d) must match the existing size (%d) at non-singleton dimension %d.  Target sizes: %s.  Tensor sizes: %s",
				want, have, i, FormatInts(sizes), FormatInts(t.shape))
		}
	}
	if _, err := numelOf("expand", shape); err != nil {
		return nil, err
	}
	return t.with(shape, strides, t.offset), nil
}

// ExpandAs expands t to other's shape.
func (t *Tensor) ExpandAs(other *Tensor) (*Tensor, error) { return t.Expand(other.shape...) }

// Squeeze removes the given dims if they have size 1 (a dim of another
// size is left as is, as in PyTorch); with no dims it removes every size-1
// dim.
func (t *Tensor) Squeeze(dims ...int) (*Tensor, error) {
	drop := make([]bool, len(t.shape))
	if len(dims) == 0 {
		for i, s := range t.shape {
			drop[i] = s == 1
		}
	}
	for _, d := range dims {
		w, err := wrapDimOf("squeeze", d, t.shape)
		if err != nil {
			return nil, err
		}
		if len(t.shape) > 0 && t.shape[w] == 1 {
			drop[w] = true
		}
	}
	var shape, strides []int
	for i := range t.shape {
		if !drop[i] {
			shape = append(shape, t.shape[i])
			strides = append(strides, t.strides[i])
		}
	}
	if shape == nil {
		shape, strides = []int{}, []int{}
	}
	return t.with(shape, strides, t.offset), nil
}

// Unsqueeze inserts a size-1 dim at position dim (in [-ndim-1, ndim]). Its
// stride follows PyTorch: size·stride of the dim it is inserted before, or
// 1 when appended last, so the result stays contiguous when t was.
func (t *Tensor) Unsqueeze(dim int) (*Tensor, error) {
	nd := len(t.shape)
	if dim < -nd-1 || dim > nd {
		return nil, errorf("unsqueeze", "Dimension out of range (expected to be in range of [%d, %d], but got %d) for a tensor of shape %s", -nd-1, nd, dim, FormatInts(t.shape))
	}
	if dim < 0 {
		dim += nd + 1
	}
	st := 1
	if dim < nd {
		st = t.shape[dim] * t.strides[dim]
	}
	shape := append(append(t.Shape()[:dim:dim], 1), t.shape[dim:]...)
	strides := append(append(t.Strides()[:dim:dim], st), t.strides[dim:]...)
	return t.with(shape, strides, t.offset), nil
}

// Unfold returns every window of size elements along dim, stepping by
// step: dim shrinks to (size_d − size)/step + 1 with stride·step, and a new
// last dim of length size reads with the old stride. Windows overlap in
// memory when step < size; nothing is copied.
func (t *Tensor) Unfold(dim, size, step int) (*Tensor, error) {
	d, err := wrapDimOf("unfold", dim, t.shape)
	if err != nil {
		return nil, err
	}
	dimSize, dimStride := 1, 1
	if len(t.shape) > 0 {
		dimSize, dimStride = t.shape[d], t.strides[d]
	}
	if size < 0 {
		return nil, errorf("unfold", "size is %d but must be >= 0 (shape %s)", size, FormatInts(t.shape))
	}
	if size > dimSize {
		return nil, errorf("unfold", "maximum size for tensor at dimension %d is %d but size is %d (shape %s)", d, dimSize, size, FormatInts(t.shape))
	}
	if step <= 0 {
		return nil, errorf("unfold", "step is %d but must be > 0 (shape %s)", step, FormatInts(t.shape))
	}
	shape := append(t.Shape(), size)
	strides := append(t.Strides(), dimStride)
	if len(t.shape) > 0 {
		shape[d] = (dimSize-size)/step + 1
		strides[d] = dimStride * step
	} else {
		shape, strides = []int{size}, []int{1}
	}
	return t.with(shape, strides, t.offset), nil
}
