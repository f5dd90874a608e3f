package layoutexpr

import (
	"fmt"

	"github.com/stride-lm/stride/tensor"
)

// The ops that copy (contiguous, clone, to and the dtype shorthands,
// repeat, repeat_interleave) and the ones that return a tuple of views
// (split, chunk, unbind).

func repeatOp(c *callCtx) (any, error) {
	s, err := c.sizes("repeats")
	if err != nil {
		return nil, err
	}
	return c.x.Repeat(s...)
}

// contiguousOp is contiguous(memory_format=torch.contiguous_format): the
// input itself when it already is contiguous in that format, else a copy.
func contiguousOp(c *callCtx) (any, error) {
	if err := c.bind(nil, "memory_format"); err != nil {
		return nil, err
	}
	mf, err := c.memFormat("memory_format", contiguousFormat)
	if err != nil {
		return nil, err
	}
	x := c.x
	switch mf {
	case preserveFormat:
		return nil, fmt.Errorf("preserve memory format is unsupported by the contiguous operator")
	case channelsLast:
		if x.Dim() != 4 {
			return nil, fmt.Errorf("required rank 4 tensor to use channels_last format")
		}
		if channelsLastContiguous(x.Shape(), x.Strides()) {
			return x, nil
		}
	default:
		if x.IsContiguous() {
			return x, nil
		}
	}
	return copyAs(x, x.DType(), mf)
}

// copyAs is the layout of a copy of x in dtype dt and memory format mf
// (PyTorch's empty_like/empty_strided rules for clone and to):
// preserve_format keeps x's strides when x is non-overlapping and dense,
// and otherwise the dense strides of the same dim order.
func copyAs(x *tensor.Tensor, dt tensor.DType, mf memFormat) (*tensor.Tensor, error) {
	shape := x.Shape()
	switch mf {
	case channelsLast:
		if x.Dim() != 4 {
			return nil, fmt.Errorf("required rank 4 tensor to use channels_last format")
		}
		return newMeta("clone", dt, shape, channelsLastStrides(shape))
	case preserveFormat:
		if nonOverlappingAndDense(shape, x.Strides()) {
			return newMeta("clone", dt, shape, x.Strides())
		}
		return newMeta("clone", dt, shape, inferDenseStrides(shape, x.Strides()))
	}
	return newMeta("clone", dt, shape, nil)
}

func cloneOp(c *callCtx) (any, error) {
	if err := c.bind(nil, "memory_format"); err != nil {
		return nil, err
	}
	mf, err := c.memFormat("memory_format", preserveFormat)
	if err != nil {
		return nil, err
	}
	return copyAs(c.x, c.x.DType(), mf)
}

// toOp is to(dtype) or to(dtype=..., memory_format=...): the input itself
// when nothing changes, else a copy (preserve_format by default).
func toOp(c *callCtx) (any, error) {
	if err := c.bind([]string{"dtype", "non_blocking", "copy"}, "memory_format"); err != nil {
		return nil, err
	}
	dt, err := c.dtype("dtype", c.x.DType())
	if err != nil {
		return nil, err
	}
	mf, err := c.memFormat("memory_format", preserveFormat)
	if err != nil {
		return nil, err
	}
	cp := false
	if v, ok := c.b["copy"].(bool); ok {
		cp = v
	}
	if dt == c.x.DType() && !cp && (mf == preserveFormat || suggestMemoryFormat(c.x.Shape(), c.x.Strides()) == mf) {
		return c.x, nil // to_will_alias
	}
	return copyAs(c.x, dt, mf)
}

// suggestMemoryFormat is PyTorch's suggest_memory_format for a strided
// tensor: channels_last when a 4-d tensor's strides are ordered like
// channels-last (is_channels_last_strides_2d), else contiguous_format.
func suggestMemoryFormat(shape, strides []int) memFormat {
	if len(shape) != 4 || strides[1] == 0 {
		return contiguousFormat
	}
	lo := 0
	for _, d := range []int{1, 3, 2, 0} {
		if shape[d] == 0 || strides[d] < lo || (d == 0 && lo == strides[1]) {
			return contiguousFormat
		}
		lo = strides[d]
		if shape[d] > 1 {
			lo *= shape[d]
		}
	}
	return channelsLast
}

func convert(dt tensor.DType) method {
	return func(c *callCtx) (any, error) {
		if err := c.bind(nil, "memory_format"); err != nil {
			return nil, err
		}
		mf, err := c.memFormat("memory_format", preserveFormat)
		if err != nil {
			return nil, err
		}
		if dt == c.x.DType() && mf == preserveFormat {
			return c.x, nil
		}
		return copyAs(c.x, dt, mf)
	}
}

// splitOp is split(split_size_or_sections, dim=0): narrows of split_size
// (the last one shorter), or of the listed sizes.
func splitOp(c *callCtx) (any, error) {
	if err := c.bind([]string{"split_size", "dim"}); err != nil {
		return nil, err
	}
	d0, err := c.int("dim", intp(0))
	if err != nil {
		return nil, err
	}
	x := c.x
	if x.Dim() == 0 {
		return nil, fmt.Errorf("split expects at least a 1-dimensional tensor")
	}
	d, err := wrapDim(d0, x.Dim())
	if err != nil {
		return nil, err
	}
	size, _ := x.Size(d)
	v, ok := c.b["split_size"]
	if !ok {
		return nil, c.missing("split_size")
	}
	if tup, isTup := v.(*tupleVal); isTup {
		sizes, err := c.intsOf("split_size", tup)
		if err != nil {
			return nil, err
		}
		return splitSizes(x, sizes, d, size)
	}
	n, err := c.int("split_size", nil)
	if err != nil {
		return nil, err
	}
	return splitEven(x, n, d, size)
}

func splitSizes(x *tensor.Tensor, sizes []int, d, size int) ([]*tensor.Tensor, error) {
	sum := 0
	for _, s := range sizes {
		if s < 0 {
			return nil, fmt.Errorf("split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=%s", tensor.FormatInts(sizes))
		}
		sum += s
	}
	if sum != size {
		return nil, fmt.Errorf("split_with_sizes expects split_sizes to sum exactly to %d (input tensor's size at dimension %d), but got split_sizes=%s", size, d, tensor.FormatInts(sizes))
	}
	out := make([]*tensor.Tensor, len(sizes))
	start := 0
	for i, s := range sizes {
		t, err := x.Narrow(d, start, s)
		if err != nil {
			return nil, err
		}
		out[i], start = t, start+s
	}
	return out, nil
}

func splitEven(x *tensor.Tensor, n, d, size int) ([]*tensor.Tensor, error) {
	if n < 0 {
		return nil, fmt.Errorf("split expects split_size be non-negative, but got split_size=%d", n)
	}
	if n == 0 && size != 0 {
		return nil, fmt.Errorf("split_size can only be 0 if dimension size is 0, but got dimension size of %d", size)
	}
	num := 1
	if n != 0 {
		num = max((size+n-1)/n, 1)
	}
	if num > MaxRows {
		return nil, fmt.Errorf("split would make %d tensors (more than %d)", num, MaxRows)
	}
	out := make([]*tensor.Tensor, num)
	last := n - (n*num - size)
	for i := range out {
		l := n
		if i == num-1 {
			l = last
		}
		t, err := x.Narrow(d, i*n, l)
		if err != nil {
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

func chunkOp(c *callCtx) (any, error) {
	a, err := c.intArgs([]string{"chunks", "dim"}, 0)
	if err != nil {
		return nil, err
	}
	k, d0 := a[0], a[1]
	x := c.x
	if x.Dim() == 0 {
		return nil, fmt.Errorf("chunk expects at least a 1-dimensional tensor")
	}
	if k <= 0 {
		return nil, fmt.Errorf("chunk expects `chunks` to be greater than 0, got: %d", k)
	}
	d, err := wrapDim(d0, x.Dim())
	if err != nil {
		return nil, err
	}
	size, _ := x.Size(d)
	n := (size + k - 1) / k
	if n == 0 && size == 0 {
		if k > MaxRows {
			return nil, fmt.Errorf("chunk would make %d tensors (more than %d)", k, MaxRows)
		}
		return splitSizes(x, make([]int, k), d, size)
	}
	return splitEven(x, n, d, size)
}

func unbindOp(c *callCtx) (any, error) {
	a, err := c.intArgs([]string{"dim"}, 0)
	if err != nil {
		return nil, err
	}
	d0 := a[0]
	x := c.x
	if x.Dim() == 0 {
		return nil, fmt.Errorf("Dimension specified as %d but tensor has no dimensions", d0)
	}
	d, err := wrapDim(d0, x.Dim())
	if err != nil {
		return nil, err
	}
	size, _ := x.Size(d)
	if size > MaxRows {
		return nil, fmt.Errorf("unbind would make %d tensors (more than %d)", size, MaxRows)
	}
	out := make([]*tensor.Tensor, size)
	for i := range out {
		t, err := x.Select(d, i)
		if err != nil {
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

// repeatInterleaveOp is repeat_interleave(repeats: int, dim=None); without
// dim the input is flattened first.
func repeatInterleaveOp(c *callCtx) (any, error) {
	if err := c.bind([]string{"repeats", "dim"}, "output_size"); err != nil {
		return nil, err
	}
	r, err := c.int("repeats", nil)
	if err != nil {
		return nil, err
	}
	x := c.x
	d, ok, err := c.optInt("dim")
	if err != nil {
		return nil, err
	}
	if !ok {
		if x, err = x.Reshape(-1); err != nil {
			return nil, err
		}
		d = 0
	}
	return x.RepeatInterleave(r, d)
}
