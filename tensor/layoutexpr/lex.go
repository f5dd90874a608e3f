package layoutexpr

import (
	"fmt"
	"strconv"
	"strings"
)

// The lexer turns a program into tokens. It knows Python's implicit line
// joining (a newline inside brackets is whitespace), so a statement may
// span lines inside parentheses, and '#' comments.

type tokKind uint8

const (
	tokEOF tokKind = iota
	tokInt
	tokFloat
	tokName
	tokOp  // punctuation and operators: ( ) [ ] , . = : ; @ + - * / ** ...
	tokEnd // a statement separator: ';' or a newline outside brackets
)

type token struct {
	kind tokKind
	text string
	n    int     // value of a tokInt
	f    float64 // value of a tokFloat
	pos  int
}

func (t token) String() string {
	switch t.kind {
	case tokEOF:
		return "end of program"
	case tokEnd:
		if t.text == ";" {
			return `";"`
		}
		return "end of line"
	}
	return strconv.Quote(t.text)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isNameStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

// lex tokenizes src. Integers are bounded by 2^53 in magnitude so that no
// later product of two of them overflows int64 unnoticed.
func lex(src string) ([]token, error) {
	var toks []token
	depth := 0
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case c == '\\' && i+1 < len(src) && src[i+1] == '\n':
			i += 2
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '\n' || c == ';':
			if depth == 0 {
				toks = append(toks, token{kind: tokEnd, text: src[i : i+1], pos: i})
			} else if c == ';' {
				return nil, &SyntaxError{src, i, `unexpected ";" inside brackets`}
			}
			i++
		case isDigit(c) || (c == '.' && i+1 < len(src) && isDigit(src[i+1])):
			t, err := lexNumber(src, i)
			if err != nil {
				return nil, err
			}
			toks = append(toks, t)
			i += len(t.text)
		case isNameStart(c):
			j := i + 1
			for j < len(src) && (isNameStart(src[j]) || isDigit(src[j])) {
				j++
			}
			toks = append(toks, token{kind: tokName, text: src[i:j], pos: i})
			i = j
		default:
			op := ""
			for _, o := range []string{"...", "**", "//", "(", ")", "[", "]", ",", ".", "=", ":", "@", "+", "-", "*", "/"} {
				if strings.HasPrefix(src[i:], o) {
					op = o
					break
				}
			}
			if op == "" {
				return nil, &SyntaxError{src, i, fmt.Sprintf("unexpected character %q", rune(c))}
			}
			switch op {
			case "(", "[":
				depth++
				if depth > maxDepth {
					return nil, &SyntaxError{src, i, fmt.Sprintf("brackets nested deeper than %d", maxDepth)}
				}
			case ")", "]":
				if depth > 0 {
					depth--
				}
			}
			toks = append(toks, token{kind: tokOp, text: op, pos: i})
			i += len(op)
		}
	}
	return append(toks, token{kind: tokEOF, pos: len(src)}), nil
}

// lexNumber scans the int or float literal starting at src[i].
func lexNumber(src string, i int) (token, error) {
	j, float := i, false
	for j < len(src) && isDigit(src[j]) {
		j++
	}
	if j < len(src) && src[j] == '.' && !(j+1 < len(src) && src[j+1] == '.') {
		float = true
		j++
		for j < len(src) && isDigit(src[j]) {
			j++
		}
	}
	if j < len(src) && (src[j] == 'e' || src[j] == 'E') {
		k := j + 1
		if k < len(src) && (src[k] == '+' || src[k] == '-') {
			k++
		}
		if k < len(src) && isDigit(src[k]) {
			float = true
			for j = k; j < len(src) && isDigit(src[j]); j++ {
			}
		}
	}
	if j < len(src) && (isNameStart(src[j]) || isDigit(src[j])) {
		return token{}, &SyntaxError{src, j, fmt.Sprintf("invalid number %q", src[i:j+1])}
	}
	if float {
		f, err := strconv.ParseFloat(src[i:j], 64)
		if err != nil {
			return token{}, &SyntaxError{src, i, fmt.Sprintf("invalid number %q", src[i:j])}
		}
		return token{kind: tokFloat, text: src[i:j], f: f, pos: i}, nil
	}
	v, err := strconv.ParseInt(src[i:j], 10, 64)
	if err != nil || v > maxInt {
		return token{}, &SyntaxError{src, i, fmt.Sprintf("integer %s is out of range (|n| must be at most 2^53)", src[i:j])}
	}
	return token{kind: tokInt, text: src[i:j], n: int(v), pos: i}, nil
}
