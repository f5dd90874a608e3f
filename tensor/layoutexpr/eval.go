package layoutexpr

import (
	"errors"
	"fmt"
	"strings"

	"github.com/stride-lm/stride/tensor"
)

// Limits that keep a hostile program cheap: meta tensors make sizes free,
// but every row stores its shape, and the parser recurses on brackets.
const (
	// MaxProgramLen is the longest program accepted, in bytes.
	MaxProgramLen = 1 << 20
	// MaxStatements is the most statements a program may have.
	MaxStatements = 20000
	// MaxRows is the most rows (tensor-producing steps) a program may make.
	MaxRows  = 100000
	maxDepth = 64
	maxDims  = 64
	// maxInt bounds every integer, size, stride and offset: 2^53.
	maxInt = 1 << 53
)

// Row is one tensor-producing step of a program: a constructor, a view, a
// copy or a computation, with the layout PyTorch gives its result.
type Row struct {
	Step int    // 1-based position among all rows of the program
	Stmt int    // 1-based index of the statement the row belongs to
	Var  string // the variable the statement assigns this row's tensor to ("" if none)
	Op   string // the step's source text: "arange(12)", ".view(3,4)", "q @ k"
	// DType is the result's dtype (for a failed row: the input's).
	DType        tensor.DType
	Shape        []int
	Strides      []int
	Offset       int
	Contiguous   bool
	ChannelsLast bool // 4-d only: is_contiguous(memory_format=torch.channels_last)
	// Storage is "new" for a fresh storage (a constructor, a copy, a
	// computed result), otherwise "shared(x)" naming the variable that
	// first held that storage, or "shared(step N)" when no variable did.
	Storage string
	// StorageStep is the step that created the storage the row reads.
	StorageStep int
	// AllocatedBytes is the size of a new storage (0 when shared).
	AllocatedBytes int64
	// CopiedBytes is what the step writes into a new storage: numel ×
	// itemsize for a copy or a computed result, 0 for views and
	// constructors.
	CopiedBytes int64
	// Error is PyTorch's error for a failing step ("" on success). Only
	// the last row can have one; its layout fields are then empty, and
	// ErrPos is the 0-based byte offset in the program where it failed.
	Error  string
	ErrPos int

	t  *tensor.Tensor
	in *tensor.Tensor // the step's (first) tensor input, for pictures
}

// MemoryFormat is "channels_last" when a 4-d row is channels-last
// contiguous but not contiguous, else "".
func (r *Row) MemoryFormat() string {
	if r.Error == "" && r.ChannelsLast && !r.Contiguous {
		return "channels_last"
	}
	return ""
}

// SyntaxError reports a program that cannot be evaluated at all: a
// syntax error, or an unknown constructor or method. Pos is the 0-based
// byte offset of the offending token in Src.
type SyntaxError struct {
	Src string
	Pos int
	Msg string
}

// Error implements error, naming the 1-based line and column.
func (e *SyntaxError) Error() string {
	p := Locate(e.Src, e.Pos)
	if p.Line == 1 {
		return fmt.Sprintf("layout expression: column %d: %s", p.Col, e.Msg)
	}
	return fmt.Sprintf("layout expression: line %d, column %d: %s", p.Line, p.Col, e.Msg)
}

// Eval parses and evaluates a program on meta tensors. It returns a
// *SyntaxError when the program cannot be parsed or names an unknown
// constructor or method; otherwise the rows, the last of which carries
// Error when a statement failed (evaluation stops there, as Python would).
func Eval(src string) ([]Row, error) {
	stmts, err := parseProgram(src)
	if err != nil {
		return nil, err
	}
	for _, s := range stmts {
		if err := checkNames(src, s.expr); err != nil {
			return nil, err
		}
	}
	ev := &evaluator{src: src, vars: map[string]value{}, stor: map[*tensor.Storage]*storInfo{}, alias: map[*tensor.Storage]*tensor.Storage{}}
	for i, s := range stmts {
		ev.stmt = i + 1
		err := ev.statement(s)
		for _, pn := range ev.names {
			if pn.si.name == "" {
				pn.si.name = pn.name
			}
		}
		ev.names = ev.names[:0]
		if err != nil {
			var f *failure
			if !errors.As(err, &f) {
				f = &failure{pos: s.pos, end: s.end, msg: err.Error()}
			}
			row := Row{Step: len(ev.rows) + 1, Stmt: ev.stmt, Op: f.op, Error: f.msg, ErrPos: f.pos, DType: f.dtype}
			if row.Op == "" {
				row.Op = strings.TrimSpace(src[f.pos:max(f.pos, f.end)])
			}
			ev.rows = append(ev.rows, row)
			break
		}
	}
	if len(ev.rows) == 0 {
		return nil, &SyntaxError{src, 0, "the program makes no tensor: start with a constructor such as empty(2,3,4), arange(12) or as_strided((2,3),(3,1),0)"}
	}
	return ev.rows, nil
}

// failure is a failed step: PyTorch's message and where it happened.
type failure struct {
	op       string
	pos, end int
	msg      string
	dtype    tensor.DType
}

func (f *failure) Error() string { return f.msg }

type storInfo struct {
	step int    // the row that created the storage
	name string // the first variable that held a tensor of it
}

type evaluator struct {
	src   string
	vars  map[string]value
	rows  []Row
	stor  map[*tensor.Storage]*storInfo
	alias map[*tensor.Storage]*tensor.Storage // view(dtype) storages → the one they reinterpret
	stmt  int
	names []pendingName
	input *tensor.Tensor // the input of the step being recorded
}

type pendingName struct {
	si   *storInfo
	name string
}

// root is the storage whose bytes st reads (itself unless st came from
// view(dtype)).
func (ev *evaluator) root(st *tensor.Storage) *tensor.Storage {
	if r, ok := ev.alias[st]; ok {
		return r
	}
	return st
}

func (ev *evaluator) statement(s stmt) error {
	v, err := ev.eval(s.expr)
	if err != nil {
		return err
	}
	// A tensor that no step of this statement produced (y = x, or a bare
	// x) gets a row of its own, so every statement shows its result.
	produced := func(tv *tval) bool { return tv.row > 0 && ev.rows[tv.row-1].Stmt == ev.stmt }
	show := func(tv *tval, op string) (*tval, error) {
		if tv.row == 0 {
			return ev.recordPending(tv)
		}
		if produced(tv) {
			return tv, nil
		}
		return ev.record(strings.TrimSpace(op), tv.t, false)
	}
	text := ev.src[s.expr.pos:s.expr.end]
	if len(s.targets) == 0 {
		switch x := v.(type) {
		case *tval:
			_, err = show(x, text)
		case *tupleVal:
			for i, it := range x.items {
				if tv, ok := it.(*tval); ok {
					if _, err = show(tv, fmt.Sprintf("%s[%d]", text, i)); err != nil {
						return err
					}
				}
			}
		}
		return err
	}
	if len(s.targets) == 1 && !s.paren {
		if tv, ok := v.(*tval); ok {
			if tv, err = show(tv, text); err != nil {
				return err
			}
			v = tv
		} else if tup, ok := v.(*tupleVal); ok {
			if err := ev.recordTuple(tup, text); err != nil {
				return err
			}
		}
		ev.assign(s.targets[0], v)
		return nil
	}
	tup, ok := v.(*tupleVal)
	if !ok {
		return &failure{pos: s.expr.pos, end: s.expr.end, msg: fmt.Sprintf("cannot unpack non-iterable %s object", typeName(v))}
	}
	if len(tup.items) != len(s.targets) {
		msg := fmt.Sprintf("too many values to unpack (expected %d)", len(s.targets))
		if len(tup.items) < len(s.targets) {
			msg = fmt.Sprintf("not enough values to unpack (expected %d, got %d)", len(s.targets), len(tup.items))
		}
		return &failure{pos: s.expr.pos, end: s.expr.end, msg: msg}
	}
	for i, it := range tup.items {
		if tv, ok := it.(*tval); ok {
			op := text
			if tup.op != "" {
				op = tup.op
			}
			if tv, err = show(tv, fmt.Sprintf("%s[%d]", op, i)); err != nil {
				return err
			}
			it = tv
		}
		ev.assign(s.targets[i], it)
	}
	return nil
}

// assign binds name, names the row that produced a tensor and, if no
// variable named its storage yet, the storage.
func (ev *evaluator) assign(name string, v value) {
	ev.vars[name] = v
	if tv, ok := v.(*tval); ok {
		if tv.row > 0 && ev.rows[tv.row-1].Stmt == ev.stmt && ev.rows[tv.row-1].Var == "" {
			ev.rows[tv.row-1].Var = name
		}
		// The storage takes the name at the end of the statement, so all
		// rows of one statement (q, k, v = ...split()) name it alike.
		if si := ev.stor[ev.root(tv.t.Storage())]; si != nil && si.name == "" {
			ev.names = append(ev.names, pendingName{si, name})
		}
	}
}

// record appends a row for t. ctor marks a constructor: its new storage
// is not a copy.
func (ev *evaluator) record(op string, t *tensor.Tensor, ctor bool) (*tval, error) {
	if len(ev.rows) >= MaxRows {
		return nil, fmt.Errorf("program makes more than %d rows", MaxRows)
	}
	if err := checkBounds(t); err != nil {
		return nil, err
	}
	r := Row{Step: len(ev.rows) + 1, Stmt: ev.stmt, Op: op, DType: t.DType(), Shape: nonNil(t.Shape()), Strides: nonNil(t.Strides()), Offset: t.Offset(), t: t, in: ev.input}
	ev.input = nil
	r.Contiguous = t.IsContiguous()
	r.ChannelsLast = t.Dim() == 4 && channelsLastContiguous(r.Shape, r.Strides)
	st := ev.root(t.Storage())
	if si, ok := ev.stor[st]; ok {
		r.StorageStep = si.step
		if si.name != "" {
			r.Storage = "shared(" + si.name + ")"
		} else {
			r.Storage = fmt.Sprintf("shared(step %d)", si.step)
		}
	} else {
		ev.stor[st] = &storInfo{step: r.Step}
		r.Storage, r.StorageStep = "new", r.Step
		r.AllocatedBytes = int64(st.Bytes())
		if !ctor {
			r.CopiedBytes = int64(t.Nbytes())
		}
	}
	ev.rows = append(ev.rows, r)
	return &tval{t: t, row: r.Step}, nil
}

// recordPending records a tuple element that was never picked with [i].
func (ev *evaluator) recordPending(tv *tval) (*tval, error) {
	if tv.row > 0 {
		return tv, nil
	}
	n, err := ev.record(tv.pending, tv.t, false)
	if err != nil {
		return nil, err
	}
	tv.row = n.row
	return tv, nil
}

func (ev *evaluator) recordTuple(tup *tupleVal, text string) error {
	for _, it := range tup.items {
		if tv, ok := it.(*tval); ok && tv.row == 0 {
			if _, err := ev.recordPending(tv); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkDims refuses a step whose result would have more than maxDims
// dims, before the step builds its shape: ops that add a dim per call or
// per index item ([None], unsqueeze, unfold) would otherwise grow every
// later row's shape without bound.
func checkDims(op string, n int) error {
	if n > maxDims {
		return fmt.Errorf("%s: result would have %d dims, more than %d", op, n, maxDims)
	}
	return nil
}

// checkBounds keeps every stride and the offset within 2^53, so the next
// step's arithmetic (offset + start·stride, stride·step) cannot overflow,
// and is the last guard on the dim cap for every recorded row.
func checkBounds(t *tensor.Tensor) error {
	if err := checkDims("result", t.Dim()); err != nil {
		return err
	}
	if t.Offset() < 0 || t.Offset() > maxInt {
		return fmt.Errorf("storage offset %d is outside [0, 2^53]", t.Offset())
	}
	for _, s := range t.Strides() {
		if s < 0 || s > maxInt {
			return fmt.Errorf("size %s with stride %s is outside the supported range [0, 2^53]", tensor.FormatInts(t.Shape()), tensor.FormatInts(t.Strides()))
		}
	}
	return nil
}

// channelsLastContiguous is PyTorch's compute_channels_last_contiguous_2d:
// walking C, W, H, N, every dim of size != 1 has the running stride. Unlike
// is_contiguous it has no numel == 0 shortcut.
func channelsLastContiguous(shape, strides []int) bool {
	if len(shape) != 4 {
		return false
	}
	expected := 1
	for _, d := range []int{1, 3, 2, 0} {
		if shape[d] != 1 {
			if strides[d] != expected {
				return false
			}
			expected *= shape[d]
		}
	}
	return true
}
