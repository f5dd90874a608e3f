// Package explain is the pure half of the layout explorer's WebAssembly
// evaluator: program text in, one JSON document out. It lives apart from
// the js/wasm main so that it builds and is tested on every platform.
//
// The document's "rows" field is the text layoutexpr.MarshalRows returns, the
// exact bytes `infer layout --output json` prints; "extra" adds, per row,
// what a picture needs and those rows omit (the storage's length in
// elements, the element size, the step that made the storage); "error"
// places a failure in the program (0-based byte offset, 1-based line and
// column) with PyTorch's message.
package explain

import (
	"encoding/json"
	"errors"

	"github.com/stride-lm/stride/tensor/layoutexpr"
)

// Explained is the document Explain returns.
type Explained struct {
	// Rows is `infer layout --output json`'s output (a JSON array as
	// text; empty when the program did not parse).
	Rows string `json:"rows"`
	// Extra has one entry per row, in order.
	Extra []Extra `json:"extra"`
	// Error is the syntax error or the failing step, nil on success.
	Error *Error `json:"error"`
}

// Extra is what the picture of one row needs beyond its JSON row.
type Extra struct {
	Step int `json:"step"`
	// StorageStep is the step whose new storage this row reads.
	StorageStep int `json:"storage_step"`
	// StorageElems is that storage's length in this row's elements
	// (its bytes over this row's itemsize, which view(dtype) can change).
	StorageElems int64 `json:"storage_elems"`
	Itemsize     int   `json:"itemsize"`
}

// Error is a program's failure, placed in its source.
type Error struct {
	// Kind is "syntax" (nothing ran) or "step" (a step failed; the rows
	// before it are valid and the last row carries the same message).
	Kind string `json:"kind"`
	Msg  string `json:"msg"`
	Step int    `json:"step,omitempty"`
	Pos  int    `json:"pos"`  // 0-based byte offset in the program
	Line int    `json:"line"` // 1-based
	Col  int    `json:"col"`  // 1-based, in characters (runes), not bytes
}

// Explain evaluates src and returns its Explained document as JSON.
func Explain(src string) []byte {
	b, _ := json.Marshal(explain(src)) // strings and ints: cannot fail
	return b
}

func explain(src string) Explained {
	rows, err := layoutexpr.Eval(src)
	if err != nil {
		e := &Error{Kind: "syntax", Msg: err.Error()}
		var se *layoutexpr.SyntaxError
		if errors.As(err, &se) {
			e.Msg = se.Msg
			e.Pos = se.Pos
		}
		e.place(src)
		return Explained{Extra: []Extra{}, Error: e}
	}
	out := Explained{Rows: string(layoutexpr.MarshalRows(rows)), Extra: make([]Extra, len(rows))}
	for i, r := range rows {
		x := Extra{Step: r.Step, StorageStep: r.StorageStep, Itemsize: r.DType.Size()}
		if s := r.StorageStep; s >= 1 && s <= len(rows) && x.Itemsize > 0 && r.Error == "" {
			x.StorageElems = rows[s-1].AllocatedBytes / int64(x.Itemsize)
		}
		out.Extra[i] = x
	}
	if last := rows[len(rows)-1]; last.Error != "" {
		e := &Error{Kind: "step", Msg: last.Error, Step: last.Step, Pos: last.ErrPos}
		e.place(src)
		out.Error = e
	}
	return out
}

// place sets e's line and its column in runes, the unit a browser's
// text field uses, from its byte offset in src.
func (e *Error) place(src string) {
	p := layoutexpr.Locate(src, e.Pos)
	e.Line, e.Col = p.Line, p.RuneCol()
}
