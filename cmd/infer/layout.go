package main

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/stride-lm/stride/tensor"
	"github.com/stride-lm/stride/tensor/layoutexpr"
)

// `infer layout PROGRAM` is the stride calculator: it evaluates PyTorch
// tensor code on meta tensors (layoutexpr.Eval) and prints
// every step's shape, strides, offset, contiguity, storage and the bytes
// it copies. Nothing is allocated, so [2,32,4096,4096] is as cheap as
// [3,4].

func init() {
	registerKeys(configKey{Name: "layout.output", Kind: kindString, Default: "table",
		Allowed: []string{"table", "json"}, Help: "output format of infer layout"})
	register(newLayoutCmd)
}

func newLayoutCmd(a *app) *cobra.Command {
	var file, draw string
	var grid bool
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
		Args: func(cmd *cobra.Command, args []string) error {
			if file == "" && len(args) == 0 {
				return fmt.Errorf("layout needs a PROGRAM argument or -f FILE")
			}
			if file != "" && len(args) > 0 {
				return fmt.Errorf("layout takes a PROGRAM argument or -f FILE, not both")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			// Unquoted programs with spaces arrive as several args.
			src := strings.Join(args, " ")
			if file != "" {
				b, err := readLayoutFile(file)
				if err != nil {
					return err
				}
				src = b
			}
			rows, err := layoutexpr.Eval(src)
			if err != nil {
				var se *layoutexpr.SyntaxError
				if errors.As(err, &se) {
					return fmt.Errorf("%v\n%s", err, pointAt(src, se.Pos))
				}
				return err
			}
			out := cmd.OutOrStdout()
			if a.getString("layout.output") == "json" {
				_, err = out.Write(layoutexpr.MarshalRows(rows))
			} else {
				err = writeLayoutTable(out, rows)
			}
			if err != nil {
				return err
			}
			if grid {
				for _, r := range rows {
					if r.Error == "" {
						fmt.Fprintf(out, "\nstep %d %s\n%s", r.Step, r.Op, layoutexpr.Grid(r))
					}
				}
			}
			if draw != "" {
				if err := drawLayout(draw, rows); err != nil {
					return err
				}
			}
			if last := rows[len(rows)-1]; last.Error != "" {
				line, _ := lineOf(src, last.ErrPos)
				where := fmt.Sprintf("step %d", last.Step)
				if strings.Contains(src, "\n") {
					where = fmt.Sprintf("line %d, step %d", line, last.Step)
				}
				return fmt.Errorf("%s %s: %s", where, last.Op, last.Error)
			}
			return nil
		},
	}
	a.flag(cmd, "output", "layout.output", "output format")
	cmd.Flags().StringVarP(&file, "file", "f", "", "read the program from `FILE`")
	cmd.Flags().StringVar(&draw, "draw", "", "draw storage and views to `FILE` (.svg or .png)")
	cmd.Flags().BoolVar(&grid, "grid", false, "print each view's CuTe-style grid of storage indices")
	return cmd
}

// drawLayout writes the picture of rows to path: SVG or PNG by extension,
// both drawn by layoutexpr.Picture on a gonum/plot vg canvas.
func drawLayout(path string, rows []layoutexpr.Row) error {
	var data []byte
	switch strings.ToLower(filepath.Ext(path)) {
	case ".svg":
		b, err := layoutexpr.DrawSVG(rows)
		if err != nil {
			return err
		}
		data = b
	case ".png":
		p := layoutexpr.NewPicture(rows)
		c := vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(p.W, p.H), vgimg.UseDPI(96), vgimg.UseBackgroundColor(color.White))}
		p.Draw(c)
		var b bytes.Buffer
		if _, err := c.WriteTo(&b); err != nil {
			return err
		}
		data = b.Bytes()
	default:
		return fmt.Errorf("--draw %s: want a .svg or .png file name", path)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("--draw: %v", err)
	}
	return nil
}

// maxLayoutFile bounds -f: a program is text, and the evaluator refuses
// more than layoutexpr.MaxProgramLen bytes anyway.
const maxLayoutFile = layoutexpr.MaxProgramLen

func readLayoutFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return "", err
	} else if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%s: not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxLayoutFile+1))
	if err != nil {
		return "", fmt.Errorf("%s: %v", path, err)
	}
	if len(b) > maxLayoutFile {
		return "", fmt.Errorf("%s: program longer than %d bytes", path, maxLayoutFile)
	}
	return string(b), nil
}

// lineOf returns the 1-based line of byte offset pos and that line's text.
func lineOf(src string, pos int) (int, string) {
	pos = min(max(pos, 0), len(src))
	start := strings.LastIndexByte(src[:pos], '\n') + 1
	end := strings.IndexByte(src[pos:], '\n')
	if end < 0 {
		end = len(src)
	} else {
		end += pos
	}
	return 1 + strings.Count(src[:pos], "\n"), src[start:end]
}

// pointAt shows the line holding pos with a caret under the column.
func pointAt(src string, pos int) string {
	_, line := lineOf(src, pos)
	col := pos - (strings.LastIndexByte(src[:min(max(pos, 0), len(src))], '\n') + 1)
	return fmt.Sprintf("  %s\n  %s^", line, strings.Repeat(" ", col))
}

// writeLayoutTable prints the rows that succeeded as an aligned table; a
// failing last row is reported as the command's error instead. Programs
// with variables get a var column.
func writeLayoutTable(w io.Writer, rows []layoutexpr.Row) error {
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
