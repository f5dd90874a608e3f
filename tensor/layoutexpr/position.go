package layoutexpr

import (
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// Position is a place in a program: a byte offset (a SyntaxError's Pos, a
// failed Row's ErrPos) resolved to its line, for the front ends that
// point at it (`infer layout`'s caret, the explorer's line and column).
type Position struct {
	Line int    // 1-based
	Col  int    // 1-based, in bytes
	Text string // the line that holds it, without its newline
}

// Locate resolves the byte offset pos of src, clamped to src.
func Locate(src string, pos int) Position {
	pos = min(max(pos, 0), len(src))
	start := strings.LastIndexByte(src[:pos], '\n') + 1
	end := strings.IndexByte(src[pos:], '\n')
	if end < 0 {
		end = len(src)
	} else {
		end += pos
	}
	return Position{Line: 1 + strings.Count(src[:pos], "\n"), Col: 1 + pos - start, Text: src[start:end]}
}

// RuneCol is Col counted in runes (characters), the unit a browser's
// text field uses.
func (p Position) RuneCol() int { return 1 + utf8.RuneCountInString(p.Text[:p.Col-1]) }

// Caret shows the line with a caret under the column, both indented by
// two spaces, as a terminal prints it under the error.
func (p Position) Caret() string {
	return fmt.Sprintf("  %s\n  %s^", p.Text, strings.Repeat(" ", p.Col-1))
}

// Err is the error of a failed row as one line naming its step (and its
// line, in a program src of several lines) and PyTorch's message; nil
// when the step worked.
func (r *Row) Err(src string) error {
	if r.Error == "" {
		return nil
	}
	where := fmt.Sprintf("step %d", r.Step)
	if strings.Contains(src, "\n") {
		where = fmt.Sprintf("line %d, step %d", Locate(src, r.ErrPos).Line, r.Step)
	}
	return fmt.Errorf("%s %s: %s", where, r.Op, r.Error)
}

// ReadProgram reads a program from the file at path: a regular file of
// at most MaxProgramLen bytes (a device or FIFO given by mistake is
// refused, not read without end).
func ReadProgram(path string) (string, error) {
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
	b, err := io.ReadAll(io.LimitReader(f, MaxProgramLen+1))
	if err != nil {
		return "", fmt.Errorf("%s: %v", path, err)
	}
	if len(b) > MaxProgramLen {
		return "", fmt.Errorf("%s: program longer than %d bytes", path, MaxProgramLen)
	}
	return string(b), nil
}
