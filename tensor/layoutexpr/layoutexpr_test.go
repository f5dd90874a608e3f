package layoutexpr

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stride-lm/stride/tensor"
)

// want is one expected step: shape, strides, offset, contiguous, storage,
// copied bytes. The numbers are PyTorch's, from the seed notes where they
// print them (x.t() of a (3,4) tensor has stride (1,4); x[1:, 1:3] has
// offset 5; bias.expand(4,3) has stride (0,1); arange(6).unfold(0,3,1) has
// stride (1,1); the MHA table's [2,32,4096,128] strides) and otherwise
// derived by hand from the stride rules.
type wantStep struct {
	shape, strides string
	offset         int
	contiguous     bool
	storage        string
	copied         int64
}

func TestEvalSeedExamples(t *testing.T) {
	cases := []struct {
		expr  string
		steps []wantStep
		err   string // Error of the last step, if it fails
	}{
		{"arange(12).view(3,4).t().contiguous()", []wantStep{
			{"[12]", "[1]", 0, true, "new", 0},
			{"[3, 4]", "[4, 1]", 0, true, "shared(step 1)", 0},
			{"[4, 3]", "[1, 4]", 0, false, "shared(step 1)", 0},
			// arange(12) is int64 in PyTorch, so the copy is 12 × 8 bytes.
			{"[4, 3]", "[3, 1]", 0, true, "new", 96},
		}, ""},
		// Seed exercise: permute(2,0,1) of a contiguous (2,3,4) has strides
		// (1,12,4), and view(4,6) works because 12 == 3·4.
		{"empty(2,3,4).permute(2,0,1).view(4,6)", []wantStep{
			{"[2, 3, 4]", "[12, 4, 1]", 0, true, "new", 0},
			{"[4, 2, 3]", "[1, 12, 4]", 0, false, "shared(step 1)", 0},
			{"[4, 6]", "[1, 4]", 0, false, "shared(step 1)", 0},
		}, ""},
		{"arange(12).view(3,4).t().view(12)", []wantStep{
			{"[12]", "[1]", 0, true, "new", 0},
			{"[3, 4]", "[4, 1]", 0, true, "shared(step 1)", 0},
			{"[4, 3]", "[1, 4]", 0, false, "shared(step 1)", 0},
		}, "view size is not compatible with input tensor's size and stride"},
		// reshape: a view when it can, a copy (here 48 bytes) when not.
		{"arange(12).reshape(3,4).t().reshape(12)", []wantStep{
			{"[12]", "[1]", 0, true, "new", 0},
			{"[3, 4]", "[4, 1]", 0, true, "shared(step 1)", 0},
			{"[4, 3]", "[1, 4]", 0, false, "shared(step 1)", 0},
			{"[12]", "[1]", 0, true, "new", 96},
		}, ""},
		// x[1:, 1:3] and x[:, 1:3] of the seed's arange(12).reshape(3, 4).
		{"arange(12).view(3,4).slice(0,1).slice(1,1,3)", []wantStep{
			{"[12]", "[1]", 0, true, "new", 0},
			{"[3, 4]", "[4, 1]", 0, true, "shared(step 1)", 0},
			{"[2, 4]", "[4, 1]", 4, true, "shared(step 1)", 0},
			{"[2, 2]", "[4, 1]", 5, false, "shared(step 1)", 0},
		}, ""},
		{"arange(12).view(3, 4).slice(1, 1, 3)", []wantStep{
			{"[12]", "[1]", 0, true, "new", 0},
			{"[3, 4]", "[4, 1]", 0, true, "shared(step 1)", 0},
			{"[3, 2]", "[4, 1]", 1, false, "shared(step 1)", 0},
		}, ""},
		{"empty(3).expand(4,3).contiguous()", []wantStep{
			{"[3]", "[1]", 0, true, "new", 0},
			{"[4, 3]", "[0, 1]", 0, false, "shared(step 1)", 0},
			{"[4, 3]", "[3, 1]", 0, true, "new", 48},
		}, ""},
		{"arange(6).unfold(0,3,1)", []wantStep{
			{"[6]", "[1]", 0, true, "new", 0},
			{"[4, 3]", "[1, 1]", 0, false, "shared(step 1)", 0},
		}, ""},
		// Seed table: x.expand(5, 2, 3) of a (2, 3) tensor → [0, 3, 1].
		{"empty(2,3).expand(5,2,3)", []wantStep{
			{"[2, 3]", "[3, 1]", 0, true, "new", 0},
			{"[5, 2, 3]", "[0, 3, 1]", 0, false, "shared(step 1)", 0},
		}, ""},
		// The MHA trace: split heads (view), move heads forward
		// (transpose), then the copy that .contiguous() costs.
		{"empty(2,4096,4096).view(2,4096,32,128).transpose(1,2).contiguous()", []wantStep{
			{"[2, 4096, 4096]", "[16777216, 4096, 1]", 0, true, "new", 0},
			{"[2, 4096, 32, 128]", "[16777216, 4096, 128, 1]", 0, true, "shared(step 1)", 0},
			{"[2, 32, 4096, 128]", "[16777216, 128, 4096, 1]", 0, false, "shared(step 1)", 0},
			{"[2, 32, 4096, 128]", "[16777216, 524288, 128, 1]", 0, true, "new", 2 * 32 * 4096 * 128 * 4},
		}, ""},
		{"empty(2,32,4096,128).transpose(1,2).view(2,4096,4096)", []wantStep{
			{"[2, 32, 4096, 128]", "[16777216, 524288, 128, 1]", 0, true, "new", 0},
			{"[2, 4096, 32, 128]", "[16777216, 128, 524288, 1]", 0, false, "shared(step 1)", 0},
		}, "view size is not compatible"},
		// Seed: expand(1000000, 3) of a [1,3] costs 0 bytes.
		{"empty(1,3).expand(1000000,3)", []wantStep{
			{"[1, 3]", "[3, 1]", 0, true, "new", 0},
			{"[1000000, 3]", "[0, 1]", 0, false, "shared(step 1)", 0},
		}, ""},
		// Channels-last NCHW [2,3,32,32] as explicit strides.
		{"as_strided((2,3,32,32),(3072,1,96,3),0).contiguous()", []wantStep{
			{"[2, 3, 32, 32]", "[3072, 1, 96, 3]", 0, false, "new", 0},
			{"[2, 3, 32, 32]", "[3072, 1024, 32, 1]", 0, true, "new", 2 * 3 * 32 * 32 * 4},
		}, ""},
		{"empty(2, 3, dtype=f16).t().contiguous()", []wantStep{
			{"[2, 3]", "[3, 1]", 0, true, "new", 0},
			{"[3, 2]", "[1, 3]", 0, false, "shared(step 1)", 0},
			{"[3, 2]", "[2, 1]", 0, true, "new", 12},
		}, ""},
		// contiguous() of a contiguous tensor is the same tensor: 0 bytes.
		{"empty(4,4).select(0,-1).unsqueeze(0).contiguous().squeeze()", []wantStep{
			{"[4, 4]", "[4, 1]", 0, true, "new", 0},
			{"[4]", "[1]", 12, true, "shared(step 1)", 0},
			{"[1, 4]", "[4, 1]", 12, true, "shared(step 1)", 0},
			{"[1, 4]", "[4, 1]", 12, true, "shared(step 1)", 0},
			{"[4]", "[1]", 12, true, "shared(step 1)", 0},
		}, ""},
		{"empty(5,6).narrow(1,-4,2).clone()", []wantStep{
			{"[5, 6]", "[6, 1]", 0, true, "new", 0},
			{"[5, 2]", "[6, 1]", 2, false, "shared(step 1)", 0},
			{"[5, 2]", "[2, 1]", 0, true, "new", 40},
		}, ""},
		{"  torch.empty( 2 ,3 ,4 ) . T .mT .flatten(0, 1)  ", []wantStep{
			{"[2, 3, 4]", "[12, 4, 1]", 0, true, "new", 0},
			{"[4, 3, 2]", "[1, 4, 12]", 0, false, "shared(step 1)", 0},
			{"[4, 2, 3]", "[1, 12, 4]", 0, false, "shared(step 1)", 0},
			{"[8, 3]", "[3, 1]", 0, true, "new", 96},
		}, ""},
		{"arange(4).as_strided((3,2),(1,1))", []wantStep{
			{"[4]", "[1]", 0, true, "new", 0},
			{"[3, 2]", "[1, 1]", 0, false, "shared(step 1)", 0},
		}, ""},
		{"arange(4).as_strided((2,2),(2,2))", []wantStep{
			{"[4]", "[1]", 0, true, "new", 0},
		}, "out of bounds for storage of size 32"},
		{"empty(2,3).expand(3,3)", []wantStep{
			{"[2, 3]", "[3, 1]", 0, true, "new", 0},
		}, "The expanded size of the tensor (3) must match the existing size (2) at non-singleton dimension 0.  Target sizes: [3, 3].  Tensor sizes: [2, 3]"},
		{"empty(2,3).permute(0)", []wantStep{
			{"[2, 3]", "[3, 1]", 0, true, "new", 0},
		}, "number of dimensions in the tensor input does not match the length of the desired ordering of dimensions"},
		{"empty(2,3,4).t()", []wantStep{
			{"[2, 3, 4]", "[12, 4, 1]", 0, true, "new", 0},
		}, "t() expects a tensor with <= 2 dimensions, but self is 3D"},
		{"empty(1048576,1048576,1048576)", nil, "more than 2^53 elements"},
		{"arange(10, 0)", nil, "upper bound and larger bound inconsistent with step sign"},
		{"arange(-9007199254740992,9007199254740992)", nil, "arange: shape [18014398509481984] has more than 2^53"},
		{"empty(1).slice(0,0,1,9007199254740992).slice(0,0,1,4)", []wantStep{
			{"[1]", "[1]", 0, true, "new", 0},
			{"[1]", "[9007199254740992]", 0, true, "shared(step 1)", 0},
		}, "exceeds 2^53"},
	}
	for _, c := range cases {
		t.Run(c.expr, func(t *testing.T) {
			steps, err := Eval(c.expr)
			if err != nil {
				t.Fatal(err)
			}
			n := len(c.steps)
			if c.err != "" {
				n++
			}
			if len(steps) != n {
				t.Fatalf("%d steps, want %d: %+v", len(steps), n, steps)
			}
			for i, w := range c.steps {
				s := steps[i]
				got := wantStep{tensor.FormatInts(s.Shape), tensor.FormatInts(s.Strides), s.Offset, s.Contiguous, s.Storage, s.CopiedBytes}
				if got != w || s.Error != "" || s.Step != i+1 {
					t.Errorf("step %d %s = %+v (error %q), want %+v", i+1, s.Op, got, s.Error, w)
				}
			}
			if c.err != "" && !strings.Contains(steps[n-1].Error, c.err) {
				t.Errorf("last step error %q, want it to contain %q", steps[n-1].Error, c.err)
			}
		})
	}
}

func TestEvalStepFields(t *testing.T) {
	steps, err := Eval("torch.arange(0, 10, 3, dtype=torch.bfloat16).view(2, -1).half()")
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 3 {
		t.Fatalf("%+v", steps)
	}
	if s := steps[0]; s.Op != "torch.arange(0, 10, 3, dtype=torch.bfloat16)" || tensor.FormatInts(s.Shape) != "[4]" || s.DType != tensor.BF16 || s.AllocatedBytes != 8 {
		t.Errorf("step 1 = %+v", s)
	}
	if s := steps[1]; s.Op != ".view(2, -1)" || tensor.FormatInts(s.Shape) != "[2, 2]" || s.AllocatedBytes != 0 {
		t.Errorf("step 2 = %+v", s)
	}
	// A dtype conversion is a copy into a new, narrower storage.
	if s := steps[2]; s.DType != tensor.F16 || s.Storage != "new" || s.CopiedBytes != 8 || s.AllocatedBytes != 8 {
		t.Errorf("step 3 = %+v", s)
	}
	steps, err = Eval("arange(6).view(2,3).t().reshape(6).view(3,2)")
	if err != nil || steps[4].Storage != "shared(step 4)" || steps[3].Storage != "new" {
		t.Fatalf("the view after a copying reshape shares the copy's storage: %+v %v", steps, err)
	}
}

func TestEvalSyntaxErrors(t *testing.T) {
	cases := []struct {
		expr string
		col  int
		msg  string
	}{
		{"", 1, "empty program"},
		{"empty(2,3", 10, "expected ',' or ')'"},
		{"empty(2,,3)", 9, "expected a value"},
		{"empty(2,3).foo()", 12, `unknown tensor method "foo"`},
		{"view(2,3)", 1, `unknown constructor "view"`},
		{"empty(2,3).view(3 2)", 19, "expected ',' or ')'"},
		{"empty(2,3).t", 13, `expected "("`},
		{"empty(2,3).T()", 13, "T is an attribute"},
		{"empty(2,3) x", 12, "expected '.' and a method"},
		{"empty(99999999999999999999)", 7, "out of range"},
		{"x = empty(2)\ny = x.bar()", 7, `unknown tensor method "bar"`},
		{"empty(2)[1", 11, "expected ',' or ']'"},
		{"a, = = empty(2)", 6, "expected a value"},
		{"torch.nope(2)", 7, "unknown function torch.nope"},
		{strings.Repeat("(", 100) + "1", 65, "nested deeper than 64"},
	}
	for _, c := range cases {
		_, err := Eval(c.expr)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("%q: error %v, want a *SyntaxError", c.expr, err)
			continue
		}
		col := Locate(c.expr, se.Pos).Col
		if col != c.col || !strings.Contains(se.Msg, c.msg) {
			t.Errorf("%q: %v (column %d), want column %d and %q", c.expr, err, col, c.col, c.msg)
		}
	}
}

// TestEvalArgumentErrors: a badly typed or missing argument is the
// failing step's error (as Python raises it when the call runs), after
// the rows that worked, with the column of the method.
func TestEvalArgumentErrors(t *testing.T) {
	cases := []struct {
		expr string
		col  int
		msg  string
	}{
		{"empty(2,3).transpose(0)", 12, "missing required argument 'dim1'"},
		{"empty(2,3).transpose(0,1,2)", 12, "takes 2 positional arguments but 3 were given"},
		{"empty(2,3).narrow(dim=0, start=1, size=1)", 12, "unexpected keyword argument 'size'"},
		{"empty(2,3).unsqueeze(0, dim=1)", 12, "multiple values for argument 'dim'"},
		{"empty(2,3).select((0,1), 0)", 12, "argument 'dim' must be int, not tuple"},
		{"empty(2,3).view((3,2),4)", 12, "must be tuple of ints"},
		{"x = empty(2)\ny = q + x", 5, "name 'q' is not defined"},
		{"a, b = empty(2)", 8, "cannot unpack non-iterable Tensor"},
		{"a, b = empty(6).split(2)", 8, "too many values to unpack (expected 2)"},
	}
	for _, c := range cases {
		rows, err := Eval(c.expr)
		if err != nil {
			t.Errorf("%q: %v", c.expr, err)
			continue
		}
		last := rows[len(rows)-1]
		col := Locate(c.expr, last.ErrPos).Col
		if !strings.Contains(last.Error, c.msg) || col != c.col {
			t.Errorf("%q: last row error %q at column %d, want %q at column %d", c.expr, last.Error, col, c.msg, c.col)
		}
	}
}

// TestEvalBounds: long programs stay bounded: a program over the length,
// statement or row limits is refused, and one of thousands of statements
// evaluates (in linear time: each statement is O(ndim)).
func TestEvalBounds(t *testing.T) {
	var b strings.Builder
	b.WriteString("x = empty(4, 4)\n")
	for i := 0; i < 5000; i++ {
		b.WriteString("x = x.t()\n")
	}
	rows, err := Eval(b.String())
	if err != nil || len(rows) != 5001 || rows[5000].Error != "" || tensor.FormatInts(rows[5000].Strides) != "[4, 1]" {
		t.Fatalf("5000 transposes: %d rows, %v", len(rows), err)
	}
	if _, err := Eval(strings.Repeat("empty(1);", MaxStatements+1)); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("too many statements: %v", err)
	}
	if _, err := Eval(strings.Repeat(" ", MaxProgramLen+1)); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("too long: %v", err)
	}
	rows, err = Eval("empty(200000).unbind()")
	if err != nil || !strings.Contains(rows[len(rows)-1].Error, "more than") {
		t.Errorf("200000-way unbind should fail, not make 200000 rows: %v", err)
	}
}

// FuzzLayoutExpr checks that no input makes the parser or the evaluator
// panic, and that every step it reports is a coherent layout. Seeds: the
// f.Add calls below and testdata/fuzz/FuzzLayoutExpr.
func FuzzLayoutExpr(f *testing.F) {
	for _, s := range []string{
		"arange(12).view(3,4).t().contiguous()",
		"empty(2,3,4).permute(2,0,1).view(4,6)",
		"as_strided((2,3),(1,2),1).expand(4,2,3).reshape(-1)",
		"torch.empty(2, 3, dtype=torch.float16).T.mT.clone()",
		"empty(1).slice(0,0,1,9007199254740992).unsqueeze(0).narrow(1,1,0)",
		"arange(-5).unfold(0,-1,-1)",
		"empty(0,3).view(-1,0)",
		"empty(2,3).flatten(1,0)",
		"empty(2,3).view((3,2),4",
		"q, k, v = empty(2,8,12).split(4, -1); s = q @ k.transpose(-2, -1) / 2**0.5; a = s.softmax(-1)",
		"x = arange(24).view(2,3,4)[:, None, ..., ::2]; y = x.sum(-1, keepdim=True) * x.float().mT",
		"empty(2,3,4,5).contiguous(memory_format=torch.channels_last).view(torch.int8)",
		"a, b = empty(4,6).chunk(2, 1); c = torch.matmul(a, b.T); c.unflatten(0, (2, -1)).movedim(0, -1)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		steps, err := Eval(expr)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Pos < 0 || se.Pos > len(expr) {
				t.Fatalf("%q: error %v is not a positioned syntax error", expr, err)
			}
			return
		}
		if len(steps) == 0 {
			t.Fatalf("%q: no steps and no error", expr)
		}
		for _, r := range steps {
			_ = Grid(r) // must not panic, whatever the layout
		}
		NewPicture(steps)
		for i, s := range steps {
			if s.Step != i+1 || s.Stmt < 1 {
				t.Fatalf("%q: step %d numbered %d", expr, i+1, s.Step)
			}
			if s.Error != "" {
				if i != len(steps)-1 {
					t.Fatalf("%q: step %d failed but evaluation went on", expr, i+1)
				}
				continue
			}
			if len(s.Shape) != len(s.Strides) || s.Offset < 0 || s.CopiedBytes < 0 || s.AllocatedBytes < 0 {
				t.Fatalf("%q: incoherent step %+v", expr, s)
			}
			numel := 1
			for k, n := range s.Shape {
				if n < 0 || s.Strides[k] < 0 {
					t.Fatalf("%q: negative size or stride in %+v", expr, s)
				}
				if n != 0 && numel > maxInt/n {
					t.Fatalf("%q: numel beyond 2^53 in %+v", expr, s)
				}
				numel *= n
			}
			if s.Contiguous != isContiguous(s.Shape, s.Strides) {
				t.Fatalf("%q: contiguity flag wrong in %+v", expr, s)
			}
			if s.Shape == nil {
				t.Fatalf("%q: a 0-d result must have shape [], not nil: %+v", expr, s)
			}
		}
	})
}

func ExampleEval() {
	steps, err := Eval("arange(12).view(3,4).t().contiguous()")
	if err != nil {
		panic(err)
	}
	for _, s := range steps {
		fmt.Println(s.Op, tensor.FormatInts(s.Shape), tensor.FormatInts(s.Strides), s.Contiguous, s.Storage, s.CopiedBytes)
	}
	// Output:
	// arange(12) [12] [1] true new 0
	// .view(3,4) [3, 4] [4, 1] true shared(step 1) 0
	// .t() [4, 3] [1, 4] false shared(step 1) 0
	// .contiguous() [4, 3] [3, 1] true new 96
}

// TestDimAndElementCaps feeds every op that can grow a shape past the
// 64-dim cap or the 2^53-element cap: each must fail on the step that
// would cross it, with an error naming the cap, and the rows before it
// stay within the cap.
func TestDimAndElementCaps(t *testing.T) {
	ones := func(n int) string { return strings.TrimSuffix(strings.Repeat("1,", n), ",") }
	cases := []struct{ prog, want string }{
		{"x = empty(1)" + strings.Repeat(".unsqueeze(0)", 90), "unsqueeze: result would have 65 dims, more than 64"},
		{"x = empty(1)" + strings.Repeat("[None]", 90), "index: result would have 65 dims, more than 64"},
		{"x = empty(1)[" + strings.Repeat("None,", 5000) + "]", "index: result would have 5001 dims, more than 64"},
		{"x = empty(" + ones(64) + ").unfold(0,1,1)", "unfold: result would have 65 dims, more than 64"},
		{"x = empty(1).view(" + ones(65) + ")", "more than 64 sizes"},
		{"x = empty(1).reshape(" + ones(65) + ")", "more than 64 sizes"},
		{"x = empty(1).expand(" + ones(65) + ")", "more than 64 sizes"},
		{"x = empty(1).expand(1048576,1048576,1048576)", "more than 2^53 elements"},
		{"x = empty(1)[None].expand(1048576,1048576,1048576)[None]", "more than 2^53 elements"},
	}
	for _, c := range cases {
		rows, err := Eval(c.prog)
		if err != nil {
			t.Fatalf("%.60s: %v", c.prog, err)
		}
		last := rows[len(rows)-1]
		if !strings.Contains(last.Error, c.want) {
			t.Errorf("%.60s: last row error %q, want %q", c.prog, last.Error, c.want)
		}
		for _, r := range rows {
			if len(r.Shape) > 64 {
				t.Errorf("%.60s: row %d has %d dims", c.prog, r.Step, len(r.Shape))
			}
		}
	}
	// At the cap itself every op still works: 64 dims is legal.
	for _, prog := range []string{
		"x = empty(1)" + strings.Repeat(".unsqueeze(0)", 63),
		"x = empty(1)" + strings.Repeat("[None]", 63),
		"x = empty(" + ones(64) + ")[0, None]",
	} {
		rows, err := Eval(prog)
		if err != nil || rows[len(rows)-1].Error != "" || len(rows[len(rows)-1].Shape) != 64 {
			t.Errorf("%.60s: want a 64-dim result, got err %v rows %+v", prog, err, rows[len(rows)-1].Shape)
		}
	}
}
