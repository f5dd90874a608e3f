package layoutexpr

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/stride-lm/stride/tensor"
)

// opText is the text a row shows for node n: a method call without its
// receiver (".view(3,4)"), an index without its receiver ("[0, 1:3]"),
// an attribute (".T"), or the node's whole source.
func (ev *evaluator) opText(n *node) string {
	switch {
	case n.kind == nCall && n.method && !(n.x.kind == nName && n.x.name == "torch"):
		return "." + ev.src[n.namePos:n.end]
	case n.kind == nIndex:
		return strings.TrimSpace(ev.src[n.bracket:n.end])
	case n.kind == nAttr:
		return "." + n.name
	}
	return strings.TrimSpace(ev.src[n.pos:n.end])
}

// fail turns err into the failure of node n (unless it already is one).
func (ev *evaluator) fail(n *node, dt tensor.DType, err error) error {
	var f *failure
	if errors.As(err, &f) {
		return err
	}
	pos := n.pos
	if n.kind == nCall || n.kind == nAttr {
		pos = n.namePos
	}
	if n.kind == nIndex {
		pos = n.bracket
	}
	return &failure{op: ev.opText(n), pos: pos, end: n.end, msg: err.Error(), dtype: dt}
}

// use makes sure a tensor value has its row (a tuple element used
// without [i] gets one now).
func (ev *evaluator) use(v value) (value, error) {
	if tv, ok := v.(*tval); ok && tv.row == 0 {
		return ev.recordPending(tv)
	}
	return v, nil
}

func (ev *evaluator) eval(n *node) (value, error) {
	switch n.kind {
	case nInt:
		return n.n, nil
	case nFloat:
		return n.f, nil
	case nEllipsis:
		return ellipsisVal{}, nil
	case nName:
		return ev.name(n)
	case nTuple, nList:
		t := &tupleVal{list: n.kind == nList}
		for _, it := range n.items {
			v, err := ev.eval(it)
			if err != nil {
				return nil, err
			}
			t.items = append(t.items, v)
		}
		return t, nil
	case nAttr:
		return ev.attr(n)
	case nCall:
		return ev.call(n)
	case nIndex:
		return ev.index(n)
	case nBin:
		return ev.binary(n)
	case nUnary:
		x, err := ev.eval(n.x)
		if err != nil {
			return nil, err
		}
		if x, err = ev.use(x); err != nil {
			return nil, err
		}
		switch v := x.(type) {
		case int:
			if n.op == "-" {
				return -v, nil
			}
			return v, nil
		case float64:
			if n.op == "-" {
				return -v, nil
			}
			return v, nil
		case *tval:
			if n.op == "+" {
				return v, nil
			}
			if v.t.DType() == tensor.Bool {
				return nil, ev.fail(n, v.t.DType(), errors.New("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."))
			}
			ev.input = v.t
			out, err := unaryLayout(v.t, v.t.DType())
			if err != nil {
				return nil, ev.fail(n, v.t.DType(), err)
			}
			return ev.recordNode(n, out)
		}
		return nil, ev.fail(n, tensor.F32, fmt.Errorf("bad operand type for unary %s: '%s'", n.op, typeName(x)))
	}
	return nil, ev.fail(n, tensor.F32, errors.New("unsupported expression"))
}

func (ev *evaluator) recordNode(n *node, t *tensor.Tensor) (value, error) {
	v, err := ev.record(ev.opText(n), t, false)
	if err != nil {
		return nil, ev.fail(n, t.DType(), err)
	}
	return v, nil
}

func (ev *evaluator) name(n *node) (value, error) {
	if v, ok := ev.vars[n.name]; ok {
		return v, nil
	}
	switch n.name {
	case "None":
		return noneVal{}, nil
	case "True":
		return true, nil
	case "False":
		return false, nil
	case "torch":
		return torchNS{}, nil
	case "float": // Python's types as dtypes, as PyTorch maps them
		return tensor.F64, nil
	case "int":
		return tensor.I64, nil
	case "bool":
		return tensor.Bool, nil
	case "channels_last", "contiguous_format", "preserve_format":
		return memFormat(n.name), nil
	}
	if dt, ok := lookupDType(n.name); ok {
		return dt, nil
	}
	return nil, &failure{op: n.name, pos: n.pos, end: n.end, msg: fmt.Sprintf("name '%s' is not defined", n.name), dtype: tensor.F32}
}

func (ev *evaluator) attr(n *node) (value, error) {
	x, err := ev.eval(n.x)
	if err != nil {
		return nil, err
	}
	if _, ok := x.(torchNS); ok {
		if v, ok := torchAttr(n.name); ok {
			return v, nil
		}
		return nil, ev.fail(n, tensor.F32, fmt.Errorf("module 'torch' has no attribute '%s'", n.name))
	}
	if x, err = ev.use(x); err != nil {
		return nil, err
	}
	tv, ok := x.(*tval)
	if !ok {
		return nil, ev.fail(n, tensor.F32, fmt.Errorf("'%s' object has no attribute '%s'", typeName(x), n.name))
	}
	t := tv.t
	ev.input = t
	switch n.name {
	case "shape":
		return intsTuple(t.Shape()), nil
	case "ndim":
		return t.Dim(), nil
	case "dtype":
		return t.DType(), nil
	case "T":
		out, err := reverseDims(t)
		if err != nil {
			return nil, ev.fail(n, t.DType(), err)
		}
		return ev.recordNode(n, out)
	case "mT":
		if t.Dim() == 1 { // PyTorch 1.13 lets a 0-d tensor through
			return nil, ev.fail(n, t.DType(), fmt.Errorf("tensor.mT is only supported on matrices or batches of matrices. Got %d-D tensor.", t.Dim()))
		}
		var out *tensor.Tensor
		var err error
		if t.Dim() == 0 {
			out, err = t.Permute()
		} else {
			out, err = t.Transpose(-2, -1)
		}
		if err != nil {
			return nil, ev.fail(n, t.DType(), err)
		}
		return ev.recordNode(n, out)
	}
	return nil, ev.fail(n, t.DType(), fmt.Errorf("'Tensor' object has no attribute '%s'", n.name))
}

func intsTuple(v []int) *tupleVal {
	t := &tupleVal{items: make([]value, len(v))}
	for i, x := range v {
		t.items[i] = x
	}
	return t
}

// reverseDims is Tensor.T: all dims reversed.
func reverseDims(x *tensor.Tensor) (*tensor.Tensor, error) {
	dims := make([]int, x.Dim())
	for i := range dims {
		dims[i] = x.Dim() - 1 - i
	}
	return x.Permute(dims...)
}

func (ev *evaluator) binary(n *node) (value, error) {
	a, err := ev.eval(n.x)
	if err != nil {
		return nil, err
	}
	if a, err = ev.use(a); err != nil {
		return nil, err
	}
	b, err := ev.eval(n.y)
	if err != nil {
		return nil, err
	}
	if b, err = ev.use(b); err != nil {
		return nil, err
	}
	ta, aT := a.(*tval)
	tb, bT := b.(*tval)
	if !aT && !bT {
		v, err := scalarArith(n.op, a, b)
		if err != nil {
			return nil, ev.fail(n, tensor.F32, err)
		}
		return v, nil
	}
	dt := tensor.F32
	if aT {
		dt, ev.input = ta.t.DType(), ta.t
	} else {
		dt, ev.input = tb.t.DType(), tb.t
	}
	var out *tensor.Tensor
	if n.op == "@" {
		if !aT || !bT {
			return nil, ev.fail(n, dt, fmt.Errorf("unsupported operand type(s) for @: '%s' and '%s'", typeName(a), typeName(b)))
		}
		out, err = matmulLayout(ta.t, tb.t)
	} else {
		out, err = elementwise(n.op, a, b)
	}
	if err != nil {
		return nil, ev.fail(n, dt, err)
	}
	return ev.recordNode(n, out)
}

// scalarArith is Python arithmetic on ints and floats.
func scalarArith(op string, a, b value) (value, error) {
	num := func(v value) (float64, bool, bool) {
		switch x := v.(type) {
		case int:
			return float64(x), true, true
		case bool:
			if x {
				return 1, true, true
			}
			return 0, true, true
		case float64:
			return x, false, true
		}
		return 0, false, false
	}
	fa, ia, oka := num(a)
	fb, ib, okb := num(b)
	if !oka || !okb {
		return nil, fmt.Errorf("unsupported operand type(s) for %s: '%s' and '%s'", op, typeName(a), typeName(b))
	}
	if ia && ib && op != "/" && !(op == "**" && fb < 0) {
		x, y := int(fa), int(fb)
		var r float64
		switch op {
		case "+":
			r = fa + fb
		case "-":
			r = fa - fb
		case "*":
			r = fa * fb
		case "//":
			if y == 0 {
				return nil, errors.New("integer division or modulo by zero")
			}
			q := x / y
			if (x%y != 0) && ((x < 0) != (y < 0)) {
				q--
			}
			return q, nil
		case "**":
			r = math.Pow(fa, fb)
		case "@":
			return nil, fmt.Errorf("unsupported operand type(s) for @: 'int' and 'int'")
		}
		if math.Abs(r) > maxInt {
			return nil, fmt.Errorf("integer result %g is beyond 2^53", r)
		}
		return int(r), nil
	}
	switch op {
	case "+":
		return fa + fb, nil
	case "-":
		return fa - fb, nil
	case "*":
		return fa * fb, nil
	case "/", "//":
		if fb == 0 {
			return nil, errors.New("float division by zero")
		}
		if op == "//" {
			return math.Floor(fa / fb), nil
		}
		return fa / fb, nil
	case "**":
		return math.Pow(fa, fb), nil
	}
	return nil, fmt.Errorf("unsupported operand type(s) for %s: '%s' and '%s'", op, typeName(a), typeName(b))
}

// index evaluates x[items]: a tuple element, or PyTorch's indexing.
func (ev *evaluator) index(n *node) (value, error) {
	x, err := ev.eval(n.x)
	if err != nil {
		// x.split(2)[0] is one step: its failure shows the whole text.
		var f *failure
		if errors.As(err, &f) && n.x.kind == nCall && n.x.method && f.op == ev.opText(n.x) {
			f.op += ev.src[n.bracket:n.end]
		}
		return nil, err
	}
	items, err := ev.subscripts(n)
	if err != nil {
		return nil, err
	}
	if tup, ok := x.(*tupleVal); ok {
		if n.x.kind == nCall && n.x.method {
			if err := ev.tupleIndexCheck(n, tup, items); err != nil {
				return nil, err
			}
		}
		if len(items) != 1 {
			return nil, ev.fail(n, tensor.F32, fmt.Errorf("%s indices must be integers or slices, not tuple", typeName(tup)))
		}
		i, ok := items[0].(int)
		if !ok {
			return nil, ev.fail(n, tensor.F32, fmt.Errorf("%s indices must be integers, not %s", typeName(tup), typeName(items[0])))
		}
		if i < -len(tup.items) || i >= len(tup.items) {
			return nil, ev.fail(n, tensor.F32, fmt.Errorf("%s index out of range", typeName(tup)))
		}
		if i < 0 {
			i += len(tup.items)
		}
		el := tup.items[i]
		if tv, ok := el.(*tval); ok && tv.row == 0 {
			tv.pending = ev.opText(n.x) + ev.src[n.bracket:n.end]
			if n.x.kind != nCall || !n.x.method {
				tv.pending = strings.TrimSpace(ev.src[n.pos:n.end])
			}
			if _, err := ev.recordPending(tv); err != nil {
				return nil, ev.fail(n, tv.t.DType(), err)
			}
		}
		return el, nil
	}
	if x, err = ev.use(x); err != nil {
		return nil, err
	}
	tv, ok := x.(*tval)
	if !ok {
		return nil, ev.fail(n, tensor.F32, fmt.Errorf("'%s' object is not subscriptable", typeName(x)))
	}
	ev.input = tv.t
	out, err := indexTensor(tv.t, items)
	if err != nil {
		return nil, ev.fail(n, tv.t.DType(), err)
	}
	return ev.recordNode(n, out)
}

// tupleIndexCheck reports a bad index into a method's tuple (split(...)[9])
// under the op text of the whole step.
func (ev *evaluator) tupleIndexCheck(n *node, tup *tupleVal, items []value) error {
	msg := ""
	i, ok := items[0].(int)
	switch {
	case len(items) != 1 || !ok:
		msg = "tuple indices must be integers or slices"
	case i < -len(tup.items) || i >= len(tup.items):
		msg = "tuple index out of range"
	default:
		return nil
	}
	return &failure{op: ev.opText(n.x) + ev.src[n.bracket:n.end], pos: n.bracket, end: n.end, msg: msg, dtype: tensor.F32}
}

// subscripts evaluates the items of x[...]: values, and a:b:c as sliceVal.
func (ev *evaluator) subscripts(n *node) ([]value, error) {
	var items []value
	for _, it := range n.items {
		if it.kind == nSlice {
			s := sliceVal{}
			for i, part := range []*node{it.lo, it.hi, it.step} {
				if part == nil {
					continue
				}
				v, err := ev.eval(part)
				if err != nil {
					return nil, err
				}
				var p *int
				switch pv := v.(type) {
				case int:
					p = &pv
				case noneVal:
				default:
					return nil, ev.fail(n, tensor.F32, errors.New("slice indices must be integers or None"))
				}
				switch i {
				case 0:
					s.lo = p
				case 1:
					s.hi = p
				default:
					s.step = p
				}
			}
			items = append(items, s)
			continue
		}
		v, err := ev.eval(it)
		if err != nil {
			return nil, err
		}
		items = append(items, v)
	}
	return items, nil
}
