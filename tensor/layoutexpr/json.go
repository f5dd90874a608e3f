package layoutexpr

import (
	"encoding/json"
	"strings"
)

// JSONRow is one element of `infer layout --output json`. A failed row
// has null layout fields and its error; the others have a null error.
type JSONRow struct {
	Op           string  `json:"op"`
	Shape        []int   `json:"shape"`
	Strides      []int   `json:"strides"`
	Offset       *int    `json:"offset"`
	Contiguous   *bool   `json:"contiguous"`
	CopiedBytes  *int64  `json:"copied_bytes"`
	Error        *string `json:"error"`
	DType        string  `json:"dtype"`
	MemoryFormat *string `json:"memory_format"`
	Storage      *string `json:"storage"`
	Var          *string `json:"var"`
	Stmt         int     `json:"stmt"`
}

// ToJSON converts rows to their JSON form.
func ToJSON(rows []Row) []JSONRow {
	out := make([]JSONRow, len(rows))
	for i := range rows {
		r := &rows[i]
		j := JSONRow{Op: r.Op, DType: r.DType.String(), Stmt: r.Stmt}
		if r.Var != "" {
			j.Var = &r.Var
		}
		if r.Error != "" {
			j.Error = &r.Error
		} else {
			j.Shape, j.Strides = nonNil(r.Shape), nonNil(r.Strides)
			j.Offset, j.Contiguous, j.CopiedBytes, j.Storage = &r.Offset, &r.Contiguous, &r.CopiedBytes, &r.Storage
			if mf := r.MemoryFormat(); mf != "" {
				j.MemoryFormat = &mf
			}
		}
		out[i] = j
	}
	return out
}

// nonNil keeps a 0-d shape as [] in JSON (null means a failed step).
func nonNil(v []int) []int {
	if v == nil {
		return []int{}
	}
	return v
}

// MarshalRows writes rows as a JSON array, one compact object per line
// (diffable, and still one JSON array).
func MarshalRows(rows []Row) []byte {
	var b strings.Builder
	b.WriteString("[")
	for i, j := range ToJSON(rows) {
		line, _ := json.Marshal(j) // plain structs of strings and ints cannot fail
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n  ")
		b.Write(line)
	}
	b.WriteString("\n]\n")
	return []byte(b.String())
}
