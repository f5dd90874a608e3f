package tensor

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// This file is the stride calculator behind `infer layout EXPR`: it parses
// a PyTorch-style chain such as
//
//	empty(2,3,4).permute(2,0,1).view(4,6)
//	arange(12).view(3,4).t().contiguous()
//	as_strided((2,3),(1,2),0).expand(4,2,3)
//
// evaluates it on meta tensors (so [2,32,4096,4096] costs nothing), and
// reports after every step the layout PyTorch would produce: shape,
// strides, offset, contiguity, whether the storage is shared with an
// earlier step or new, and the bytes a copy costs.
//
// Grammar (whitespace is free between tokens):
//
//	chain  = ["torch" "."] call { "." (call | "T" | "mT") }
//	call   = name "(" [ arg { "," arg } [","] ] ")"
//	arg    = [ name "=" ] value
//	value  = int | name { "." name } | "(" [ints] ")" | "[" [ints] "]"
//
// Integers may be negative and are bounded by 2^53 in magnitude. Syntax
// errors, unknown ops and ill-typed arguments are returned as a
// *LayoutSyntaxError naming the column; a shape op that fails (a view
// that needs a copy, an expand of a non-singleton dim) becomes the Error
// of the last step, with PyTorch's message, and evaluation stops there.

// Limits that keep a hostile expression cheap: meta tensors make sizes
// free, but every step stores its shape.
const (
	maxLayoutExprLen   = 4096
	maxLayoutExprSteps = 256
)

// LayoutStep is one step of an evaluated layout expression.
type LayoutStep struct {
	Step       int    // 1-based position in the chain
	Op         string // the step's source text: "arange(12)", ".view(3,4)"
	DType      DType
	Shape      []int
	Strides    []int
	Offset     int
	Contiguous bool
	// Storage is "new" when the step produced a fresh storage (a
	// constructor or a copy) and "shared(step N)" when it views the
	// storage created by step N.
	Storage string
	// AllocatedBytes is the size of the new storage, 0 when shared.
	AllocatedBytes int64
	// CopiedBytes is what the step copies: numel·itemsize for contiguous,
	// clone, to, or a reshape that cannot be a view; 0 for views and
	// constructors.
	CopiedBytes int64
	// Error is PyTorch's error for a failing step ("" on success). Only
	// the last step can have one; its layout fields are then empty.
	Error string
}

// LayoutSyntaxError reports an expression that cannot be evaluated at
// all: a syntax error, an unknown op or a badly typed argument. Pos is the
// 0-based byte offset of the offending token in Expr.
type LayoutSyntaxError struct {
	Expr string
	Pos  int
	Msg  string
}

// Error implements error, naming the 1-based column.
func (e *LayoutSyntaxError) Error() string {
	return fmt.Sprintf("layout expression: column %d: %s", e.Pos+1, e.Msg)
}

// EvalLayoutExpr parses and evaluates expr on meta tensors (see the file
// comment for the grammar and the ops). It returns a *LayoutSyntaxError
// when expr cannot be parsed or an op or argument is unknown; otherwise
// the steps, the last of which carries Error if a shape op failed.
func EvalLayoutExpr(expr string) ([]LayoutStep, error) {
	calls, err := parseLayoutExpr(expr)
	if err != nil {
		return nil, err
	}
	bound := make([]boundCall, len(calls))
	for i, c := range calls {
		if bound[i], err = bindCall(expr, c, i == 0); err != nil {
			return nil, err
		}
	}
	var (
		steps   []LayoutStep
		cur     *Tensor
		created = map[*Storage]int{}
	)
	for i, b := range bound {
		step := LayoutStep{Step: i + 1, Op: strings.TrimSpace(expr[b.call.pos:b.call.end])}
		next, err := b.spec.eval(cur, b.args)
		if err == nil {
			err = checkLayoutBounds(b.spec.name, next)
		}
		if err != nil {
			step.Error = err.Error()
			step.DType = F32
			if cur != nil {
				step.DType = cur.DType()
			}
			return append(steps, step), nil
		}
		step.DType = next.DType()
		step.Shape, step.Strides, step.Offset = next.Shape(), next.Strides(), next.Offset()
		step.Contiguous = next.IsContiguous()
		if n, ok := created[next.st]; ok {
			step.Storage = fmt.Sprintf("shared(step %d)", n)
		} else {
			created[next.st] = step.Step
			step.Storage = "new"
			step.AllocatedBytes = int64(next.st.Bytes())
			if cur != nil { // a method that made a new storage copied into it
				step.CopiedBytes = int64(next.Nbytes())
			}
		}
		steps = append(steps, step)
		cur = next
	}
	return steps, nil
}

// checkLayoutBounds keeps every stride and the offset within 2^53, so the
// next step's arithmetic (offset + start·stride, stride·step) cannot
// overflow an int. Only size-1 dims, whose stride PyTorch never reads, can
// get there, by slicing with huge steps.
func checkLayoutBounds(op string, t *Tensor) error {
	if t.offset < 0 || t.offset > maxNumel {
		return errorf(op, "storage offset %d is outside [0, 2^53]", t.offset)
	}
	for i, s := range t.strides {
		if s < 0 || s > maxNumel || t.shape[i] < 0 {
			return errorf(op, "size %s with stride %s is outside the supported range [0, 2^53]", FormatInts(t.shape), FormatInts(t.strides))
		}
	}
	return nil
}

// ---- lexer ----

type tokKind uint8

const (
	tokEOF tokKind = iota
	tokInt
	tokName
	tokPunct
)

type token struct {
	kind tokKind
	text string
	n    int // value of an int
	pos  int
}

func (t token) String() string {
	if t.kind == tokEOF {
		return "end of expression"
	}
	return strconv.Quote(t.text)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isNameStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func lexLayout(s string) ([]token, error) {
	var toks []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case isDigit(c) || ((c == '-' || c == '+') && i+1 < len(s) && isDigit(s[i+1])):
			j := i + 1
			for j < len(s) && isDigit(s[j]) {
				j++
			}
			v, err := strconv.ParseInt(s[i:j], 10, 64)
			if err != nil || v > maxNumel || v < -maxNumel {
				return nil, &LayoutSyntaxError{s, i, fmt.Sprintf("integer %s is out of range (|n| must be at most 2^53)", s[i:j])}
			}
			toks = append(toks, token{tokInt, s[i:j], int(v), i})
			i = j
		case isNameStart(c):
			j := i + 1
			for j < len(s) && (isNameStart(s[j]) || isDigit(s[j])) {
				j++
			}
			toks = append(toks, token{kind: tokName, text: s[i:j], pos: i})
			i = j
		case strings.IndexByte("()[],.=", c) >= 0:
			toks = append(toks, token{kind: tokPunct, text: s[i : i+1], pos: i})
			i++
		default:
			return nil, &LayoutSyntaxError{s, i, fmt.Sprintf("unexpected character %q", rune(c))}
		}
	}
	return append(toks, token{kind: tokEOF, pos: len(s)}), nil
}

// ---- parser ----

type valueKind uint8

const (
	valInt valueKind = iota
	valTuple
	valName
)

type value struct {
	kind valueKind
	n    int
	list []int
	name string
	pos  int
}

type callArg struct {
	name string // "" for a positional argument
	val  value
	pos  int
}

type callExpr struct {
	name     string
	args     []callArg
	attr     bool // .T or .mT: no parentheses
	pos, end int  // source range of the step, the leading '.' included
	namePos  int
}

type layoutParser struct {
	src  string
	toks []token
	i    int
}

func (p *layoutParser) peek() token { return p.toks[p.i] }
func (p *layoutParser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}
func (p *layoutParser) isPunct(s string) bool {
	t := p.peek()
	return t.kind == tokPunct && t.text == s
}
func (p *layoutParser) errAt(t token, format string, args ...any) error {
	return &LayoutSyntaxError{p.src, t.pos, fmt.Sprintf(format, args...)}
}
func (p *layoutParser) expect(s string) (token, error) {
	if !p.isPunct(s) {
		return token{}, p.errAt(p.peek(), "expected %q, found %v", s, p.peek())
	}
	return p.next(), nil
}

func parseLayoutExpr(src string) ([]callExpr, error) {
	if len(src) > maxLayoutExprLen {
		return nil, &LayoutSyntaxError{src, maxLayoutExprLen, fmt.Sprintf("expression longer than %d bytes", maxLayoutExprLen)}
	}
	toks, err := lexLayout(src)
	if err != nil {
		return nil, err
	}
	p := &layoutParser{src: src, toks: toks}
	if p.peek().kind == tokEOF {
		return nil, p.errAt(p.peek(), "empty expression: start with a constructor such as empty(2,3,4), arange(12) or as_strided((2,3),(3,1),0)")
	}
	start := p.peek().pos
	if t := p.peek(); t.kind == tokName && t.text == "torch" && p.toks[p.i+1].kind == tokPunct && p.toks[p.i+1].text == "." {
		p.i += 2
	}
	first, err := p.call(false)
	if err != nil {
		return nil, err
	}
	first.pos = start
	calls := []callExpr{first}
	for p.isPunct(".") {
		dot := p.next()
		c, err := p.call(true)
		if err != nil {
			return nil, err
		}
		c.pos = dot.pos
		if len(calls) == maxLayoutExprSteps {
			return nil, p.errAt(dot, "more than %d steps", maxLayoutExprSteps)
		}
		calls = append(calls, c)
	}
	if t := p.peek(); t.kind != tokEOF {
		return nil, p.errAt(t, "expected '.' and a method, found %v", t)
	}
	return calls, nil
}

func (p *layoutParser) call(method bool) (callExpr, error) {
	t := p.next()
	if t.kind != tokName {
		if method {
			return callExpr{}, p.errAt(t, "expected a method name after '.', found %v", t)
		}
		return callExpr{}, p.errAt(t, "expected a constructor such as empty(...), found %v", t)
	}
	c := callExpr{name: t.text, namePos: t.pos}
	if method && (t.text == "T" || t.text == "mT") {
		if p.isPunct("(") {
			return c, p.errAt(p.peek(), "%s is an attribute: write .%s without parentheses", t.text, t.text)
		}
		c.attr = true
		c.end = t.pos + len(t.text)
		return c, nil
	}
	if _, err := p.expect("("); err != nil {
		return c, err
	}
	for !p.isPunct(")") {
		a, err := p.arg()
		if err != nil {
			return c, err
		}
		c.args = append(c.args, a)
		if p.isPunct(",") {
			p.next()
			continue
		}
		if !p.isPunct(")") {
			return c, p.errAt(p.peek(), "expected ',' or ')', found %v", p.peek())
		}
	}
	c.end = p.next().pos + 1
	return c, nil
}

func (p *layoutParser) arg() (callArg, error) {
	t := p.peek()
	if t.kind == tokName && p.toks[p.i+1].kind == tokPunct && p.toks[p.i+1].text == "=" {
		p.i += 2
		v, err := p.value()
		return callArg{name: t.text, val: v, pos: t.pos}, err
	}
	v, err := p.value()
	return callArg{val: v, pos: t.pos}, err
}

func (p *layoutParser) value() (value, error) {
	t := p.next()
	switch {
	case t.kind == tokInt:
		return value{kind: valInt, n: t.n, pos: t.pos}, nil
	case t.kind == tokName:
		name := t.text
		// Dotted names: torch.float16.
		for p.isPunct(".") && p.toks[p.i+1].kind == tokName {
			p.next()
			name += "." + p.next().text
		}
		return value{kind: valName, name: name, pos: t.pos}, nil
	case t.kind == tokPunct && (t.text == "(" || t.text == "["):
		closer := ")"
		if t.text == "[" {
			closer = "]"
		}
		v := value{kind: valTuple, list: []int{}, pos: t.pos}
		for !p.isPunct(closer) {
			e := p.next()
			if e.kind != tokInt {
				return v, p.errAt(e, "expected an integer in %s...%s, found %v", t.text, closer, e)
			}
			v.list = append(v.list, e.n)
			if p.isPunct(",") {
				p.next()
				continue
			}
			if !p.isPunct(closer) {
				return v, p.errAt(p.peek(), "expected ',' or %q, found %v", closer, p.peek())
			}
		}
		p.next()
		return v, nil
	}
	return value{}, p.errAt(t, "expected an integer, a tuple or a name, found %v", t)
}

// ---- ops ----

type paramKind uint8

const (
	pInt       paramKind = iota // an integer
	pIntOrNone                  // an integer or None
	pInts                       // a tuple of integers (or one integer)
	pDType                      // f32, float16, torch.bfloat16, ...
)

type param struct {
	name     string
	kind     paramKind
	required bool
}

// opSpec describes one constructor or method. A variadic op collects its
// positional integers into params[0], as view(2, 3) and view((2, 3)) are
// the same call in PyTorch.
type opSpec struct {
	name     string
	ctor     bool
	variadic bool
	params   []param
	eval     func(x *Tensor, a layoutArgs) (*Tensor, error)
}

// layoutArgs holds a call's bound arguments by parameter name.
type layoutArgs map[string]value

func (a layoutArgs) int(name string, def int) int {
	if v, ok := a[name]; ok && v.kind == valInt {
		return v.n
	}
	return def
}

func (a layoutArgs) ints(name string) []int {
	v, ok := a[name]
	switch {
	case !ok:
		return nil
	case v.kind == valInt:
		return []int{v.n}
	}
	return v.list
}

func (a layoutArgs) dtype() DType {
	if v, ok := a["dtype"]; ok {
		dt, _ := parseLayoutDType(v.name)
		return dt
	}
	return F32
}

func parseLayoutDType(name string) (DType, error) {
	return ParseDType(strings.TrimPrefix(name, "torch."))
}

type boundCall struct {
	call callExpr
	spec *opSpec
	args layoutArgs
}

var (
	dtypeParam = param{"dtype", pDType, false}
	dimParam   = param{"dim", pInt, true}
)

var layoutOps map[string]*opSpec

func init() {
	sizeCtor := func(name string) *opSpec {
		return &opSpec{name: name, ctor: true, variadic: true,
			params: []param{{"size", pInts, false}, dtypeParam},
			eval: func(_ *Tensor, a layoutArgs) (*Tensor, error) {
				t, err := Meta(a.dtype(), a.ints("size")...)
				return t, relabel(name, err)
			}}
	}
	reshapeLike := func(name string, f func(x *Tensor, shape []int) (*Tensor, error)) *opSpec {
		return &opSpec{name: name, variadic: true, params: []param{{"shape", pInts, false}},
			eval: func(x *Tensor, a layoutArgs) (*Tensor, error) { return f(x, a.ints("shape")) }}
	}
	transposeOp := func(name string) *opSpec {
		return &opSpec{name: name, params: []param{{"dim0", pInt, true}, {"dim1", pInt, true}},
			eval: func(x *Tensor, a layoutArgs) (*Tensor, error) {
				return x.Transpose(a.int("dim0", 0), a.int("dim1", 0))
			}}
	}
	convert := func(name string, dt DType) *opSpec {
		return &opSpec{name: name, eval: func(x *Tensor, _ layoutArgs) (*Tensor, error) { return x.To(dt) }}
	}
	ops := []*opSpec{
		sizeCtor("empty"), sizeCtor("zeros"), sizeCtor("ones"), sizeCtor("randn"), sizeCtor("rand"),
		{name: "arange", ctor: true,
			params: []param{{"start", pInt, true}, {"end", pIntOrNone, false}, {"step", pInt, false}, dtypeParam},
			eval:   evalArange},
		{name: "as_strided", ctor: true,
			params: []param{{"size", pInts, true}, {"stride", pInts, true}, {"storage_offset", pInt, false}, dtypeParam},
			eval: func(_ *Tensor, a layoutArgs) (*Tensor, error) {
				return MetaStrided(a.dtype(), a.ints("size"), a.ints("stride"), a.int("storage_offset", 0))
			}},
		reshapeLike("view", (*Tensor).viewSlice),
		reshapeLike("reshape", (*Tensor).reshapeSlice),
		{name: "permute", variadic: true, params: []param{{"dims", pInts, false}},
			eval: func(x *Tensor, a layoutArgs) (*Tensor, error) { return x.Permute(a.ints("dims")...) }},
		{name: "expand", variadic: true, params: []param{{"size", pInts, false}},
			eval: func(x *Tensor, a layoutArgs) (*Tensor, error) { return x.Expand(a.ints("size")...) }},
		{name: "squeeze", variadic: true, params: []param{{"dim", pInts, false}},
			eval: func(x *Tensor, a layoutArgs) (*Tensor, error) { return x.Squeeze(a.ints("dim")...) }},
		transposeOp("transpose"), transposeOp("swapaxes"), transposeOp("swapdims"),
		{name: "t", eval: func(x *Tensor, _ layoutArgs) (*Tensor, error) { return x.T() }},
		{name: "T", eval: evalReverseDims},
		{name: "mT", eval: func(x *Tensor, _ layoutArgs) (*Tensor, error) {
			if x.Dim() < 2 {
				return nil, errorf("mT", "tensor.mT is only supported on matrices or batches of matrices. Got %d-D tensor.", x.Dim())
			}
			return x.Transpose(-2, -1)
		}},
		{name: "slice", params: []param{dimParam, {"start", pIntOrNone, false}, {"end", pIntOrNone, false}, {"step", pInt, false}},
			eval: func(x *Tensor, a layoutArgs) (*Tensor, error) {
				dim, step := a.int("dim", 0), a.int("step", 1)
				if d, err := wrapDim("slice", dim, x.Dim()); err == nil && x.Dim() > 0 && step > 0 && x.strides[d] > maxNumel/step {
					return nil, errorf("slice", "stride %d times step %d exceeds 2^53", x.strides[d], step)
				}
				return x.Slice(dim, a.int("start", 0), a.int("end", maxNumel), step)
			}},
		{name: "narrow", params: []param{dimParam, {"start", pInt, true}, {"length", pInt, true}},
			eval: func(x *Tensor, a layoutArgs) (*Tensor, error) {
				return x.Narrow(a.int("dim", 0), a.int("start", 0), a.int("length", 0))
			}},
		{name: "select", params: []param{dimParam, {"index", pInt, true}},
			eval: func(x *Tensor, a layoutArgs) (*Tensor, error) { return x.Select(a.int("dim", 0), a.int("index", 0)) }},
		{name: "unsqueeze", params: []param{dimParam},
			eval: func(x *Tensor, a layoutArgs) (*Tensor, error) { return x.Unsqueeze(a.int("dim", 0)) }},
		{name: "unfold", params: []param{{"dimension", pInt, true}, {"size", pInt, true}, {"step", pInt, true}},
			eval: func(x *Tensor, a layoutArgs) (*Tensor, error) {
				dim, step := a.int("dimension", 0), a.int("step", 1)
				if d, err := wrapDim("unfold", dim, x.Dim()); err == nil && x.Dim() > 0 && step > 0 && x.strides[d] > maxNumel/step {
					return nil, errorf("unfold", "stride %d times step %d exceeds 2^53", x.strides[d], step)
				}
				return x.Unfold(dim, a.int("size", 0), step)
			}},
		{name: "flatten", params: []param{{"start_dim", pInt, false}, {"end_dim", pInt, false}}, eval: evalFlatten},
		{name: "as_strided", params: []param{{"size", pInts, true}, {"stride", pInts, true}, {"storage_offset", pInt, false}},
			eval: func(x *Tensor, a layoutArgs) (*Tensor, error) {
				return x.AsStrided(a.ints("size"), a.ints("stride"), a.int("storage_offset", x.offset))
			}},
		{name: "contiguous", eval: func(x *Tensor, _ layoutArgs) (*Tensor, error) { return x.Contiguous() }},
		{name: "clone", eval: func(x *Tensor, _ layoutArgs) (*Tensor, error) { return x.Clone() }},
		{name: "to", params: []param{{"dtype", pDType, true}},
			eval: func(x *Tensor, a layoutArgs) (*Tensor, error) { return x.To(a.dtype()) }},
		convert("float", F32), convert("half", F16), convert("bfloat16", BF16),
	}
	layoutOps = map[string]*opSpec{}
	for _, o := range ops {
		key := o.name
		if o.ctor {
			key = "ctor:" + key
		}
		layoutOps[key] = o
	}
}

func (t *Tensor) viewSlice(shape []int) (*Tensor, error)    { return t.View(shape...) }
func (t *Tensor) reshapeSlice(shape []int) (*Tensor, error) { return t.Reshape(shape...) }

// evalArange is torch.arange: arange(end), arange(start, end[, step]),
// with ceil((end − start)/step) elements.
func evalArange(_ *Tensor, a layoutArgs) (*Tensor, error) {
	start, end, step := 0, a.int("start", 0), a.int("step", 1)
	if v, ok := a["end"]; ok && v.kind == valInt {
		start, end = end, v.n
	}
	if step == 0 {
		return nil, errorf("arange", "step must be nonzero")
	}
	if (step > 0 && end < start) || (step < 0 && end > start) {
		return nil, errorf("arange", "upper bound and larger bound inconsistent with step sign")
	}
	span, s := end-start, step
	if s < 0 {
		span, s = -span, -s
	}
	t, err := Meta(a.dtype(), (span+s-1)/s)
	return t, relabel("arange", err)
}

// relabel reports a constructor's ShapeError under the name the user
// wrote (empty, arange) rather than the meta constructor behind it.
func relabel(op string, err error) error {
	var se *ShapeError
	if errors.As(err, &se) {
		return errorf(op, "%s", se.Msg)
	}
	return err
}

// evalReverseDims is Tensor.T: all dims reversed (t() for a matrix).
func evalReverseDims(x *Tensor, _ layoutArgs) (*Tensor, error) {
	dims := make([]int, x.Dim())
	for i := range dims {
		dims[i] = x.Dim() - 1 - i
	}
	return x.Permute(dims...)
}

// evalFlatten merges dims start_dim..end_dim into one, by Reshape (a view
// when those dims are contiguous with each other, a copy otherwise).
func evalFlatten(x *Tensor, a layoutArgs) (*Tensor, error) {
	if x.Dim() == 0 {
		return x.Reshape(1)
	}
	s, err := wrapDim("flatten", a.int("start_dim", 0), x.Dim())
	if err != nil {
		return nil, err
	}
	e, err := wrapDim("flatten", a.int("end_dim", -1), x.Dim())
	if err != nil {
		return nil, err
	}
	if s > e {
		return nil, errorf("flatten", "flatten() has invalid args: start_dim cannot come after end_dim")
	}
	shape := append(append(x.Shape()[:s:s], -1), x.shape[e+1:]...)
	if x.Numel() == 0 {
		n := 1
		for _, d := range x.shape[s : e+1] {
			n *= d
		}
		shape[s] = n
	}
	return x.Reshape(shape...)
}

// bindCall matches a call's arguments to its op's parameters and checks
// their types, before anything is evaluated.
func bindCall(src string, c callExpr, first bool) (boundCall, error) {
	errAt := func(pos int, format string, args ...any) error {
		return &LayoutSyntaxError{src, pos, fmt.Sprintf(format, args...)}
	}
	namePos := c.namePos
	key := c.name
	if first {
		key = "ctor:" + key
	}
	spec, ok := layoutOps[key]
	if !ok || (c.attr != (c.name == "T" || c.name == "mT")) {
		if first {
			return boundCall{}, errAt(namePos, "unknown constructor %q (want empty, zeros, ones, randn, rand, arange or as_strided)", c.name)
		}
		return boundCall{}, errAt(namePos, "unknown tensor method %q", c.name)
	}
	args := layoutArgs{}
	var pos []callArg
	for _, a := range c.args {
		if a.name == "" {
			pos = append(pos, a)
		}
	}
	if spec.variadic && len(pos) > 1 {
		// view(2, 3) is view((2, 3)): fold the integers into one tuple.
		v := value{kind: valTuple, pos: pos[0].pos}
		for _, a := range pos {
			if a.val.kind != valInt {
				return boundCall{}, errAt(a.pos, "%s() takes a tuple or integers, not a mix", c.name)
			}
			v.list = append(v.list, a.val.n)
		}
		pos = []callArg{{val: v, pos: v.pos}}
	}
	for i, a := range pos {
		if i >= len(spec.params) || spec.params[i].kind == pDType {
			return boundCall{}, errAt(a.pos, "%s() takes %d positional arguments but %d were given", c.name, countPositional(spec), len(pos))
		}
		p := spec.params[i]
		if err := checkArgType(c.name, p, a.val); err != nil {
			return boundCall{}, errAt(a.pos, "%v", err)
		}
		args[p.name] = a.val
	}
	for _, a := range c.args {
		if a.name == "" {
			continue
		}
		var p *param
		for i := range spec.params {
			if spec.params[i].name == a.name {
				p = &spec.params[i]
			}
		}
		if p == nil {
			return boundCall{}, errAt(a.pos, "%s() got an unexpected keyword argument '%s'", c.name, a.name)
		}
		if _, dup := args[a.name]; dup {
			return boundCall{}, errAt(a.pos, "%s() got multiple values for argument '%s'", c.name, a.name)
		}
		if err := checkArgType(c.name, *p, a.val); err != nil {
			return boundCall{}, errAt(a.pos, "%v", err)
		}
		args[a.name] = a.val
	}
	for _, p := range spec.params {
		if _, ok := args[p.name]; p.required && !ok {
			return boundCall{}, errAt(c.end-1, "%s() missing required argument '%s'", c.name, p.name)
		}
	}
	return boundCall{call: c, spec: spec, args: args}, nil
}

func countPositional(spec *opSpec) int {
	n := 0
	for _, p := range spec.params {
		if p.kind != pDType {
			n++
		}
	}
	return n
}

func checkArgType(op string, p param, v value) error {
	switch p.kind {
	case pInt:
		if v.kind == valInt {
			return nil
		}
	case pIntOrNone:
		if v.kind == valInt || (v.kind == valName && v.name == "None") {
			return nil
		}
	case pInts:
		if v.kind == valInt || v.kind == valTuple {
			return nil
		}
	case pDType:
		if v.kind == valName {
			if _, err := parseLayoutDType(v.name); err == nil {
				return nil
			}
			return fmt.Errorf("%s(): argument '%s': unknown dtype %q (want f32, f16 or bf16)", op, p.name, v.name)
		}
	}
	want := map[paramKind]string{pInt: "an int", pIntOrNone: "an int or None", pInts: "a tuple of ints", pDType: "a dtype"}[p.kind]
	return fmt.Errorf("%s(): argument '%s' must be %s", op, p.name, want)
}
