package tokenizer

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// A tokenizer.json's text pipeline before the merges: its normalizer
// becomes this package's normalizers, and its pre-tokenizer splitters plus
// the rewrites some pre-tokenizers imply (ByteLevel's prefix space,
// Metaspace's ▁).

// jsonNormalizers maps a normalizer (or a Sequence of them) to the
// rewrites applied in order before splitting.
func jsonNormalizers(n *jsonNode) ([]normalizer, error) {
	if n == nil {
		return nil, nil
	}
	switch n.Type {
	case "Sequence":
		var out []normalizer
		for i := range n.Normalizers {
			s, err := jsonNormalizers(&n.Normalizers[i])
			if err != nil {
				return nil, err
			}
			out = append(out, s...)
		}
		return out, nil
	case "NFC":
		return []normalizer{{op: "nfc"}}, nil
	case "Prepend":
		return []normalizer{{op: "prepend", a: n.Prepend}}, nil
	case "Lowercase":
		return []normalizer{{op: "lowercase"}}, nil
	case "Replace":
		if n.Pattern.String == nil || n.Content == nil {
			return nil, errors.New("Replace supports only a String pattern")
		}
		return []normalizer{{op: "replace", a: *n.Pattern.String, b: *n.Content}}, nil
	}
	return nil, fmt.Errorf("%q is not supported", n.Type)
}

// Known pre-tokenizer patterns, served by the hand-written splitters.
const (
	patGPT2   = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	patLlama3 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	patQwen2  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// jsonPreTokenizers returns the splitters and the text rewrites (ByteLevel's
// prefix space, Metaspace's ▁) a pre-tokenizer implies.
func jsonPreTokenizers(n *jsonNode) ([]splitter, []normalizer, error) {
	if n == nil {
		return nil, nil, nil
	}
	switch n.Type {
	case "Sequence":
		var sp []splitter
		var norm []normalizer
		for i := range n.Pretokenizers {
			s, nn, err := jsonPreTokenizers(&n.Pretokenizers[i])
			if err != nil {
				return nil, nil, err
			}
			sp, norm = append(sp, s...), append(norm, nn...)
		}
		return sp, norm, nil
	case "ByteLevel":
		var norm []normalizer
		if n.AddPrefixSpace {
			norm = append(norm, normalizer{op: "prefix-space"})
		}
		if n.UseRegex == nil || *n.UseRegex {
			return []splitter{splitGPT2}, norm, nil
		}
		return nil, norm, nil
	case "Split":
		if n.Invert {
			return nil, nil, errors.New("Split with invert is not supported")
		}
		if n.Behavior != "Isolated" {
			return nil, nil, fmt.Errorf("Split behavior %q is not supported (only Isolated)", n.Behavior)
		}
		switch {
		case n.Pattern.Regex != nil:
			if err := checkPattern("Split pattern", *n.Pattern.Regex); err != nil {
				return nil, nil, err
			}
			sp, err := regexSplitter(*n.Pattern.Regex)
			if err != nil {
				return nil, nil, err
			}
			return []splitter{sp}, nil, nil
		case n.Pattern.String != nil && *n.Pattern.String != "":
			if err := checkPattern("Split pattern", *n.Pattern.String); err != nil {
				return nil, nil, err
			}
			return []splitter{literalSplitter(*n.Pattern.String)}, nil, nil
		}
		return nil, nil, errors.New("Split without a pattern")
	case "Digits":
		return []splitter{isolate(isN, !n.Individual)}, nil, nil
	case "Metaspace":
		r := n.Replacement
		if r == "" {
			r = "▁"
		}
		if err := checkPattern("Metaspace replacement", r); err != nil {
			return nil, nil, err
		}
		norm := []normalizer{{op: "replace", a: " ", b: r}}
		switch n.PrependScheme {
		case "first":
			norm = append([]normalizer{{op: "prefix-space-first"}}, norm...)
		case "never":
		default: // "always", and older files' add_prefix_space
			norm = append([]normalizer{{op: "prefix-space"}}, norm...)
		}
		if n.Split != nil && *n.Split {
			return []splitter{beforeEach(r)}, norm, nil
		}
		return nil, norm, nil
	}
	return nil, nil, fmt.Errorf("%q is not supported", n.Type)
}

// regexSplitter serves the GPT-2, Llama 3 and Qwen2 patterns by hand, and
// any other pattern that Go's RE2 compiles (no lookahead) by regexp.
func regexSplitter(pat string) (splitter, error) {
	switch pat {
	case patGPT2:
		return splitGPT2, nil
	case patLlama3:
		return splitLlama3(3), nil
	case patQwen2:
		return splitLlama3(1), nil
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		return nil, fmt.Errorf("Split pattern %q: Go's regexp cannot run it (%v)", pat, err)
	}
	return func(r []rune, emit func(int)) {
		s := string(r)
		// Byte offsets → rune counts.
		last := 0
		for _, m := range re.FindAllStringIndex(s, -1) {
			if m[0] == m[1] {
				continue
			}
			emit(len([]rune(s[last:m[0]])))
			emit(len([]rune(s[m[0]:m[1]])))
			last = m[1]
		}
		emit(len([]rune(s[last:])))
	}, nil
}

// literalSplitter isolates every occurrence of lit.
func literalSplitter(lit string) splitter {
	return func(r []rune, emit func(int)) {
		s := string(r)
		for {
			k := strings.Index(s, lit)
			if k < 0 {
				emit(len([]rune(s)))
				return
			}
			emit(len([]rune(s[:k])))
			emit(len([]rune(lit)))
			s = s[k+len(lit):]
		}
	}
}

// beforeEach splits before every occurrence of sep (Metaspace's split:
// each word keeps its leading ▁).
func beforeEach(sep string) splitter {
	sr := []rune(sep)
	return func(r []rune, emit func(int)) {
		start := 0
		for i := 1; i < len(r); i++ {
			if len(sr) == 1 && r[i] == sr[0] {
				emit(i - start)
				start = i
			}
		}
		emit(len(r) - start)
	}
}
