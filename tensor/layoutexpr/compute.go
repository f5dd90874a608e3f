package layoutexpr

import (
	"fmt"
	"slices"

	"github.com/stride-lm/stride/tensor"
)

// The layouts of computed results, following PyTorch 1.13 on CPU:
// elementwise ops go through TensorIterator, which keeps the inputs'
// memory layout; matmul, softmax and reductions return contiguous
// results.

// operand is one input of a TensorIterator op: a tensor, or a Python
// number wrapped as a 0-d tensor.
type operand struct {
	shape, strides []int
	dtype          tensor.DType
	wrapped        bool // a Python number
}

func operandOf(v value) (operand, bool) {
	switch x := v.(type) {
	case *tval:
		return operand{shape: x.t.Shape(), strides: x.t.Strides(), dtype: x.t.DType()}, true
	case int:
		return operand{shape: []int{}, strides: []int{}, dtype: tensor.I64, wrapped: true}, true
	case bool:
		return operand{shape: []int{}, strides: []int{}, dtype: tensor.Bool, wrapped: true}, true
	case float64:
		return operand{shape: []int{}, strides: []int{}, dtype: tensor.F32, wrapped: true}, true
	}
	return operand{}, false
}

// elementwise is the layout of a op b (+ - * / // **) for tensors and
// Python numbers.
func elementwise(op string, a, b value) (*tensor.Tensor, error) {
	oa, ok1 := operandOf(a)
	ob, ok2 := operandOf(b)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("unsupported operand type(s) for %s: '%s' and '%s'", op, typeName(a), typeName(b))
	}
	dt := resultType(oa, ob)
	switch op {
	case "/":
		if !dt.IsFloat() {
			dt = tensor.F32
		}
	case "-":
		if oa.dtype == tensor.Bool && ob.dtype == tensor.Bool {
			return nil, fmt.Errorf("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead.")
		}
		if oa.dtype == tensor.Bool || ob.dtype == tensor.Bool {
			return nil, fmt.Errorf("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")
		}
	}
	ops := []operand{oa, ob}
	if op == "**" && ob.wrapped {
		// pow(Tensor, Scalar) is a unary TensorIterator op.
		ops = ops[:1]
		if ob.dtype == tensor.F32 && !oa.dtype.IsFloat() {
			dt = tensor.F32
		} else {
			dt = oa.dtype
			if ob.dtype == tensor.I64 && oa.dtype == tensor.Bool {
				dt = tensor.I64
			}
		}
	}
	// On the CPU, TensorIterator first converts every input whose dtype is
	// not the common one with .to() (preserve_format), so such an input
	// enters the layout rules with dense strides of its own dim order.
	for i := range ops {
		o := &ops[i]
		if !o.wrapped && o.dtype != dt && !nonOverlappingAndDense(o.shape, o.strides) {
			o.strides = inferDenseStrides(o.shape, o.strides)
		}
	}
	shape, strides, err := iterLayout(ops)
	if err != nil {
		return nil, err
	}
	return newMeta(op, dt, shape, strides)
}

// unaryLayout is the layout of a unary elementwise op (neg) of x.
func unaryLayout(x *tensor.Tensor, dt tensor.DType) (*tensor.Tensor, error) {
	shape, strides, err := iterLayout([]operand{{shape: x.Shape(), strides: x.Strides(), dtype: x.DType()}})
	if err != nil {
		return nil, err
	}
	return newMeta("neg", dt, shape, strides)
}

// broadcastShapes is infer_size: shapes aligned on the right, each pair
// of sizes equal or one of them 1.
func broadcastShapes(a, b []int) ([]int, error) {
	n := max(len(a), len(b))
	out := make([]int, n)
	for i := n - 1; i >= 0; i-- {
		ia, ib := i-(n-len(a)), i-(n-len(b))
		sa, sb := 1, 1
		if ia >= 0 {
			sa = a[ia]
		}
		if ib >= 0 {
			sb = b[ib]
		}
		switch {
		case sa == sb || sb == 1:
			out[i] = sa
		case sa == 1:
			out[i] = sb
		default:
			return nil, fmt.Errorf("The size of tensor a (%d) must match the size of tensor b (%d) at non-singleton dimension %d", sa, sb, i)
		}
	}
	return out, nil
}

// iterLayout is the output layout TensorIterator allocates for ops (its
// inputs, in order), PyTorch 1.13's compute_fast_setup_type,
// reorder_dimensions and allocate_or_resize_outputs.
func iterLayout(ops []operand) (shape, strides []int, err error) {
	shape = []int{}
	same, scalars, tensors := true, false, false
	for i, o := range ops {
		if len(o.shape) == 0 {
			scalars = true
		} else {
			tensors = true
		}
		if scalars && tensors {
			same = false
		}
		if i == 0 {
			shape = o.shape
		} else if !slices.Equal(o.shape, shape) {
			same = false
			if shape, err = broadcastShapes(shape, o.shape); err != nil {
				return nil, nil, err
			}
		}
	}
	if len(shape) > maxDims {
		return nil, nil, fmt.Errorf("more than %d dims", maxDims)
	}
	if same {
		if st, ok := fastSetup(shape, ops); ok {
			return shape, st, nil
		}
	}
	nd := len(shape)
	// Each operand's strides in bytes over the broadcast shape; a
	// broadcast dim (size 1 against a larger size, or missing) reads 0.
	sb := make([][]int, len(ops))
	for k, o := range ops {
		sb[k] = make([]int, nd)
		lead := nd - len(o.shape)
		for i := range o.shape {
			if o.shape[i] == 1 && shape[lead+i] != 1 {
				continue
			}
			sb[k][lead+i] = o.strides[i] * o.dtype.Size()
		}
	}
	perm := reorderDims(shape, sb)
	inverted := true
	for i := range perm {
		if perm[i] != nd-1-i {
			inverted = false
		}
	}
	if inverted {
		return shape, tensor.ContiguousStrides(shape), nil
	}
	strides = make([]int, nd)
	next := 1
	for _, d := range perm {
		strides[d] = next
		next *= shape[d]
	}
	return shape, strides, nil
}

func isContiguous(shape, strides []int) bool {
	expected := 1
	for _, s := range shape {
		if s == 0 {
			return true
		}
	}
	for i := len(shape) - 1; i >= 0; i-- {
		if shape[i] == 1 {
			continue
		}
		if strides[i] != expected {
			return false
		}
		expected *= shape[i]
	}
	return true
}

// nonOverlappingAndDense is PyTorch's compute_non_overlapping_and_dense:
// sorted by stride (dims of size < 2 last), the strides are the running
// products of the sizes.
func nonOverlappingAndDense(shape, strides []int) bool {
	// TensorImpl's flag is contiguous || channels-last || the computed
	// test, so an empty tensor (contiguous) counts as dense.
	if isContiguous(shape, strides) || channelsLastContiguous(shape, strides) {
		return true
	}
	nd := len(shape)
	if nd == 1 {
		return shape[0] < 2 || strides[0] == 1
	}
	perm := make([]int, nd)
	for i := range perm {
		perm[i] = i
	}
	slices.SortStableFunc(perm, func(a, b int) int {
		la, lb := shape[a] < 2, shape[b] < 2
		switch {
		case la && lb:
			return 0
		case la:
			return 1
		case lb:
			return -1
		}
		return strides[a] - strides[b]
	})
	req := 1
	for _, d := range perm {
		if shape[d] < 2 {
			return true
		}
		if strides[d] != req {
			return false
		}
		req *= shape[d]
	}
	return true
}

// inferDenseStrides is PyTorch's infer_dense_strides: dense strides that
// keep the dim order of strides (ties and stride-0 dims keep their place).
// The dim order is reorderDims' with strides as the only operand: with one
// operand its comparison is infer_dense_strides' should_swap.
func inferDenseStrides(shape, strides []int) []int {
	nd := len(shape)
	perm := reorderDims(shape, [][]int{strides})
	out := make([]int, nd)
	cur := 1
	for _, d := range perm {
		out[d] = cur
		if shape[d] > 1 {
			cur *= shape[d]
		}
	}
	return out
}

// ---- matmul, softmax, reductions ----

// matmulLayout is torch.matmul's result: 1-d·1-d is 0-d, a 1-d operand
// gains and then loses a dim, batch dims broadcast; the result is always
// contiguous.
func matmulLayout(a, b *tensor.Tensor) (*tensor.Tensor, error) {
	da, db := a.Dim(), b.Dim()
	if da == 0 || db == 0 {
		return nil, fmt.Errorf("both arguments to matmul need to be at least 1D, but they are %dD and %dD", da, db)
	}
	// PyTorch 1.13 on CPU checks the dtypes only when there is work (dot
	// always checks); with an empty operand the result takes the dtype of
	// the operand its kernel allocates like: mm's first, mv's and bmm's
	// second.
	dt := a.DType()
	if a.DType() != b.DType() {
		if (a.Numel() > 0 && b.Numel() > 0) || (da == 1 && db == 1) {
			return nil, fmt.Errorf("expected scalar type %s but found %s", scalarName(a.DType()), scalarName(b.DType()))
		}
		if db != 2 {
			dt = b.DType()
		}
	}
	sa, sb := a.Shape(), b.Shape()
	k1 := sa[da-1]
	k2 := sb[0]
	if db >= 2 {
		k2 = sb[db-2]
	}
	if k1 != k2 {
		switch {
		case da == 1 && db == 1:
			return nil, fmt.Errorf("inconsistent tensor size, expected tensor [%d] and src [%d] to have the same number of elements, but got %d and %d elements respectively", k1, k2, k1, k2)
		case da == 2 && db == 2:
			return nil, fmt.Errorf("mat1 and mat2 shapes cannot be multiplied (%dx%d and %dx%d)", sa[0], sa[1], sb[0], sb[1])
		}
		return nil, fmt.Errorf("size mismatch: the contracted dims of %s and %s differ (%d vs %d)", tensor.FormatInts(sa), tensor.FormatInts(sb), k1, k2)
	}
	var batchA, batchB []int
	if da > 2 {
		batchA = sa[:da-2]
	}
	if db > 2 {
		batchB = sb[:db-2]
	}
	batch, err := broadcastShapes(batchA, batchB)
	if err != nil {
		return nil, err
	}
	out := batch
	if da >= 2 {
		out = append(out, sa[da-2])
	}
	if db >= 2 {
		out = append(out, sb[db-1])
	}
	return newMeta("matmul", dt, out, nil)
}

func softmaxOp(c *callCtx) (any, error) {
	if err := c.bind([]string{"dim", "dtype"}); err != nil {
		return nil, err
	}
	d, err := c.int("dim", nil)
	if err != nil {
		return nil, err
	}
	if _, err := wrapDim(d, c.x.Dim()); err != nil {
		return nil, err
	}
	dt, err := c.dtype("dtype", c.x.DType())
	if err != nil {
		return nil, err
	}
	if !dt.IsFloat() && c.x.Numel() > 0 {
		// PyTorch's CPU kernel, not a layout rule: an empty input passes.
		return nil, fmt.Errorf("\"softmax_lastdim_kernel_impl\" not implemented for '%s'", scalarName(dt))
	}
	return newMeta("softmax", dt, c.x.Shape(), nil)
}

// reduceOp is sum or mean over dim (None: all dims), keepdim optional; the
// result is contiguous. sum of integers or bools is int64; mean needs a
// floating input.
func reduceOp(mean bool) method {
	return func(c *callCtx) (any, error) {
		if err := c.bind([]string{"dim", "keepdim", "dtype"}, "dtype"); err != nil {
			return nil, err
		}
		x := c.x
		def := x.DType()
		if !mean && !def.IsFloat() {
			def = tensor.I64
		}
		dt, err := c.dtype("dtype", def)
		if err != nil {
			return nil, err
		}
		if mean && !dt.IsFloat() {
			return nil, fmt.Errorf("mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: %s", scalarName(dt))
		}
		keep := false
		if v, ok := c.b["keepdim"]; ok {
			b, isB := v.(bool)
			if !isB {
				return nil, c.badType("keepdim", "bool", v)
			}
			keep = b
		}
		nd := x.Dim()
		reduce := make([]bool, max(nd, 1))
		if c.has("dim") {
			dims, err := c.ints("dim")
			if err != nil {
				return nil, err
			}
			if len(dims) == 0 {
				for i := range reduce {
					reduce[i] = true
				}
			}
			for _, d := range dims {
				w, err := wrapDim(d, nd)
				if err != nil {
					return nil, err
				}
				if reduce[w] {
					return nil, fmt.Errorf("dim %d appears multiple times in the list of dims", w)
				}
				reduce[w] = true
			}
		} else {
			for i := range reduce {
				reduce[i] = true
			}
		}
		shape := []int{}
		for i, s := range x.Shape() {
			switch {
			case !reduce[i]:
				shape = append(shape, s)
			case keep:
				shape = append(shape, 1)
			}
		}
		name := "sum"
		if mean {
			name = "mean"
		}
		return newMeta(name, dt, shape, nil)
	}
}

// fastSetup is TensorIterator's compute_fast_setup_type for operands of
// one shape: all contiguous, all channels-last, or all non-overlapping
// and dense with equal strides give the output that layout.
func fastSetup(shape []int, ops []operand) ([]int, bool) {
	contig, cl, dense := true, true, true
	for _, o := range ops {
		contig = contig && isContiguous(o.shape, o.strides)
		cl = cl && channelsLastContiguous(o.shape, o.strides)
		dense = dense && nonOverlappingAndDense(o.shape, o.strides)
	}
	switch {
	case contig:
		return tensor.ContiguousStrides(shape), true
	case cl:
		return channelsLastStrides(shape), true
	case dense:
		equal := true
		for _, o := range ops[1:] {
			equal = equal && slices.Equal(o.strides, ops[0].strides)
		}
		if equal {
			return slices.Clone(ops[len(ops)-1].strides), true
		}
	}
	return nil, false
}

// reorderDims is TensorIterator's reorder_dimensions: perm[0] is the
// fastest-moving dim. It starts from the reversed order and insertion-sorts
// with an ambiguous comparison: the first operand whose strides (in bytes,
// sb[k]) differ, both non-zero, decides; equal strides put the smaller dim
// first; otherwise the next operand is asked.
func reorderDims(shape []int, sb [][]int) []int {
	nd := len(shape)
	perm := make([]int, nd)
	for i := range perm {
		perm[i] = nd - 1 - i
	}
	shouldSwap := func(d0, d1 int) int {
		for k := range sb {
			s0, s1 := sb[k][d0], sb[k][d1]
			if s0 == 0 || s1 == 0 {
				continue
			}
			if s0 < s1 {
				return -1
			}
			if s0 > s1 {
				return 1
			}
			if shape[d0] > shape[d1] {
				return 1
			}
		}
		return 0
	}
	for i := 1; i < nd; i++ {
		d1 := i
		for d0 := i - 1; d0 >= 0; d0-- {
			c := shouldSwap(perm[d0], perm[d1])
			if c > 0 {
				perm[d0], perm[d1] = perm[d1], perm[d0]
				d1 = d0
			} else if c < 0 {
				break
			}
		}
	}
	return perm
}
