package layoutexpr

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/stride-lm/stride/tensor"
)

// WriteTable prints the rows that succeeded as `infer layout` does, an
// aligned table of PyTorch's view facts (shape, strides, offset,
// is_contiguous, the storage and the bytes copied); a failing last row
// is left out, for the caller to report. A dtype column appears when a
// row is not float32, and a var column when the program names variables.
func WriteTable(w io.Writer, rows []Row) error {
	vars, dtypes := false, false
	for _, r := range rows {
		vars = vars || r.Var != ""
		dtypes = dtypes || r.DType != tensor.F32
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "step\top\tshape\tstrides\toffset\tcontiguous\tstorage\tcopied"
	if dtypes {
		head = strings.Replace(head, "\tshape", "\tdtype\tshape", 1)
	}
	if vars {
		head = strings.Replace(head, "step\t", "step\tvar\t", 1)
	}
	fmt.Fprintln(tw, head)
	for _, s := range rows {
		if s.Error != "" {
			continue
		}
		contiguous := "False"
		if s.Contiguous {
			contiguous = "True"
		}
		if mf := s.MemoryFormat(); mf != "" {
			contiguous = "False (" + mf + ")"
		}
		cols := []string{strconv.Itoa(s.Step), s.Op, tensor.FormatInts(s.Shape), tensor.FormatInts(s.Strides),
			strconv.Itoa(s.Offset), contiguous, s.Storage, tensor.FormatBytes(s.CopiedBytes)}
		if dtypes {
			cols = append(cols[:2], append([]string{s.DType.String()}, cols[2:]...)...)
		}
		if vars {
			cols = append(cols[:1], append([]string{s.Var}, cols[1:]...)...)
		}
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
	}
	return tw.Flush()
}
