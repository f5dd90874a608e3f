package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stride-lm/stride/cmd/infer/internal/outfile"
	"github.com/stride-lm/stride/configs"
	"github.com/stride-lm/stride/tensor/layoutexpr"
)

// `infer layout PROGRAM` is the stride calculator: it evaluates PyTorch
// tensor code on meta tensors (layoutexpr.Eval) and prints
// every step's shape, strides, offset, contiguity, storage and the bytes
// it copies. Nothing is allocated, so [2,32,4096,4096] is as cheap as
// [3,4].

func init() {
	registerKeys(configs.Key{Name: "layout.output", Kind: configs.String, Default: "table",
		Allowed: []string{"table", "json"}, Help: "output format of infer layout"})
	register(newLayoutCmd)
}

func newLayoutCmd(a *app) *cobra.Command {
	lf := &layoutFlags{}
	cmd := &cobra.Command{
		Use:   "layout [PROGRAM]",
		Short: "Show the shape, strides and copies of a PyTorch-style layout program",
		Long: `layout evaluates PyTorch tensor code on meta tensors (no data is allocated)
and prints, for every step, the shape, strides, storage offset,
is_contiguous(), whether the storage is new or shared (and with which
variable), and the bytes the step copies. The semantics are PyTorch 1.13's,
checked against PyTorch itself (tensor/layoutexpr/testdata). A step that
PyTorch would reject prints PyTorch's error after the rows that worked, and
the command exits with status 1.

A program is one chain or several statements separated by ';' or newlines,
with variables and tuple assignment (q, k, v = qkv.split(64, -1)), Python
indexing (x[0, 1:3, ..., None], x[[0, 2]]), @, + - * / ** with broadcasting,
softmax, sum and mean. -f FILE reads the program from a file.

Constructors: empty(sizes...), zeros, ones, randn, rand, arange(n) or
arange(start, end[, step]) (int64 unless a float is given),
empty_strided(size, stride), as_strided((sizes), (strides), offset); all
take dtype= f32 f16 bf16 f64 i64 i32 i16 i8 u8 bool (or torch.float16, ...).
Methods: view (sizes or a dtype), reshape, transpose, swapaxes, t, T, mT,
permute, movedim, slice(dim, start, end, step), narrow, select, expand,
broadcast_to, unsqueeze, squeeze, unfold, flatten, unflatten, diagonal,
split, chunk, unbind, repeat, repeat_interleave, as_strided,
contiguous(memory_format=...), clone, to(dtype), float, half, bfloat16,
double, long, int, bool, matmul, softmax, sum, mean. An optional "torch."
prefix is accepted, and torch.f(x, ...) is x.f(...).`,
		Example: `  infer layout 'arange(12).view(3,4).t().contiguous()'
  infer layout 'empty(2,4096,4096).view(2,4096,32,128).transpose(1,2)'
  infer layout 'q, k, v = empty(2,16,3*64).split(64, -1); s = q @ k.mT'
  infer layout -f configs/mha-layout.py --output json`,
		Args: func(cmd *cobra.Command, args []string) error { return lf.checkArgs(args) },
		RunE: func(cmd *cobra.Command, args []string) error { return runLayout(a, cmd, args, lf) },
	}
	a.flag(cmd, "output", "layout.output", "output format")
	cmd.Flags().StringVarP(&lf.file, "file", "f", "", "read the program from `FILE`")
	cmd.Flags().StringVar(&lf.draw, "draw", "", "draw storage and views to `FILE` (.svg or .png)")
	cmd.Flags().BoolVar(&lf.grid, "grid", false, "print each view's CuTe-style grid of storage indices")
	return cmd
}

// layoutFlags are the flags of infer layout that are no configuration
// keys: where the program comes from and the extra views of its rows.
type layoutFlags struct {
	file, draw string // -f FILE, --draw FILE
	grid       bool   // --grid
}

// checkArgs requires exactly one program source: the arguments or -f.
func (lf *layoutFlags) checkArgs(args []string) error {
	if lf.file == "" && len(args) == 0 {
		return fmt.Errorf("layout needs a PROGRAM argument or -f FILE")
	}
	if lf.file != "" && len(args) > 0 {
		return fmt.Errorf("layout takes a PROGRAM argument or -f FILE, not both")
	}
	return nil
}

// runLayout evaluates the program and prints its rows (table or JSON),
// then the grids and the picture asked for. A step PyTorch would reject
// is the command's error, after the rows that worked.
func runLayout(a *app, cmd *cobra.Command, args []string, lf *layoutFlags) error {
	// Unquoted programs with spaces arrive as several args.
	src := strings.Join(args, " ")
	if lf.file != "" {
		b, err := layoutexpr.ReadProgram(lf.file)
		if err != nil {
			return err
		}
		src = b
	}
	rows, err := layoutexpr.Eval(src)
	if err != nil {
		var se *layoutexpr.SyntaxError
		if errors.As(err, &se) {
			return fmt.Errorf("%v\n%s", err, layoutexpr.Locate(src, se.Pos).Caret())
		}
		return err
	}
	out := cmd.OutOrStdout()
	if a.cfg.String("layout.output") == "json" {
		_, err = out.Write(layoutexpr.MarshalRows(rows))
	} else {
		err = layoutexpr.WriteTable(out, rows)
	}
	if err != nil {
		return err
	}
	if lf.grid {
		writeLayoutGrids(out, rows)
	}
	if lf.draw != "" {
		if err := drawLayout(cmd.Context(), lf.draw, rows); err != nil {
			return err
		}
	}
	return rows[len(rows)-1].Err(src)
}

// writeLayoutGrids prints the CuTe-style grid of every step that worked.
func writeLayoutGrids(w io.Writer, rows []layoutexpr.Row) {
	for _, r := range rows {
		if r.Error == "" {
			fmt.Fprintf(w, "\nstep %d %s\n%s", r.Step, r.Op, layoutexpr.Grid(r))
		}
	}
}

// drawLayout writes the picture of rows to path: SVG or PNG by extension,
// drawn by layoutexpr (DrawSVG, DrawPNG). The file is
// written like every output of infer (outfile): replaced atomically, never
// left half-written, a device or FIFO written through.
func drawLayout(ctx context.Context, path string, rows []layoutexpr.Row) error {
	var data []byte
	switch strings.ToLower(filepath.Ext(path)) {
	case ".svg":
		b, err := layoutexpr.DrawSVG(rows)
		if err != nil {
			return err
		}
		data = b
	case ".png":
		b, err := layoutexpr.DrawPNG(rows)
		if err != nil {
			return err
		}
		data = b
	default:
		return fmt.Errorf("--draw %s: want a .svg or .png file name", path)
	}
	f, err := outfile.Create(ctx, path)
	if err != nil {
		return fmt.Errorf("--draw: %w", err)
	}
	defer f.Abort()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("--draw: %w", err)
	}
	if err := f.Commit(); err != nil {
		return fmt.Errorf("--draw: %w", err)
	}
	return nil
}
