package layoutexpr

import (
	"fmt"
	"slices"
	"strings"

	"github.com/stride-lm/stride/tensor"
)

// callCtx is one call being evaluated: its receiver (nil for a
// constructor), its evaluated arguments, and their binding to parameter
// names once bind has run.
type callCtx struct {
	name   string
	x      *tensor.Tensor
	args   []value
	kwName []string
	kwVal  []value
	b      map[string]value
	// alias is set by view(dtype): the result's storage reinterprets it.
	alias *tensor.Storage
}

// bind matches the arguments to parameter names, Python-style: params
// lists the positional-or-keyword names in order; kwOnly the keyword-only
// ones.
func (c *callCtx) bind(params []string, kwOnly ...string) error {
	c.b = map[string]value{}
	if len(c.args) > len(params) {
		return fmt.Errorf("%s() takes %d positional arguments but %d were given", c.name, len(params), len(c.args))
	}
	for i, a := range c.args {
		c.b[params[i]] = a
	}
	for i, k := range c.kwName {
		if !slices.Contains(params, k) && !slices.Contains(kwOnly, k) {
			return fmt.Errorf("%s() got an unexpected keyword argument '%s'", c.name, k)
		}
		if _, dup := c.b[k]; dup {
			return fmt.Errorf("%s() got multiple values for argument '%s'", c.name, k)
		}
		c.b[k] = c.kwVal[i]
	}
	return nil
}

// sizes binds a variadic size argument: f(2, 3) and f((2, 3)) are the
// same call in PyTorch. Keyword-only parameters may follow.
func (c *callCtx) sizes(param string, kwOnly ...string) ([]int, error) {
	pos := c.args
	c.args = nil
	if err := c.bind(nil, append(kwOnly, param)...); err != nil {
		return nil, err
	}
	if v, ok := c.b[param]; ok {
		if len(pos) > 0 {
			return nil, fmt.Errorf("%s() got multiple values for argument '%s'", c.name, param)
		}
		return c.intsOf(param, v)
	}
	if len(pos) == 1 {
		if _, isTup := pos[0].(*tupleVal); isTup {
			return c.intsOf(param, pos[0])
		}
	}
	if len(pos) == 0 {
		return nil, fmt.Errorf("%s() missing 1 required positional arguments: \"%s\"", c.name, param)
	}
	out := make([]int, 0, len(pos))
	for _, p := range pos {
		n, ok := p.(int)
		if !ok {
			return nil, fmt.Errorf("%s(): argument '%s' must be tuple of ints, but found element of type %s", c.name, param, typeName(p))
		}
		out = append(out, n)
	}
	if len(out) > maxDims {
		return nil, fmt.Errorf("%s(): more than %d sizes", c.name, maxDims)
	}
	return out, nil
}

func (c *callCtx) has(name string) bool {
	v, ok := c.b[name]
	if !ok {
		return false
	}
	_, none := v.(noneVal)
	return !none
}

func (c *callCtx) missing(name string) error {
	return fmt.Errorf("%s() missing required argument '%s'", c.name, name)
}

func (c *callCtx) badType(name, want string, v value) error {
	return fmt.Errorf("%s(): argument '%s' must be %s, not %s", c.name, name, want, typeName(v))
}

// int returns an int argument; def is used when it is absent (nil def:
// required).
func (c *callCtx) int(name string, def *int) (int, error) {
	v, ok := c.b[name]
	if !ok {
		if def == nil {
			return 0, c.missing(name)
		}
		return *def, nil
	}
	switch x := v.(type) {
	case int:
		return x, nil
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	}
	return 0, c.badType(name, "int", v)
}

// intArgs binds the call to params, all ints, and returns their values in
// order. As in a Python signature the last len(defaults) params default to
// defaults and the others are required: transpose(dim0, dim1) is
// intArgs([]string{"dim0", "dim1"}), chunk(chunks, dim=0) is
// intArgs([]string{"chunks", "dim"}, 0).
func (c *callCtx) intArgs(params []string, defaults ...int) ([]int, error) {
	if err := c.bind(params); err != nil {
		return nil, err
	}
	out := make([]int, len(params))
	first := len(params) - len(defaults)
	for i, name := range params {
		var def *int
		if i >= first {
			def = &defaults[i-first]
		}
		n, err := c.int(name, def)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

// intTuples returns the bound tuple-of-ints arguments names, in order,
// each required.
func (c *callCtx) intTuples(names ...string) ([][]int, error) {
	out := make([][]int, len(names))
	for i, name := range names {
		v, err := c.ints(name)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// optInt returns an int argument that may be None or absent (ok false).
func (c *callCtx) optInt(name string) (n int, ok bool, err error) {
	if !c.has(name) {
		return 0, false, nil
	}
	n, err = c.int(name, nil)
	return n, err == nil, err
}

func (c *callCtx) intsOf(name string, v value) ([]int, error) {
	switch x := v.(type) {
	case int:
		return []int{x}, nil
	case *tupleVal:
		if len(x.items) > maxDims {
			return nil, fmt.Errorf("%s(): argument '%s' has more than %d elements", c.name, name, maxDims)
		}
		out := make([]int, len(x.items))
		for i, it := range x.items {
			n, ok := it.(int)
			if !ok {
				return nil, fmt.Errorf("%s(): argument '%s' must be tuple of ints, but found element of type %s at pos %d", c.name, name, typeName(it), i)
			}
			out[i] = n
		}
		return out, nil
	}
	return nil, c.badType(name, "tuple of ints", v)
}

// ints returns a tuple-of-ints argument (one int counts as a 1-tuple).
func (c *callCtx) ints(name string) ([]int, error) {
	v, ok := c.b[name]
	if !ok {
		return nil, c.missing(name)
	}
	return c.intsOf(name, v)
}

func (c *callCtx) dtype(name string, def tensor.DType) (tensor.DType, error) {
	v, ok := c.b[name]
	if !ok {
		return def, nil
	}
	switch x := v.(type) {
	case tensor.DType:
		return x, nil
	case noneVal:
		return def, nil
	}
	return 0, c.badType(name, "torch.dtype", v)
}

func (c *callCtx) memFormat(name string, def memFormat) (memFormat, error) {
	v, ok := c.b[name]
	if !ok {
		return def, nil
	}
	switch x := v.(type) {
	case memFormat:
		return x, nil
	case noneVal:
		return def, nil
	}
	return "", c.badType(name, "torch.memory_format", v)
}

func (c *callCtx) tensorArg(name string) (*tensor.Tensor, error) {
	v, ok := c.b[name]
	if !ok {
		return nil, c.missing(name)
	}
	if tv, ok := v.(*tval); ok {
		return tv.t, nil
	}
	return nil, c.badType(name, "Tensor", v)
}

func (ev *evaluator) call(n *node) (value, error) {
	var recv value
	if n.method {
		var err error
		if recv, err = ev.eval(n.x); err != nil {
			return nil, err
		}
	}
	c, err := ev.callArgs(n)
	if err != nil {
		return nil, err
	}
	_, isTorch := recv.(torchNS)
	if !n.method || isTorch {
		if ctor, ok := constructors[n.name]; ok && !(n.name == "as_strided" && len(c.args) > 0 && isTensor(c.args[0])) {
			t, err := ctor(c)
			if err != nil {
				return nil, ev.fail(n, tensor.F32, err)
			}
			v, err := ev.record(ev.opText(n), t, true)
			if err != nil {
				return nil, ev.fail(n, t.DType(), err)
			}
			return v, nil
		}
		// torch.f(x, ...) is x.f(...).
		if len(c.args) == 0 || !isTensor(c.args[0]) {
			return nil, ev.fail(n, tensor.F32, fmt.Errorf("%s(): expected a Tensor as the first argument", n.name))
		}
		recv, c.args = c.args[0], c.args[1:]
	}
	if recv, err := ev.use(recv); err != nil {
		return nil, err
	} else if tv, ok := recv.(*tval); ok {
		c.x = tv.t
	} else {
		return nil, ev.fail(n, tensor.F32, fmt.Errorf("'%s' object has no attribute '%s'", typeName(recv), n.name))
	}
	m := methods[n.name]
	if m == nil {
		return nil, ev.fail(n, c.x.DType(), fmt.Errorf("'Tensor' object has no attribute '%s'", n.name))
	}
	ev.input = c.x
	res, err := m(c)
	if err != nil {
		return nil, ev.fail(n, c.x.DType(), err)
	}
	switch r := res.(type) {
	case *tensor.Tensor:
		if r == nil {
			return nil, ev.fail(n, c.x.DType(), fmt.Errorf("%s() returned nothing", n.name))
		}
		if alias := c.alias; alias != nil {
			ev.alias[r.Storage()] = ev.root(alias)
		}
		return ev.recordNode(n, r)
	case []*tensor.Tensor:
		op := ev.opText(n)
		tup := &tupleVal{op: op}
		for i, t := range r {
			if err := checkBounds(t); err != nil {
				return nil, ev.fail(n, t.DType(), err)
			}
			tup.items = append(tup.items, &tval{t: t, pending: fmt.Sprintf("%s[%d]", op, i)})
		}
		return tup, nil
	}
	return res, nil
}

func isTensor(v value) bool { _, ok := v.(*tval); return ok }

// checkNames rejects, before anything runs, calls to constructors and
// methods that do not exist, so a typo is a positioned syntax error.
func checkNames(src string, n *node) error {
	if n == nil {
		return nil
	}
	switch n.kind {
	case nCall:
		torchRecv := n.method && n.x.kind == nName && n.x.name == "torch"
		switch {
		case !n.method:
			if _, ok := constructors[n.name]; !ok {
				return &SyntaxError{src, n.namePos, fmt.Sprintf("unknown constructor %q (want %s)", n.name, ctorList())}
			}
		case torchRecv:
			if _, ok := constructors[n.name]; !ok && methods[n.name] == nil {
				return &SyntaxError{src, n.namePos, fmt.Sprintf("unknown function torch.%s", n.name)}
			}
		case n.name == "T" || n.name == "mT":
			return &SyntaxError{src, n.namePos + len(n.name), fmt.Sprintf("%s is an attribute: write .%s without parentheses", n.name, n.name)}
		case methods[n.name] == nil:
			return &SyntaxError{src, n.namePos, fmt.Sprintf("unknown tensor method %q", n.name)}
		}
		if n.method && !torchRecv {
			if err := checkNames(src, n.x); err != nil {
				return err
			}
		}
		for _, a := range n.args {
			if err := checkNames(src, a); err != nil {
				return err
			}
		}
		for _, k := range n.kws {
			if err := checkNames(src, k.val); err != nil {
				return err
			}
		}
		return nil
	case nAttr:
		if !(n.x.kind == nName && n.x.name == "torch") && methods[n.name] != nil {
			return &SyntaxError{src, n.namePos + len(n.name), fmt.Sprintf("expected \"(\": %s is a method, write .%s(...)", n.name, n.name)}
		}
	}
	for _, c := range []*node{n.x, n.y, n.lo, n.hi, n.step} {
		if err := checkNames(src, c); err != nil {
			return err
		}
	}
	for _, it := range n.items {
		if err := checkNames(src, it); err != nil {
			return err
		}
	}
	return nil
}

func ctorList() string {
	names := make([]string, 0, len(constructors))
	for k := range constructors {
		names = append(names, k)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// callArgs evaluates a call's arguments, left to right as Python does.
func (ev *evaluator) callArgs(n *node) (*callCtx, error) {
	c := &callCtx{name: n.name}
	for _, a := range n.args {
		v, err := ev.eval(a)
		if err != nil {
			return nil, err
		}
		if v, err = ev.use(v); err != nil {
			return nil, err
		}
		c.args = append(c.args, v)
	}
	for _, k := range n.kws {
		v, err := ev.eval(k.val)
		if err != nil {
			return nil, err
		}
		if v, err = ev.use(v); err != nil {
			return nil, err
		}
		c.kwName, c.kwVal = append(c.kwName, k.name), append(c.kwVal, v)
	}
	return c, nil
}
