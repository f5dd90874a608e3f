package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/stride-lm/stride/tensor"
)

// `infer layout EXPR` is the stride calculator: it evaluates a
// PyTorch-style chain on meta tensors (tensor.EvalLayoutExpr) and prints
// every step's shape, strides, offset, contiguity, storage and the bytes
// it copies. Nothing is allocated, so [2,32,4096,4096] is as cheap as
// [3,4].

func init() {
	registerKeys(configKey{Name: "layout.output", Kind: kindString, Default: "table",
		Allowed: []string{"table", "json"}, Help: "output format of infer layout"})
	register(newLayoutCmd)
}

func newLayoutCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "layout EXPR",
		Short: "Show the shape, strides and copies of a PyTorch-style layout chain",
		Long: `layout evaluates a chain of PyTorch tensor ops on meta tensors (no data is
allocated) and prints, for every step, the shape, strides, storage offset,
is_contiguous(), whether the storage is new or shared with an earlier step,
and the bytes the step copies. A step that PyTorch would reject prints
PyTorch's error and the command exits non-zero.

Constructors: empty(sizes...), zeros, ones, randn, rand, arange(n) or
arange(start, end[, step]), as_strided((sizes), (strides), offset); all take
dtype=f32|f16|bf16 (or torch.float16, ...).
Methods: view, reshape, transpose, swapaxes, t, T, mT, permute,
slice(dim, start, end, step), narrow, select, expand, unsqueeze, squeeze,
unfold, flatten, as_strided, contiguous, clone, to(dtype), float, half,
bfloat16. An optional "torch." prefix is accepted.`,
		Example: `  infer layout 'arange(12).view(3,4).t().contiguous()'
  infer layout 'empty(2,4096,4096).view(2,4096,32,128).transpose(1,2)'
  infer layout --output json 'empty(3).expand(4,3)'`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Unquoted expressions with spaces arrive as several args.
			expr := strings.Join(args, " ")
			steps, err := tensor.EvalLayoutExpr(expr)
			if err != nil {
				var se *tensor.LayoutSyntaxError
				if errors.As(err, &se) {
					return fmt.Errorf("%v\n  %s\n  %s^", err, expr, strings.Repeat(" ", se.Pos))
				}
				return err
			}
			out := cmd.OutOrStdout()
			if a.getString("layout.output") == "json" {
				err = writeLayoutJSON(out, steps)
			} else {
				err = writeLayoutTable(out, steps)
			}
			if err != nil {
				return err
			}
			if last := steps[len(steps)-1]; last.Error != "" {
				return fmt.Errorf("step %d %s: %s", last.Step, last.Op, last.Error)
			}
			return nil
		},
	}
	a.flag(cmd, "output", "layout.output", "output format")
	return cmd
}

// writeLayoutTable prints the steps that succeeded as an aligned table;
// a failing last step is reported as the command's error instead.
func writeLayoutTable(w io.Writer, steps []tensor.LayoutStep) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "step\top\tshape\tstrides\toffset\tcontiguous\tstorage\tcopied")
	for _, s := range steps {
		if s.Error != "" {
			continue
		}
		contiguous := "False"
		if s.Contiguous {
			contiguous = "True"
		}
		fmt.Fprintln(tw, strings.Join([]string{
			strconv.Itoa(s.Step), s.Op, tensor.FormatInts(s.Shape), tensor.FormatInts(s.Strides),
			strconv.Itoa(s.Offset), contiguous, s.Storage, tensor.FormatBytes(s.CopiedBytes),
		}, "\t"))
	}
	return tw.Flush()
}

// layoutJSONStep is one element of `infer layout --output json`. A failed
// step has null layout fields and its error; others have a null error.
type layoutJSONStep struct {
	Op          string  `json:"op"`
	Shape       []int   `json:"shape"`
	Strides     []int   `json:"strides"`
	Offset      *int    `json:"offset"`
	Contiguous  *bool   `json:"contiguous"`
	CopiedBytes *int64  `json:"copied_bytes"`
	Error       *string `json:"error"`
}

func writeLayoutJSON(w io.Writer, steps []tensor.LayoutStep) error {
	out := make([]layoutJSONStep, len(steps))
	for i, s := range steps {
		j := layoutJSONStep{Op: s.Op}
		if s.Error != "" {
			j.Error = &s.Error
		} else {
			j.Shape, j.Strides = s.Shape, s.Strides
			j.Offset, j.Contiguous, j.CopiedBytes = &s.Offset, &s.Contiguous, &s.CopiedBytes
		}
		out[i] = j
	}
	// One compact object per line: diffable, and still one JSON array.
	var b strings.Builder
	b.WriteString("[")
	for i, j := range out {
		line, err := json.Marshal(j)
		if err != nil {
			return err
		}
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n  ")
		b.Write(line)
	}
	b.WriteString("\n]\n")
	_, err := io.WriteString(w, b.String())
	return err
}
