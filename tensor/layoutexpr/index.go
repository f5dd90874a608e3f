package layoutexpr

import (
	"fmt"

	"github.com/stride-lm/stride/tensor"
)

// indexTensor is x[items] with PyTorch's basic indexing (ints select,
// slices slice, None unsqueezes, ... stands for the remaining dims), and
// one list of ints as advanced indexing (a copy).
func indexTensor(x *tensor.Tensor, items []value) (*tensor.Tensor, error) {
	if len(items) == 1 {
		if tup, ok := items[0].(*tupleVal); ok && !tup.list {
			items = tup.items
		}
	}
	consumed, ellipses, nones, selects := countIndexItems(items)
	if err := checkDims("index", x.Dim()-selects+nones); err != nil {
		return nil, err
	}
	if ellipses > 1 {
		return nil, fmt.Errorf("an index can only have a single ellipsis ('...')")
	}
	if consumed > x.Dim() {
		if x.Dim() == 0 {
			return nil, fmt.Errorf("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
		}
		return nil, fmt.Errorf("too many indices for tensor of dimension %d", x.Dim())
	}
	t := x
	dim := 0
	var adv *tupleVal
	advDim := -1
	var err error
	for _, it := range items {
		switch v := it.(type) {
		case int:
			size, _ := t.Size(dim)
			if v < -size || v >= size {
				return nil, fmt.Errorf("index %d is out of bounds for dimension %d with size %d", v, dim, size)
			}
			if t, err = t.Select(dim, v); err != nil {
				return nil, err
			}
		case sliceVal:
			step := 1
			if v.step != nil {
				step = *v.step
			}
			if step <= 0 {
				return nil, fmt.Errorf("step must be greater than zero")
			}
			if t, err = sliceDim(t, dim, v.lo, v.hi, step); err != nil {
				return nil, err
			}
			dim++
		case noneVal:
			if t, err = t.Unsqueeze(dim); err != nil {
				return nil, err
			}
			dim++
		case ellipsisVal:
			dim += x.Dim() - consumed
		case *tupleVal:
			if adv != nil {
				return nil, fmt.Errorf("only one list index is supported")
			}
			adv, advDim = v, dim
			dim++
		case bool:
			return nil, fmt.Errorf("boolean indices are not supported")
		default:
			return nil, fmt.Errorf("only integers, slices (`:`), ellipsis (`...`), None and lists of integers are valid indices (got %s)", typeName(it))
		}
	}
	if adv == nil {
		return t, nil
	}
	return advancedIndex(t, adv, advDim)
}

// advancedIndex is t[..., list, ...] with the list on dim advDim: a gather
// into a new tensor.
func advancedIndex(t *tensor.Tensor, adv *tupleVal, advDim int) (*tensor.Tensor, error) {
	size, _ := t.Size(advDim)
	for _, e := range adv.items {
		i, ok := e.(int)
		if !ok {
			return nil, fmt.Errorf("tensors used as indices must be long, int, byte or bool tensors")
		}
		if i < -size || i >= size {
			return nil, fmt.Errorf("index %d is out of bounds for dimension %d with size %d", i, advDim, size)
		}
	}
	// PyTorch's AdvancedIndex runs a TensorIterator over the input with
	// the indexed dim restrided to stride 0 and the index tensor (int64,
	// viewed as [n, 1, ..., 1]); the result takes the layout it picks.
	shape, strides := t.Shape(), t.Strides()
	n := len(adv.items)
	shape[advDim], strides[advDim] = n, 0
	ishape := make([]int, len(shape)-advDim)
	for i := range ishape {
		ishape[i] = 1
	}
	ishape[0] = n
	oshape, ostrides, err := iterLayout([]operand{
		{shape: shape, strides: strides, dtype: t.DType()},
		{shape: ishape, strides: tensor.ContiguousStrides(ishape), dtype: tensor.I64},
	})
	if err != nil {
		return nil, err
	}
	return newMeta("index", t.DType(), oshape, ostrides)
}

// countIndexItems counts an index's items by kind: those that consume a
// dim (ints, slices, lists), ellipses, Nones (each adds a dim) and ints
// (each removes one).
func countIndexItems(items []value) (consumed, ellipses, nones, selects int) {
	for _, it := range items {
		switch it.(type) {
		case noneVal:
			nones++
		case ellipsisVal:
			ellipses++
		case int:
			selects++
			consumed++
		default:
			consumed++
		}
	}
	return consumed, ellipses, nones, selects
}
