package layoutexpr

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLocate: a byte offset resolves to its line, its column in bytes and
// in runes, and the line's text; offsets outside the program clamp to it.
func TestLocate(t *testing.T) {
	src := "ab\néé x\nlast"
	cases := []struct {
		pos, line, col, runeCol int
		text                    string
	}{
		{0, 1, 1, 1, "ab"},
		{2, 1, 3, 3, "ab"},
		{len("ab\néé "), 2, 6, 4, "éé x"},
		{len(src), 3, 5, 5, "last"},
		{len(src) + 9, 3, 5, 5, "last"},
		{-3, 1, 1, 1, "ab"},
	}
	for _, c := range cases {
		p := Locate(src, c.pos)
		if p.Line != c.line || p.Col != c.col || p.RuneCol() != c.runeCol || p.Text != c.text {
			t.Errorf("Locate(%d) = %+v (rune column %d), want line %d col %d rune column %d %q",
				c.pos, p, p.RuneCol(), c.line, c.col, c.runeCol, c.text)
		}
	}
}

// TestCaret: the caret sits under the offending byte of its own line.
func TestCaret(t *testing.T) {
	src := "x = empty(2)\ny = x.bar()"
	_, err := Eval(src)
	se, ok := err.(*SyntaxError)
	if !ok {
		t.Fatalf("Eval(%q) = %v, want a *SyntaxError", src, err)
	}
	want := "  y = x.bar()\n        ^"
	if got := Locate(src, se.Pos).Caret(); got != want {
		t.Errorf("Caret() =\n%s\nwant\n%s", got, want)
	}
}

// TestRowErr: a failed step's error names its step, and its line when
// the program has several; a step that worked has none.
func TestRowErr(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"empty(2,3).view(4)", "step 2 .view(4): view: shape '[4]' is invalid for input of size 6"},
		{"x = empty(2,3)\ny = x.view(4)", "line 2, step 2 .view(4): view: shape '[4]' is invalid for input of size 6"},
	} {
		rows, err := Eval(c.src)
		if err != nil {
			t.Fatalf("Eval(%q): %v", c.src, err)
		}
		if err := rows[0].Err(c.src); err != nil {
			t.Errorf("%q: step 1 worked, Err = %v", c.src, err)
		}
		last := rows[len(rows)-1]
		if err := last.Err(c.src); err == nil || err.Error() != c.want {
			t.Errorf("%q: Err = %v, want %q", c.src, err, c.want)
		}
	}
}

// TestReadProgram: a program file is read whole; a directory, a missing
// file and one over MaxProgramLen are refused with one line naming it.
func TestReadProgram(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok.py")
	if err := os.WriteFile(ok, []byte("empty(2)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if src, err := ReadProgram(ok); err != nil || src != "empty(2)\n" {
		t.Errorf("ReadProgram(ok) = %q, %v", src, err)
	}
	big := filepath.Join(dir, "big.py")
	if err := os.WriteFile(big, []byte(strings.Repeat(" ", MaxProgramLen+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		dir:                              "not a regular file",
		big:                              "program longer than",
		filepath.Join(dir, "missing.py"): "no such file",
	} {
		if _, err := ReadProgram(path); err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("ReadProgram(%s) = %v, want one line with %q", path, err, want)
		}
	}
}
