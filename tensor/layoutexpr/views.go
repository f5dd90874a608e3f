package layoutexpr

import (
	"fmt"

	"github.com/stride-lm/stride/tensor"
)

// The view and copy methods. Most are one call into package tensor; the
// few PyTorch defines by composition (flatten, unflatten, movedim, split,
// chunk, unbind, diagonal) are composed here from tensor's public ops.

// wrapDim turns a possibly negative dim into [0, ndim), with PyTorch's
// message; a 0-d tensor accepts -1 and 0.
func wrapDim(d, ndim int) (int, error) {
	n := max(ndim, 1)
	if d < -n || d >= n {
		return 0, fmt.Errorf("Dimension out of range (expected to be in range of [%d, %d], but got %d)", -n, n-1, d)
	}
	if d < 0 {
		d += n
	}
	return d, nil
}

func viewOp(c *callCtx) (any, error) {
	if len(c.args) == 1 {
		if dt, ok := c.args[0].(tensor.DType); ok {
			return viewDType(c, dt)
		}
	}
	if v, ok := c.kwValue("dtype"); ok && len(c.args) == 0 {
		if dt, ok := v.(tensor.DType); ok {
			return viewDType(c, dt)
		}
	}
	s, err := c.sizes("size")
	if err != nil {
		return nil, err
	}
	return c.x.View(s...)
}

func (c *callCtx) kwValue(name string) (value, bool) {
	for i, k := range c.kwName {
		if k == name {
			return c.kwVal[i], true
		}
	}
	return nil, false
}

// viewDType is Tensor.view(dtype): the same bytes read as another dtype.
// With a different itemsize the last dim must have stride 1; it grows or
// shrinks by the size ratio, and the other strides and the offset are
// rescaled (PyTorch 1.13's view_dtype rules).
func viewDType(c *callCtx, dt tensor.DType) (any, error) {
	x := c.x
	from := x.DType()
	if dt == from {
		return x, nil
	}
	old, nw := from.Size(), dt.Size()
	shape, strides, off := x.Shape(), x.Strides(), x.Offset()
	nd := len(shape)
	switch {
	case old == nw:
	case nd == 0:
		return nil, fmt.Errorf("self.dim() cannot be 0 to view %s as %s (different element sizes)", scalarName(from), scalarName(dt))
	case old > nw:
		r := old / nw
		if strides[nd-1] != 1 {
			return nil, fmt.Errorf("self.stride(-1) must be 1 to view %s as %s (different element sizes), but got %d", scalarName(from), scalarName(dt), strides[nd-1])
		}
		for i := range strides {
			strides[i] *= r
		}
		shape[nd-1] *= r
		strides[nd-1] = 1
		off *= r
	default:
		r := nw / old
		if shape[nd-1]%r != 0 {
			return nil, fmt.Errorf("self.size(-1) must be divisible by %d to view %s as %s (different element sizes), but got %d", r, scalarName(from), scalarName(dt), shape[nd-1])
		}
		if off%r != 0 {
			return nil, fmt.Errorf("self.storage_offset() must be divisible by %d to view %s as %s (different element sizes), but got %d", r, scalarName(from), scalarName(dt), off)
		}
		if strides[nd-1] != 1 {
			return nil, fmt.Errorf("self.stride(-1) must be 1 to view %s as %s (different element sizes), but got %d", scalarName(from), scalarName(dt), strides[nd-1])
		}
		for i := 0; i < nd-1; i++ {
			if strides[i]%r != 0 {
				return nil, fmt.Errorf("self.stride(%d) must be divisible by %d to view %s as %s (different element sizes), but got %d", i, r, scalarName(from), scalarName(dt), strides[i])
			}
			strides[i] /= r
		}
		shape[nd-1] /= r
		off /= r
	}
	whole, err := tensor.MetaStrided(dt, []int{x.Storage().Bytes() / nw}, []int{1}, 0)
	if err != nil {
		return nil, err
	}
	c.alias = x.Storage()
	return whole.AsStrided(shape, strides, off)
}

// scalarName is PyTorch's ScalarType name (Float, Half, Long, ...).
func scalarName(dt tensor.DType) string {
	return [...]string{"Float", "Half", "BFloat16", "Double", "Long", "Int", "Short", "Char", "Byte", "Bool"}[dt]
}

// squeezeOp is squeeze() or squeeze(dim); a tuple of dims (PyTorch 2.0)
// is accepted too.
func squeezeOp(c *callCtx) (any, error) {
	if err := c.bind([]string{"dim"}); err != nil {
		return nil, err
	}
	if !c.has("dim") {
		return c.x.Squeeze()
	}
	d, err := c.ints("dim")
	if err != nil {
		return nil, err
	}
	return c.x.Squeeze(d...)
}

// broadcastToOp is broadcast_to(size): expand with the sizes as one tuple.
func broadcastToOp(c *callCtx) (any, error) {
	if err := c.bind([]string{"size"}); err != nil {
		return nil, err
	}
	s, err := c.ints("size")
	if err != nil {
		return nil, err
	}
	return c.x.Expand(s...)
}

func unsqueezeOp(c *callCtx) (any, error) {
	d, err := c.intArgs([]string{"dim"})
	if err != nil {
		return nil, err
	}
	if err := checkDims("unsqueeze", c.x.Dim()+1); err != nil {
		return nil, err
	}
	return c.x.Unsqueeze(d[0])
}

func transposeOp(c *callCtx) (any, error) {
	d, err := c.intArgs([]string{"dim0", "dim1"})
	if err != nil {
		return nil, err
	}
	return c.x.Transpose(d[0], d[1])
}

// sliceOp is aten::slice(dim=0, start=None, end=None, step=1), the op
// behind x[a:b:c] (kept from the chain grammar; PyTorch has no
// Tensor.slice method, torch.ops.aten.slice is the same op).
func sliceOp(c *callCtx) (any, error) {
	if err := c.bind([]string{"dim", "start", "end", "step"}); err != nil {
		return nil, err
	}
	dim, err := c.int("dim", intp(0))
	if err != nil {
		return nil, err
	}
	var lo, hi *int
	if n, ok, err := c.optInt("start"); err != nil {
		return nil, err
	} else if ok {
		lo = &n
	}
	if n, ok, err := c.optInt("end"); err != nil {
		return nil, err
	} else if ok {
		hi = &n
	}
	step, err := c.int("step", intp(1))
	if err != nil {
		return nil, err
	}
	return sliceDim(c.x, dim, lo, hi, step)
}

// sliceDim is x.slice(dim, lo, hi, step) with Python's defaults for the
// omitted ends.
func sliceDim(x *tensor.Tensor, dim int, lo, hi *int, step int) (*tensor.Tensor, error) {
	start, end := 0, maxInt
	if lo != nil {
		start = *lo
	}
	if hi != nil {
		end = *hi
	}
	if step <= 0 {
		return nil, fmt.Errorf("slice step must be positive")
	}
	if x.Dim() > 0 {
		if d, err := wrapDim(dim, x.Dim()); err == nil {
			if st, _ := x.Stride(d); st != 0 && step > maxInt/st {
				return nil, fmt.Errorf("slice: stride %d times step %d exceeds 2^53", st, step)
			}
		}
	}
	return x.Slice(dim, start, end, step)
}

func narrowOp(c *callCtx) (any, error) {
	a, err := c.intArgs([]string{"dim", "start", "length"})
	if err != nil {
		return nil, err
	}
	return c.x.Narrow(a[0], a[1], a[2])
}

func selectOp(c *callCtx) (any, error) {
	a, err := c.intArgs([]string{"dim", "index"})
	if err != nil {
		return nil, err
	}
	return c.x.Select(a[0], a[1])
}

func unfoldOp(c *callCtx) (any, error) {
	a, err := c.intArgs([]string{"dimension", "size", "step"})
	if err != nil {
		return nil, err
	}
	d, size, step := a[0], a[1], a[2]
	if err := checkDims("unfold", c.x.Dim()+1); err != nil {
		return nil, err
	}
	if w, err := wrapDim(d, c.x.Dim()); err == nil && c.x.Dim() > 0 && step > 0 {
		if st, _ := c.x.Stride(w); st > maxInt/step {
			return nil, fmt.Errorf("unfold: stride %d times step %d exceeds 2^53", st, step)
		}
	}
	return c.x.Unfold(d, size, step)
}

// flattenOp is PyTorch 1.13's flatten: a 0-d tensor becomes [1]; with
// start_dim == end_dim the input itself is returned; otherwise a reshape
// with the merged size computed (not inferred, so zero sizes work).
func flattenOp(c *callCtx) (any, error) {
	a, err := c.intArgs([]string{"start_dim", "end_dim"}, 0, -1)
	if err != nil {
		return nil, err
	}
	x := c.x
	s, err := wrapDim(a[0], x.Dim())
	if err != nil {
		return nil, err
	}
	e, err := wrapDim(a[1], x.Dim())
	if err != nil {
		return nil, err
	}
	if s > e {
		return nil, fmt.Errorf("flatten() has invalid args: start_dim cannot come after end_dim")
	}
	if x.Dim() == 0 {
		return x.Reshape(1)
	}
	if s == e {
		return x, nil
	}
	shape := x.Shape()
	n := 1
	for _, d := range shape[s : e+1] {
		n *= d
	}
	return x.Reshape(append(append(shape[:s:s], n), shape[e+1:]...)...)
}

// unflattenOp is unflatten(dim, sizes): a view splitting dim into sizes
// (one may be -1).
func unflattenOp(c *callCtx) (any, error) {
	if err := c.bind([]string{"dim", "sizes"}); err != nil {
		return nil, err
	}
	d0, err := c.int("dim", nil)
	if err != nil {
		return nil, err
	}
	sizes, err := c.ints("sizes")
	if err != nil {
		return nil, err
	}
	if _, ok := c.b["sizes"].(*tupleVal); !ok {
		return nil, c.badType("sizes", "tuple of ints", c.b["sizes"])
	}
	x := c.x
	d, err := wrapDim(d0, x.Dim())
	if err != nil {
		return nil, err
	}
	if len(sizes) == 0 {
		return nil, fmt.Errorf("unflatten: sizes must be non-empty")
	}
	shape := x.Shape()
	if x.Dim() == 0 {
		return nil, fmt.Errorf("Dimension specified as %d but tensor has no dimensions", d0)
	}
	prod, infer := 1, -1
	for i, s := range sizes {
		if s == -1 {
			if infer >= 0 {
				return nil, fmt.Errorf("only one dimension can be inferred")
			}
			infer = i
			continue
		}
		if s < 0 {
			return nil, fmt.Errorf("invalid shape dimension %d", s)
		}
		if s != 0 && prod > maxInt/s {
			return nil, fmt.Errorf("unflatten: sizes %s overflow", tensor.FormatInts(sizes))
		}
		prod *= s
	}
	if infer >= 0 {
		if prod == 0 || shape[d]%prod != 0 {
			return nil, fmt.Errorf("unflatten: Provided sizes %s don't multiply up to the size of dim %d (%d) in the input tensor", tensor.FormatInts(sizes), d0, shape[d])
		}
		sizes = append([]int(nil), sizes...)
		sizes[infer] = shape[d] / prod
	} else if prod != shape[d] {
		return nil, fmt.Errorf("unflatten: Provided sizes %s don't multiply up to the size of dim %d (%d) in the input tensor", tensor.FormatInts(sizes), d0, shape[d])
	}
	return x.View(append(append(shape[:d:d], sizes...), shape[d+1:]...)...)
}

// movedimOp is movedim(source, destination) with ints or tuples: the
// named dims go to their destinations, the others keep their order.
func movedimOp(c *callCtx) (any, error) {
	if err := c.bind([]string{"source", "destination"}); err != nil {
		return nil, err
	}
	sd, err := c.intTuples("source", "destination")
	if err != nil {
		return nil, err
	}
	src, dst := sd[0], sd[1]
	x := c.x
	nd := x.Dim()
	if len(src) != len(dst) {
		return nil, fmt.Errorf("movedim: Invalid source or destination dims: source (%s dims) should contain the same number of dims as destination (%s dims)", tensor.FormatInts(src), tensor.FormatInts(dst))
	}
	order := make([]int, max(nd, 0))
	for i := range order {
		order[i] = -1
	}
	usedSrc := make([]bool, max(nd, 1))
	usedDst := make([]bool, max(nd, 1))
	for i := range src {
		s, err := wrapDim(src[i], nd)
		if err != nil {
			return nil, err
		}
		d, err := wrapDim(dst[i], nd)
		if err != nil {
			return nil, err
		}
		if usedSrc[s] {
			return nil, fmt.Errorf("movedim: repeated dim in `source` (%s)", tensor.FormatInts(src))
		}
		if usedDst[d] {
			return nil, fmt.Errorf("movedim: repeated dim in `destination` (%s)", tensor.FormatInts(dst))
		}
		usedSrc[s], usedDst[d] = true, true
		if nd > 0 {
			order[d] = s
		}
	}
	if nd == 0 {
		return x, nil
	}
	next := 0
	for i := range order {
		if order[i] >= 0 {
			continue
		}
		for usedSrc[next] {
			next++
		}
		order[i] = next
		next++
	}
	return x.Permute(order...)
}

// diagonalOp is diagonal(offset=0, dim1=0, dim2=1): dim1 and dim2 are
// replaced by a last dim walking both at once (stride1 + stride2).
func diagonalOp(c *callCtx) (any, error) {
	args, err := c.intArgs([]string{"offset", "dim1", "dim2"}, 0, 0, 1)
	if err != nil {
		return nil, err
	}
	off, d1, d2 := args[0], args[1], args[2]
	x := c.x
	nd := x.Dim()
	if nd < 2 {
		// PyTorch wraps against the real ndim here: a 0-d or 1-d input
		// fails the range check of dim2 (or dim1).
		n := nd
		for _, d := range []int{d1, d2} {
			if d < -n || d >= n {
				lo, hi := -n, n-1
				if n == 0 {
					lo, hi = -1, 0
				}
				return nil, fmt.Errorf("Dimension out of range (expected to be in range of [%d, %d], but got %d)", lo, hi, d)
			}
		}
	}
	a, err := wrapDim(d1, nd)
	if err != nil {
		return nil, err
	}
	b, err := wrapDim(d2, nd)
	if err != nil {
		return nil, err
	}
	if a == b {
		return nil, fmt.Errorf("diagonal dimensions cannot be identical %d, %d", d1, d2)
	}
	shape, strides := x.Shape(), x.Strides()
	var n int
	o := x.Offset()
	if off >= 0 {
		n = max(min(shape[a], shape[b]-off), 0)
	} else {
		n = max(min(shape[a]+off, shape[b]), 0)
	}
	switch {
	case n == 0:
	case off >= 0:
		o += off * strides[b]
	default:
		o -= off * strides[a]
	}
	var ns, nst []int
	for i := range shape {
		if i != a && i != b {
			ns, nst = append(ns, shape[i]), append(nst, strides[i])
		}
	}
	ns, nst = append(ns, n), append(nst, strides[a]+strides[b])
	return x.AsStrided(ns, nst, o)
}

func asStridedOp(c *callCtx) (any, error) {
	if err := c.bind([]string{"size", "stride", "storage_offset"}); err != nil {
		return nil, err
	}
	ss, err := c.intTuples("size", "stride")
	if err != nil {
		return nil, err
	}
	size, stride := ss[0], ss[1]
	off, err := c.int("storage_offset", intp(c.x.Offset()))
	if err != nil {
		return nil, err
	}
	if _, none := c.b["storage_offset"].(noneVal); none {
		off = c.x.Offset()
	}
	return c.x.AsStrided(size, stride, off)
}

// channelsLastStrides is tensor.ChannelsLastStrides for a shape known to
// be 4-d.
func channelsLastStrides(shape []int) []int {
	st, _ := tensor.ChannelsLastStrides(shape)
	return st
}
