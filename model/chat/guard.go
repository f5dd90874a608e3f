package chat

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// A chat template comes inside the model file, from whoever made it, and
// the Jinja renderer has no limits of its own: a macro that calls itself
// overflows the goroutine stack, which Go cannot recover (the process dies
// with a stack trace), and range(10**9) or 'x' * 10**9 allocate without
// bound. checkTemplateBounds refuses, before compiling, what the source
// shows: the templates that can recurse, nest too deep or spell a huge
// literal count. What depends on values (a computed bound) is the
// Budget's, checked while rendering (meter.go):
//
//   - a macro that calls a macro, calls one of its parameters or caller()
//     (the only ways one can reach itself), or a macro used as a value
//     (passed or assigned, so that it can be called from elsewhere);
//   - a literal range bound or string repetition count above
//     maxTemplateCount;
//   - blocks ({% if %}, {% for %} …) or brackets inside a tag nested deeper
//     than maxTemplateNesting, a tag longer than maxTagBytes or a template
//     longer than maxTemplateBytes (the parser recurses once per level of
//     a block, bracket or unary operator).
//
// Real chat templates (Llama 2/3, ChatML, Mistral, Gemma, Phi, SmolLM,
// Qwen) do none of these; loops over the messages are bounded by them.
func checkTemplateBounds(src string) error {
	if len(src) > maxTemplateBytes {
		return fmt.Errorf("%d bytes, more than %d", len(src), maxTemplateBytes)
	}
	if err := checkNesting(src); err != nil {
		return err
	}
	if err := checkMacros(src); err != nil {
		return err
	}
	return checkCounts(src)
}

// maxTemplateNesting bounds block and bracket nesting; real templates
// nest a handful of levels.
const maxTemplateNesting = 64

// maxTemplateBytes and maxTagBytes bound the template and each of its
// tags (the longest real templates are tens of KiB, their tags a few
// hundred bytes).
const (
	maxTemplateBytes = 1 << 20
	maxTagBytes      = 16 << 10
)

var (
	tagRE      = regexp.MustCompile(`(?s)\{([{%])(.*?)[%}]\}`)
	blockOpen  = regexp.MustCompile(`^-?\s*(if|for|macro|call|filter|block)\b`)
	blockClose = regexp.MustCompile(`^-?\s*end(if|for|macro|call|filter|block)\b`)
)

// checkNesting applies the nesting rule of checkTemplateBounds.
func checkNesting(src string) error {
	blocks := 0
	for _, m := range tagRE.FindAllStringSubmatch(src, -1) {
		body := m[2]
		if len(body) > maxTagBytes {
			return fmt.Errorf("a tag of %d bytes, more than %d", len(body), maxTagBytes)
		}
		if m[1] == "%" {
			switch {
			case blockClose.MatchString(body):
				blocks--
			case blockOpen.MatchString(body):
				if blocks++; blocks > maxTemplateNesting {
					return fmt.Errorf("blocks nested more than %d deep", maxTemplateNesting)
				}
			}
		}
		depth := 0
		for _, c := range body {
			switch c {
			case '(', '[', '{':
				if depth++; depth > maxTemplateNesting {
					return fmt.Errorf("brackets nested more than %d deep in one tag", maxTemplateNesting)
				}
			case ')', ']', '}':
				depth--
			}
		}
	}
	return nil
}

// maxTemplateCount bounds the literal counts a template may loop or repeat
// by: far above any prompt format's needs, far below a memory problem.
const maxTemplateCount = 1 << 16

var (
	macroDefRE = regexp.MustCompile(`\{%-?\s*macro\s+([A-Za-z_]\w*)\s*\(([^)]*)\)\s*-?%\}`)
	macroEndRE = regexp.MustCompile(`\{%-?\s*endmacro\s*-?%\}`)
	rangeRE    = regexp.MustCompile(`\brange\s*\(([^)]*)\)`)
	repeatRE   = regexp.MustCompile(`\*\s*(\d+)|(\d+)\s*\*`)
)

// checkMacros applies the macro rules of checkTemplateBounds.
func checkMacros(src string) error {
	defs := macroDefRE.FindAllStringSubmatchIndex(src, -1)
	if len(defs) == 0 {
		return nil
	}
	var names []string
	for _, d := range defs {
		names = append(names, src[d[2]:d[3]])
	}
	for _, d := range defs {
		name := src[d[2]:d[3]]
		end := macroEndRE.FindStringIndex(src[d[1]:])
		if end == nil {
			return nil // unterminated: the compiler reports it
		}
		body := src[d[1] : d[1]+end[0]]
		callees := append(append([]string{"caller"}, names...), paramNames(src[d[4]:d[5]])...)
		for _, c := range callees {
			if regexp.MustCompile(`\b` + regexp.QuoteMeta(c) + `\s*\(`).MatchString(body) {
				return fmt.Errorf("macro %s calls %s(): a macro may not call macros, its parameters or caller() (recursion cannot be bounded)", name, c)
			}
		}
	}
	// Everywhere else a macro name must be a call: name( … ).
	header := macroDefRE.ReplaceAllString(src, "")
	for _, n := range names {
		for _, loc := range regexp.MustCompile(`\b`+regexp.QuoteMeta(n)+`\b`).FindAllStringIndex(header, -1) {
			if !strings.HasPrefix(strings.TrimLeft(header[loc[1]:], " \t\n"), "(") {
				return fmt.Errorf("macro %s is used as a value: only direct calls are allowed (recursion cannot be bounded)", n)
			}
		}
	}
	return nil
}

// paramNames is the names of a macro's parameter list "a, b=1".
func paramNames(list string) []string {
	var out []string
	for _, p := range strings.Split(list, ",") {
		p, _, _ = strings.Cut(p, "=")
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// checkCounts applies the count rule of checkTemplateBounds.
func checkCounts(src string) error {
	for _, m := range rangeRE.FindAllStringSubmatch(src, -1) {
		for _, arg := range strings.Split(m[1], ",") {
			if n, err := strconv.ParseInt(strings.TrimSpace(arg), 10, 64); err == nil && (n > maxTemplateCount || n < -maxTemplateCount) {
				return fmt.Errorf("range(%s) bound %d is over %d", m[1], n, maxTemplateCount)
			}
		}
	}
	for _, m := range repeatRE.FindAllStringSubmatch(src, -1) {
		lit := m[1] + m[2]
		if n, err := strconv.ParseInt(lit, 10, 64); err != nil || n > maxTemplateCount {
			return fmt.Errorf("repetition count %s is over %d", lit, maxTemplateCount)
		}
	}
	return nil
}
