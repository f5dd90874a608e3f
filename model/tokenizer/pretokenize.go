package tokenizer

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// A splitter cuts one segment of text into consecutive pieces that
// together are the whole segment (a regex split with "isolated" matches:
// both the matches and the gaps between them are pieces). Pre-tokenizers
// are lists of splitters applied in turn, each to every piece of the one
// before, as llama.cpp's unicode_regex_split applies its regex list.
//
// Go's regexp (RE2) has no lookahead, and the GPT-2, Llama 3 and Qwen2
// patterns need \s+(?!\S), so they are written out by hand here, one
// branch per alternative of the pattern, in the pattern's order.
type splitter func(r []rune, emit func(n int))

// split applies the splitters to text and returns the pieces. A segment
// is handled as runes; an invalid UTF-8 byte is one rune (U+FFFD, a
// symbol) but its original byte is kept in the piece.
func split(pre []splitter, text string) []string {
	segs := []string{text}
	if text == "" {
		return nil
	}
	var runes []rune
	var offs []int
	for _, sp := range pre {
		var next []string
		for _, s := range segs {
			runes, offs = runes[:0], offs[:0]
			for i := 0; i < len(s); {
				r, n := utf8.DecodeRuneInString(s[i:])
				runes, offs = append(runes, r), append(offs, i)
				i += n
			}
			offs = append(offs, len(s))
			pos := 0
			sp(runes, func(n int) {
				if n > 0 {
					next = append(next, s[offs[pos]:offs[pos+n]])
					pos += n
				}
			})
			if pos < len(runes) { // a splitter must cover its segment; be safe
				next = append(next, s[offs[pos]:])
			}
		}
		segs = next
	}
	return segs
}

func isL(r rune) bool { return unicode.IsLetter(r) }
func isN(r rune) bool { return unicode.IsNumber(r) }

// isS is \s: Unicode White_Space, which is what Go's IsSpace tests (and
// llama.cpp's whitespace table holds).
func isS(r rune) bool { return unicode.IsSpace(r) }

// isOther is [^\s\p{L}\p{N}].
func isOther(r rune) bool { return !isS(r) && !isL(r) && !isN(r) }

// at returns r[i], or -1 past the end (which no class contains).
func at(r []rune, i int) rune {
	if i < len(r) {
		return r[i]
	}
	return -1
}

func class(r []rune, i int, f func(rune) bool) bool { return i < len(r) && f(r[i]) }

// contraction matches 's|'t|'re|'ve|'m|'ll|'d at i (ASCII case folded when
// fold), returning its length or 0.
func contraction(r []rune, i int, fold bool) int {
	if at(r, i) != '\'' {
		return 0
	}
	low := func(c rune) rune {
		if fold && c >= 'A' && c <= 'Z' {
			return c + 'a' - 'A'
		}
		return c
	}
	switch c := low(at(r, i+1)); c {
	case 's', 't', 'm', 'd':
		return 2
	case 'r', 'v':
		if low(at(r, i+2)) == 'e' {
			return 3
		}
	case 'l':
		if low(at(r, i+2)) == 'l' {
			return 3
		}
	}
	return 0
}

// spaceRun matches \s+(?!\S)|\s+ at i: a run of n whitespace characters
// followed by a non-space gives n-1 (leaving the last space to prefix the
// next word), except that a single one, or a run reaching the end, is
// taken whole.
func spaceRun(r []rune, i int) int {
	n := 0
	for class(r, i+n, isS) {
		n++
	}
	if n > 1 && i+n < len(r) {
		return n - 1
	}
	return n
}

// run returns how many characters from i satisfy f.
func run(r []rune, i int, f func(rune) bool) int {
	n := 0
	for class(r, i+n, f) {
		n++
	}
	return n
}

// splitGPT2 is GPT-2's pattern:
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
func splitGPT2(r []rune, emit func(int)) {
	for i := 0; i < len(r); {
		n := contraction(r, i, false)
		if n == 0 {
			sp := 0
			if r[i] == ' ' {
				sp = 1
			}
			for _, f := range []func(rune) bool{isL, isN, isOther} {
				if m := run(r, i+sp, f); m > 0 {
					n = sp + m
					break
				}
			}
		}
		if n == 0 {
			n = spaceRun(r, i)
		}
		if n == 0 {
			n = 1
		}
		emit(n)
		i += n
	}
}

// splitLlama3 is Llama 3's pattern with \p{N}{1,maxDigits} (3 for Llama 3,
// 1 for Qwen2):
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//	 ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
func splitLlama3(maxDigits int) splitter {
	return func(r []rune, emit func(int)) {
		for i := 0; i < len(r); {
			n := llama3At(r, i, maxDigits)
			emit(n)
			i += n
		}
	}
}

func llama3At(r []rune, i, maxDigits int) int {
	if n := contraction(r, i, true); n > 0 {
		return n
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+
	c := r[i]
	if c != '\r' && c != '\n' && !isL(c) && !isN(c) {
		if m := run(r, i+1, isL); m > 0 {
			return 1 + m
		}
	}
	if m := run(r, i, isL); m > 0 {
		return m
	}
	// \p{N}{1,maxDigits}
	if m := run(r, i, isN); m > 0 {
		return min(m, maxDigits)
	}
	//  ?[^\s\p{L}\p{N}]+[\r\n]*
	sp := 0
	if c == ' ' {
		sp = 1
	}
	if m := run(r, i+sp, isOther); m > 0 {
		n := sp + m
		return n + run(r, i+n, func(c rune) bool { return c == '\r' || c == '\n' })
	}
	// \s*[\r\n]+ : the whitespace run up to and including its last \r or \n.
	ws := run(r, i, isS)
	for k := ws - 1; k >= 0; k-- {
		if r[i+k] == '\r' || r[i+k] == '\n' {
			return k + 1
		}
	}
	if n := spaceRun(r, i); n > 0 {
		return n
	}
	return 1
}

// isolate returns the splitter of a one-class pattern: each character of
// the class alone (c), or each run of it (c+), between the gaps.
func isolate(f func(rune) bool, runs bool) splitter {
	return func(r []rune, emit func(int)) {
		for i := 0; i < len(r); {
			var n int
			if f(r[i]) {
				n = 1
				if runs {
					n = run(r, i, f)
				}
			} else {
				n = run(r, i, func(c rune) bool { return !f(c) })
			}
			emit(n)
			i += n
		}
	}
}

// splitThreeDigits is [0-9][0-9][0-9]: each group of three ASCII digits,
// leftmost first, and the gaps.
func splitThreeDigits(r []rune, emit func(int)) {
	gap := 0
	for i := 0; i < len(r); {
		if i+2 < len(r) && isDigit(r[i]) && isDigit(r[i+1]) && isDigit(r[i+2]) {
			emit(gap)
			gap = 0
			emit(3)
			i += 3
			continue
		}
		gap++
		i++
	}
	emit(gap)
}

func isDigit(c rune) bool { return c >= '0' && c <= '9' }

// isDefaultPunct is [\p{P}\$\+<=>\^~\|].
func isDefaultPunct(c rune) bool {
	switch c {
	case '$', '+', '<', '=', '>', '^', '~', '|':
		return true
	}
	return unicode.IsPunct(c)
}

// preTokenizer returns the splitters llama.cpp's llm_tokenizer_bpe uses
// for the GGUF tokenizer.ggml.pre name, and whether Llama 3's rules
// (ignore_merges) come with it.
func preTokenizer(name string) (pre []splitter, ignoreMerges bool, err error) {
	switch name {
	case "llama3", "llama-v3", "llama-bpe", "falcon3", "dbrx", "smaug-bpe", "chatglm-bpe":
		return []splitter{splitLlama3(3)}, name != "dbrx" && name != "smaug-bpe" && name != "chatglm-bpe", nil
	case "qwen2", "deepseek-r1-qwen", "stablelm2", "megrez":
		return []splitter{splitLlama3(1)}, false, nil
	case "gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v1-en", "jina-v2-es", "jina-v2-de",
		"jina-v2-code", "roberta-bpe", "mpt", "olmo", "jais":
		return []splitter{splitGPT2}, false, nil
	case "starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b":
		return []splitter{isolate(isN, false), splitGPT2}, false, nil
	case "default", "":
		return []splitter{isolate(isDefaultPunct, true), splitGPT2, isolate(isN, true), splitThreeDigits}, false, nil
	}
	return nil, false, fmt.Errorf("tokenizer: pre-tokenizer %q is not supported (supported: gpt-2, llama-bpe, qwen2, starcoder, smollm, refact, default and their aliases)", name)
}
