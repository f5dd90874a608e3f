package explain

import (
	"encoding/json"
	"testing"

	"github.com/stride-lm/stride/tensor/layoutexpr"
)

func decode(t *testing.T, src string) Explained {
	t.Helper()
	var e Explained
	if err := json.Unmarshal(Explain(src), &e); err != nil {
		t.Fatalf("%q: %v", src, err)
	}
	return e
}

// The page's rows are exactly infer layout --output json's bytes.
func TestRowsAreLayoutJSON(t *testing.T) {
	for _, src := range []string{
		"arange(12).view(3,4).t().contiguous()",
		"q, k, v = empty(2, 16, 192).split(64, -1); s = q @ k.mT",
		"x = arange(12).view(3, 4).t(); y = x.view(12)",
	} {
		rows, err := layoutexpr.Eval(src)
		if err != nil {
			t.Fatal(err)
		}
		want := layoutexpr.MarshalRows(rows)
		if got := decode(t, src).Rows; got != string(want) {
			t.Errorf("%q: rows\n%s\nwant\n%s", src, got, want)
		}
	}
}

// Storage lengths are counted in the row's own elements: 12 int64 for
// arange(12) and its views, and a view(dtype) to a narrower type sees
// more, smaller elements of the same bytes.
func TestExtraStorage(t *testing.T) {
	e := decode(t, "x = arange(12).view(3, 4).t(); y = x.contiguous(); z = empty(4).view(torch.float16)")
	want := []Extra{
		{Step: 1, StorageStep: 1, StorageElems: 12, Itemsize: 8},
		{Step: 2, StorageStep: 1, StorageElems: 12, Itemsize: 8},
		{Step: 3, StorageStep: 1, StorageElems: 12, Itemsize: 8},
		{Step: 4, StorageStep: 4, StorageElems: 12, Itemsize: 8},
		{Step: 5, StorageStep: 5, StorageElems: 4, Itemsize: 4},
		{Step: 6, StorageStep: 5, StorageElems: 8, Itemsize: 2},
	}
	if len(e.Extra) != len(want) {
		t.Fatalf("extra %+v, want %+v", e.Extra, want)
	}
	for i := range want {
		if e.Extra[i] != want[i] {
			t.Errorf("extra[%d] = %+v, want %+v", i, e.Extra[i], want[i])
		}
	}
	if e.Error != nil {
		t.Errorf("error %+v for a program that runs", e.Error)
	}
}

// Errors are placed at PyTorch's failing op or the bad token, with the
// column counted in characters.
func TestErrorPlacement(t *testing.T) {
	// The syntax error is at the end of the program: column 16, as infer
	// layout's "column 16" and its caret say.
	e := decode(t, "x = empty(3,4)[")
	if e.Error == nil || e.Error.Kind != "syntax" || e.Error.Line != 1 || e.Error.Col != 16 || e.Rows != "" {
		t.Fatalf("syntax error: %+v rows %q", e.Error, e.Rows)
	}
	// A failing step on line 2, after a comment with a two-byte character.
	src := "x = arange(12).view(3, 4).t()  # é\ny = x.view(12)"
	e = decode(t, src)
	rows, _ := layoutexpr.Eval(src)
	last := rows[len(rows)-1]
	if e.Error == nil || e.Error.Kind != "step" || e.Error.Msg != last.Error || e.Error.Step != last.Step || e.Error.Pos != last.ErrPos {
		t.Fatalf("step error %+v, want the last row's %q at %d", e.Error, last.Error, last.ErrPos)
	}
	if e.Error.Line != 2 || e.Error.Col != 1+last.ErrPos-len("x = arange(12).view(3, 4).t()  # é\n") {
		t.Errorf("step error at line %d col %d (pos %d)", e.Error.Line, e.Error.Col, last.ErrPos)
	}
}

// Whatever the program, Explain returns one valid JSON document whose
// rows are layoutexpr.MarshalRows's bytes and whose extra entries match them one
// for one, and an error position inside the program.
func FuzzExplain(f *testing.F) {
	for _, s := range []string{
		"arange(12).view(3,4).t()", "x = empty(3,4)[", "q, k, v = empty(2, 16, 192).split(64, -1)",
		"x = arange(10)\nw = x.unfold(0, 4, 2)", "empty(4).view(torch.float16)", "é = 1", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 4096 {
			return
		}
		var e Explained
		if err := json.Unmarshal(Explain(src), &e); err != nil {
			t.Fatalf("%q: invalid JSON: %v", src, err)
		}
		rs, err := layoutexpr.Eval(src)
		want := layoutexpr.MarshalRows(rs)
		if (err != nil) != (e.Rows == "") || (err == nil && e.Rows != string(want)) {
			t.Fatalf("%q: rows %q, layoutexpr.MarshalRows %q, %v", src, e.Rows, want, err)
		}
		if e.Error != nil && (e.Error.Pos < 0 || e.Error.Pos > len(src) || e.Error.Line < 1 || e.Error.Col < 1) {
			t.Fatalf("%q: error placed at %+v", src, *e.Error)
		}
		if e.Rows != "" {
			var rows []json.RawMessage
			if err := json.Unmarshal([]byte(e.Rows), &rows); err != nil || len(rows) != len(e.Extra) {
				t.Fatalf("%q: %d rows, %d extra (%v)", src, len(rows), len(e.Extra), err)
			}
		}
	})
}
