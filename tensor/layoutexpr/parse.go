package layoutexpr

import "fmt"

// The parser builds a small AST of the Python subset `infer layout`
// accepts (see doc.go for the grammar). Every node keeps its source range,
// so a row's op text and an error's column come from the program itself.

type nodeKind uint8

const (
	nInt      nodeKind = iota
	nFloat             // a float literal
	nName              // a variable, a constructor, None, True, False, torch
	nAttr              // x.name without a call: .T, .mT, torch.float16
	nCall              // f(args) or x.name(args) (method is true)
	nIndex             // x[items]
	nTuple             // (a, b) or a bare a, b in a subscript
	nList              // [a, b]
	nBin               // x op y
	nUnary             // -x, +x
	nSlice             // a:b:c inside a subscript
	nEllipsis          // ...
)

type node struct {
	kind     nodeKind
	pos, end int // source range [pos, end)
	n        int
	f        float64
	name     string // nName, nAttr, method name of a nCall
	namePos  int    // where a method or attribute name starts
	op       string // nBin, nUnary
	method   bool   // nCall: x.name(...)
	x, y     *node  // receiver / callee / left operand; right operand
	args     []*node
	kws      []kwArg
	items    []*node // nIndex, nTuple, nList
	lo, hi   *node   // nSlice parts (nil when omitted)
	step     *node
	bracket  int // nIndex: position of '['
	// ppos, pend: the range including parentheses written around the
	// node ((a + b) * c shows "(a + b) * c"); 0, 0 when there are none.
	ppos, pend int
}

// outer returns n's source range including its parentheses.
func (n *node) outer() (int, int) {
	if n.pend > 0 {
		return n.ppos, n.pend
	}
	return n.pos, n.end
}

type kwArg struct {
	name string
	pos  int
	val  *node
}

// stmt is one statement: an expression, or targets = expression.
type stmt struct {
	targets   []string
	targetPos []int
	expr      *node
	pos, end  int
	paren     bool // the targets were written in parentheses
}

type parser struct {
	src   string
	toks  []token
	i     int
	depth int
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) peekAt(k int) token {
	if p.i+k < len(p.toks) {
		return p.toks[p.i+k]
	}
	return p.toks[len(p.toks)-1]
}
func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}
func (p *parser) is(op string) bool {
	t := p.peek()
	return t.kind == tokOp && t.text == op
}
func (p *parser) errAt(pos int, format string, args ...any) error {
	return &SyntaxError{p.src, pos, fmt.Sprintf(format, args...)}
}
func (p *parser) expect(op string) (token, error) {
	if !p.is(op) {
		return token{}, p.errAt(p.peek().pos, "expected %q, found %v", op, p.peek())
	}
	return p.next(), nil
}

// parseProgram parses src into statements.
func parseProgram(src string) ([]stmt, error) {
	if len(src) > MaxProgramLen {
		return nil, &SyntaxError{src, MaxProgramLen, fmt.Sprintf("program longer than %d bytes", MaxProgramLen)}
	}
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{src: src, toks: toks}
	var stmts []stmt
	for {
		for p.peek().kind == tokEnd {
			p.next()
		}
		if p.peek().kind == tokEOF {
			break
		}
		s, err := p.statement()
		if err != nil {
			return nil, err
		}
		if len(stmts) == MaxStatements {
			return nil, p.errAt(s.pos, "more than %d statements", MaxStatements)
		}
		stmts = append(stmts, s)
		if t := p.peek(); t.kind != tokEnd && t.kind != tokEOF {
			if t.kind == tokName || t.kind == tokInt || t.kind == tokFloat {
				return nil, p.errAt(t.pos, "expected '.' and a method, an operator or the end of the statement, found %v", t)
			}
			return nil, p.errAt(t.pos, "expected the end of the statement, found %v", t)
		}
	}
	if len(stmts) == 0 {
		return nil, p.errAt(0, "empty program: start with a constructor such as empty(2,3,4), arange(12) or as_strided((2,3),(3,1),0)")
	}
	return stmts, nil
}

// statement parses `a, b = expr`, `(a, b) = expr`, `x = expr` or `expr`.
func (p *parser) statement() (stmt, error) {
	s := stmt{pos: p.peek().pos}
	// Look ahead for NAME {, NAME} [,] '=' (optionally in parentheses).
	k, paren := 0, false
	if p.peekAt(0).kind == tokOp && p.peekAt(0).text == "(" {
		k, paren = 1, true
	}
	var names []string
	var poss []int
	unpack := paren
	for {
		t := p.peekAt(k)
		if t.kind != tokName {
			break
		}
		names, poss = append(names, t.text), append(poss, t.pos)
		k++
		if n := p.peekAt(k); n.kind == tokOp && n.text == "," {
			k++
			unpack = true
			continue
		}
		break
	}
	if paren {
		if n := p.peekAt(k); n.kind == tokOp && n.text == ")" {
			k++
		} else {
			names = nil
		}
	}
	if n := p.peekAt(k); len(names) > 0 && n.kind == tokOp && n.text == "=" {
		for i, nm := range names {
			if reserved[nm] {
				return s, p.errAt(poss[i], "cannot assign to %s", nm)
			}
		}
		s.targets, s.targetPos, s.paren = names, poss, unpack
		p.i += k + 1
	}
	e, err := p.expr()
	if err != nil {
		return s, err
	}
	s.expr, s.end = e, e.end
	if p.is("=") {
		return s, p.errAt(p.peek().pos, "cannot assign to an expression (targets are names: x = ..., or q, k, v = ...)")
	}
	return s, nil
}

// reserved names cannot be assigned to.
var reserved = map[string]bool{"torch": true, "None": true, "True": true, "False": true}

func (p *parser) enter(pos int) error {
	p.depth++
	if p.depth > maxDepth {
		return p.errAt(pos, "expression nested deeper than %d", maxDepth)
	}
	return nil
}

// expr = term { ('+'|'-') term }
func (p *parser) expr() (*node, error) {
	if err := p.enter(p.peek().pos); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	x, err := p.term()
	if err != nil {
		return nil, err
	}
	for p.is("+") || p.is("-") {
		op := p.next().text
		y, err := p.term()
		if err != nil {
			return nil, err
		}
		x = binNode(op, x, y)
	}
	return x, nil
}

// term = factor { ('*'|'/'|'//'|'@') factor }
func (p *parser) term() (*node, error) {
	x, err := p.factor()
	if err != nil {
		return nil, err
	}
	for p.is("*") || p.is("/") || p.is("@") || p.is("//") {
		op := p.next().text
		y, err := p.factor()
		if err != nil {
			return nil, err
		}
		x = binNode(op, x, y)
	}
	return x, nil
}

// factor = ('-'|'+') factor | power
func (p *parser) factor() (*node, error) {
	if p.is("-") || p.is("+") {
		t := p.next()
		if err := p.enter(t.pos); err != nil {
			return nil, err
		}
		defer func() { p.depth-- }()
		x, err := p.factor()
		if err != nil {
			return nil, err
		}
		// Fold -literal so that view(-1) is an integer argument.
		if t.text == "-" && x.kind == nInt {
			return &node{kind: nInt, n: -x.n, pos: t.pos, end: x.end}, nil
		}
		if t.text == "-" && x.kind == nFloat {
			return &node{kind: nFloat, f: -x.f, pos: t.pos, end: x.end}, nil
		}
		_, end := x.outer()
		return &node{kind: nUnary, op: t.text, x: x, pos: t.pos, end: end}, nil
	}
	return p.power()
}

// power = postfix ['**' factor]
func (p *parser) power() (*node, error) {
	x, err := p.postfix()
	if err != nil {
		return nil, err
	}
	if p.is("**") {
		p.next()
		y, err := p.factor()
		if err != nil {
			return nil, err
		}
		x = binNode("**", x, y)
	}
	return x, nil
}

// postfix = atom { '.' name ['(' args ')'] | '(' args ')' | '[' subscript ']' }
func (p *parser) postfix() (*node, error) {
	x, err := p.atom()
	if err != nil {
		return nil, err
	}
	for {
		xpos, _ := x.outer() // (a + b).view(...) starts at the parenthesis
		switch {
		case p.is("."):
			p.next()
			t := p.next()
			if t.kind != tokName {
				return nil, p.errAt(t.pos, "expected a method name after '.', found %v", t)
			}
			if p.is("(") {
				c, err := p.callArgs(&node{kind: nCall, method: true, x: x, name: t.text, namePos: t.pos, pos: xpos})
				if err != nil {
					return nil, err
				}
				x = c
			} else {
				x = &node{kind: nAttr, x: x, name: t.text, namePos: t.pos, pos: xpos, end: t.pos + len(t.text)}
			}
		case p.is("("):
			if x.kind != nName {
				return nil, p.errAt(p.peek().pos, "only names and methods can be called")
			}
			c, err := p.callArgs(&node{kind: nCall, x: x, name: x.name, namePos: x.pos, pos: x.pos})
			if err != nil {
				return nil, err
			}
			x = c
		case p.is("["):
			b := p.next()
			if err := p.enter(b.pos); err != nil {
				return nil, err
			}
			items, err := p.subscripts()
			p.depth--
			if err != nil {
				return nil, err
			}
			e, err := p.expect("]")
			if err != nil {
				return nil, err
			}
			x = &node{kind: nIndex, x: x, items: items, pos: xpos, end: e.pos + 1, bracket: b.pos}
		default:
			return x, nil
		}
	}
}

func (p *parser) callArgs(c *node) (*node, error) {
	open := p.next()
	if err := p.enter(open.pos); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	for !p.is(")") {
		if t := p.peek(); t.kind == tokName && p.peekAt(1).kind == tokOp && p.peekAt(1).text == "=" {
			p.i += 2
			v, err := p.expr()
			if err != nil {
				return nil, err
			}
			c.kws = append(c.kws, kwArg{name: t.text, pos: t.pos, val: v})
		} else {
			if len(c.kws) > 0 {
				return nil, p.errAt(t.pos, "positional argument follows keyword argument")
			}
			v, err := p.expr()
			if err != nil {
				return nil, err
			}
			c.args = append(c.args, v)
		}
		if p.is(",") {
			p.next()
			continue
		}
		if !p.is(")") {
			return nil, p.errAt(p.peek().pos, "expected ',' or ')', found %v", p.peek())
		}
	}
	c.end = p.next().pos + 1
	return c, nil
}

// subscripts parses the inside of x[...]: items separated by commas, each
// an expression, a slice a:b:c, '...' or None.
func (p *parser) subscripts() ([]*node, error) {
	var items []*node
	for !p.is("]") {
		it, err := p.subscript()
		if err != nil {
			return nil, err
		}
		items = append(items, it)
		if p.is(",") {
			p.next()
			continue
		}
		if !p.is("]") {
			return nil, p.errAt(p.peek().pos, "expected ',' or ']', found %v", p.peek())
		}
	}
	if len(items) == 0 {
		return nil, p.errAt(p.peek().pos, "empty subscript")
	}
	return items, nil
}

func (p *parser) subscript() (*node, error) {
	start := p.peek().pos
	s := &node{kind: nSlice, pos: start}
	var err error
	if !p.is(":") {
		if s.lo, err = p.expr(); err != nil {
			return nil, err
		}
		if !p.is(":") {
			return s.lo, nil
		}
	}
	p.next() // ':'
	if !p.is(":") && !p.is(",") && !p.is("]") {
		if s.hi, err = p.expr(); err != nil {
			return nil, err
		}
	}
	if p.is(":") {
		p.next()
		if !p.is(",") && !p.is("]") {
			if s.step, err = p.expr(); err != nil {
				return nil, err
			}
		}
	}
	s.end = p.peek().pos
	return s, nil
}

// atom = int | float | name | '...' | '(' expr ')' | '(' [expr {',' expr}] ')' | '[' ... ']'
func (p *parser) atom() (*node, error) {
	t := p.next()
	switch t.kind {
	case tokInt:
		return &node{kind: nInt, n: t.n, pos: t.pos, end: t.pos + len(t.text)}, nil
	case tokFloat:
		return &node{kind: nFloat, f: t.f, pos: t.pos, end: t.pos + len(t.text)}, nil
	case tokName:
		return &node{kind: nName, name: t.text, pos: t.pos, end: t.pos + len(t.text)}, nil
	case tokOp:
		switch t.text {
		case "...":
			return &node{kind: nEllipsis, pos: t.pos, end: t.pos + 3}, nil
		case "(", "[":
			if err := p.enter(t.pos); err != nil {
				return nil, err
			}
			defer func() { p.depth-- }()
			closer, kind := ")", nTuple
			if t.text == "[" {
				closer, kind = "]", nList
			}
			n := &node{kind: kind, pos: t.pos}
			comma := false
			for !p.is(closer) {
				e, err := p.expr()
				if err != nil {
					return nil, err
				}
				n.items = append(n.items, e)
				if p.is(",") {
					p.next()
					comma = true
					continue
				}
				if !p.is(closer) {
					return nil, p.errAt(p.peek().pos, "expected ',' or %q, found %v", closer, p.peek())
				}
			}
			n.end = p.next().pos + 1
			if kind == nTuple && len(n.items) == 1 && !comma {
				in := n.items[0] // (expr) is expr
				in.ppos, in.pend = n.pos, n.end
				return in, nil
			}
			return n, nil
		}
	}
	return nil, p.errAt(t.pos, "expected a value (a number, a name, a tuple or a constructor such as empty(2,3)), found %v", t)
}

func binNode(op string, x, y *node) *node {
	pos, _ := x.outer()
	_, end := y.outer()
	return &node{kind: nBin, op: op, x: x, y: y, pos: pos, end: end}
}
