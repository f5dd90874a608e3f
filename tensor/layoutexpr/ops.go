package layoutexpr

import (
	"errors"
	"fmt"

	"github.com/stride-lm/stride/tensor"
)

// method evaluates x.name(args) on c.x. It returns a *tensor.Tensor (one
// row), a []*tensor.Tensor (a tuple: split, chunk, unbind) or a plain
// value.
type method func(c *callCtx) (any, error)

func intp(n int) *int { return &n }

// constructors maps each constructor the language accepts (empty(2, 3),
// arange(12), as_strided(...)) to its evaluator.
var constructors = map[string]func(c *callCtx) (*tensor.Tensor, error){
	"empty": sizeCtor, "zeros": sizeCtor, "ones": sizeCtor, "randn": sizeCtor, "rand": sizeCtor,
	"arange":        arangeCtor,
	"as_strided":    asStridedCtor,
	"empty_strided": emptyStridedCtor,
}

// methods maps each method x.name(...) the language accepts to its evaluator:
// the view ops (views.go), the copies (copies.go), the computing ops
// (compute.go) and the queries size, dim and numel.
var methods = map[string]method{
	"view":         viewOp,
	"reshape":      one(func(x *tensor.Tensor, s []int) (*tensor.Tensor, error) { return x.Reshape(s...) }, "shape"),
	"expand":       one(func(x *tensor.Tensor, s []int) (*tensor.Tensor, error) { return x.Expand(s...) }, "size"),
	"permute":      one(func(x *tensor.Tensor, s []int) (*tensor.Tensor, error) { return x.Permute(s...) }, "dims"),
	"repeat":       repeatOp,
	"broadcast_to": broadcastToOp,
	"expand_as":    likeOp(func(x, o *tensor.Tensor) (*tensor.Tensor, error) { return x.Expand(o.Shape()...) }),
	"view_as":      likeOp(func(x, o *tensor.Tensor) (*tensor.Tensor, error) { return x.View(o.Shape()...) }),
	"reshape_as":   likeOp(func(x, o *tensor.Tensor) (*tensor.Tensor, error) { return x.Reshape(o.Shape()...) }),
	"squeeze":      squeezeOp,
	"unsqueeze":    unsqueezeOp,
	"transpose":    transposeOp, "swapaxes": transposeOp, "swapdims": transposeOp,
	"t":         func(c *callCtx) (any, error) { return noArgs(c, c.x.T) },
	"slice":     sliceOp,
	"narrow":    narrowOp,
	"select":    selectOp,
	"unfold":    unfoldOp,
	"flatten":   flattenOp,
	"unflatten": unflattenOp,
	"movedim":   movedimOp, "moveaxis": movedimOp,
	"diagonal":   diagonalOp,
	"as_strided": asStridedOp,
	"contiguous": contiguousOp,
	"clone":      cloneOp,
	"to":         toOp,
	"float":      convert(tensor.F32), "half": convert(tensor.F16), "bfloat16": convert(tensor.BF16),
	"double": convert(tensor.F64), "long": convert(tensor.I64), "int": convert(tensor.I32),
	"short": convert(tensor.I16), "char": convert(tensor.I8), "byte": convert(tensor.U8), "bool": convert(tensor.Bool),
	"split":             splitOp,
	"chunk":             chunkOp,
	"unbind":            unbindOp,
	"repeat_interleave": repeatInterleaveOp,
	"softmax":           softmaxOp,
	"sum":               reduceOp(false),
	"mean":              reduceOp(true),
	"matmul":            likeOp(matmulLayout),
	"add":               binaryMethod("+"), "sub": binaryMethod("-"), "mul": binaryMethod("*"), "div": binaryMethod("/"),
	"size":  sizeOp,
	"dim":   func(c *callCtx) (any, error) { return c.x.Dim(), c.bind(nil) },
	"numel": func(c *callCtx) (any, error) { return c.x.Numel(), c.bind(nil) },
}

// sizeOp is size() (the shape as a tuple) or size(dim).
func sizeOp(c *callCtx) (any, error) {
	if err := c.bind([]string{"dim"}); err != nil {
		return nil, err
	}
	if !c.has("dim") {
		return intsTuple(c.x.Shape()), nil
	}
	d, err := c.int("dim", nil)
	if err != nil {
		return nil, err
	}
	return c.x.Size(d)
}

func noArgs(c *callCtx, f func() (*tensor.Tensor, error)) (any, error) {
	if err := c.bind(nil); err != nil {
		return nil, err
	}
	return f()
}

// one wraps a variadic-size op: view(2, 3) or view((2, 3)).
func one(f func(*tensor.Tensor, []int) (*tensor.Tensor, error), param string) method {
	return func(c *callCtx) (any, error) {
		s, err := c.sizes(param)
		if err != nil {
			return nil, err
		}
		return f(c.x, s)
	}
}

func likeOp(f func(x, o *tensor.Tensor) (*tensor.Tensor, error)) method {
	return func(c *callCtx) (any, error) {
		if err := c.bind([]string{"other"}); err != nil {
			return nil, err
		}
		o, err := c.tensorArg("other")
		if err != nil {
			return nil, err
		}
		return f(c.x, o)
	}
}

func binaryMethod(op string) method {
	return func(c *callCtx) (any, error) {
		if err := c.bind([]string{"other"}); err != nil {
			return nil, err
		}
		o, ok := c.b["other"]
		if !ok {
			return nil, c.missing("other")
		}
		return elementwise(op, &tval{t: c.x}, o)
	}
}

// ---- constructors ----

func sizeCtor(c *callCtx) (*tensor.Tensor, error) {
	s, err := c.sizes("size", "dtype")
	if err != nil {
		return nil, err
	}
	dt, err := c.dtype("dtype", tensor.F32)
	if err != nil {
		return nil, err
	}
	return newMeta(c.name, dt, s, nil)
}

// newMeta makes a meta tensor with the given strides (nil: contiguous)
// over a fresh storage just large enough for it.
func newMeta(op string, dt tensor.DType, shape, strides []int) (*tensor.Tensor, error) {
	for _, s := range shape {
		if s < 0 {
			return nil, fmt.Errorf("Trying to create tensor with negative dimension %d: %s", s, tensor.FormatInts(shape))
		}
	}
	if len(shape) > maxDims {
		return nil, fmt.Errorf("%s: more than %d dims", op, maxDims)
	}
	if strides == nil {
		t, err := tensor.Meta(dt, shape...)
		return t, relabel(op, err)
	}
	t, err := tensor.MetaStrided(dt, shape, strides, 0)
	return t, relabel(op, err)
}

// relabel reports a tensor error under the name the user wrote (empty,
// arange) rather than the meta constructor behind it.
func relabel(op string, err error) error {
	var se *tensor.ShapeError
	if errors.As(err, &se) {
		return &tensor.ShapeError{Op: op, Msg: se.Msg}
	}
	return err
}

// arangeCtor is torch.arange: arange(end), arange(start, end[, step]),
// with ceil((end − start)/step) elements; int64 unless an argument is a
// float or dtype= says otherwise.
func arangeCtor(c *callCtx) (*tensor.Tensor, error) {
	if err := c.bind([]string{"start", "end", "step"}, "dtype"); err != nil {
		return nil, err
	}
	num := func(name string, def float64) (float64, bool, error) {
		v, ok := c.b[name]
		if !ok {
			return def, true, nil
		}
		switch x := v.(type) {
		case int:
			return float64(x), true, nil
		case float64:
			return x, false, nil
		case noneVal:
			if name == "end" {
				return 0, true, errEndNone
			}
		}
		return 0, false, c.badType(name, "Number", v)
	}
	if _, ok := c.b["start"]; !ok {
		return nil, c.missing("end")
	}
	start, i1, err := num("start", 0)
	if err != nil {
		return nil, err
	}
	end, i2, err := num("end", 0)
	if err == errEndNone {
		start, end, i2, err = 0, start, i1, nil
	} else if _, has := c.b["end"]; !has {
		start, end = 0, start
	}
	if err != nil {
		return nil, err
	}
	step, i3, err := num("step", 1)
	if err != nil {
		return nil, err
	}
	def := tensor.I64
	if !(i1 && i2 && i3) {
		def = tensor.F32
	}
	dt, err := c.dtype("dtype", def)
	if err != nil {
		return nil, err
	}
	if step == 0 {
		return nil, &tensor.ShapeError{Op: "arange", Msg: "step must be nonzero"}
	}
	if (step > 0 && end < start) || (step < 0 && end > start) {
		return nil, &tensor.ShapeError{Op: "arange", Msg: "upper bound and larger bound inconsistent with step sign"}
	}
	n := (end - start) / step
	if n > maxInt {
		return nil, &tensor.ShapeError{Op: "arange", Msg: fmt.Sprintf("shape [%.0f] has more than 2^53 elements", n)}
	}
	size := int(n)
	if float64(size) < n {
		size++
	}
	return newMeta("arange", dt, []int{size}, nil)
}

var errEndNone = errors.New("end is None")

func asStridedCtor(c *callCtx) (*tensor.Tensor, error) {
	if err := c.bind([]string{"size", "stride", "storage_offset"}, "dtype"); err != nil {
		return nil, err
	}
	ss, err := c.intTuples("size", "stride")
	if err != nil {
		return nil, err
	}
	size, stride := ss[0], ss[1]
	off, err := c.int("storage_offset", intp(0))
	if err != nil {
		return nil, err
	}
	dt, err := c.dtype("dtype", tensor.F32)
	if err != nil {
		return nil, err
	}
	return tensor.MetaStrided(dt, size, stride, off)
}

func emptyStridedCtor(c *callCtx) (*tensor.Tensor, error) {
	if err := c.bind([]string{"size", "stride"}, "dtype"); err != nil {
		return nil, err
	}
	ss, err := c.intTuples("size", "stride")
	if err != nil {
		return nil, err
	}
	size, stride := ss[0], ss[1]
	dt, err := c.dtype("dtype", tensor.F32)
	if err != nil {
		return nil, err
	}
	t, err := tensor.MetaStrided(dt, size, stride, 0)
	return t, relabel("empty_strided", err)
}
