package tokenizer

import (
	"sort"
	"strings"
)

// fragment is a piece of the input: either plain text (id < 0) to be
// merged, or a special token cut out of it.
type fragment struct {
	text string
	id   int
}

// partition cuts text at every occurrence of the special tokens, longest
// token first, as llama.cpp's tokenizer_st_partition and the added-token
// pass of Hugging Face tokenizers do. Control and unknown tokens take part
// only when parseSpecial; user-defined ones always. A token marked lstrip
// (rstrip) also swallows the ASCII whitespace before (after) it.
func (t *Tokenizer) partition(text string, parseSpecial bool) []fragment {
	frags := []fragment{{text: text, id: -1}}
	if text == "" {
		return nil
	}
	for _, id := range t.specials {
		if !t.types[id].special(parseSpecial) {
			continue
		}
		tok := t.pieces[id]
		var next []fragment
		changed := false
		for _, f := range frags {
			if f.id >= 0 || !strings.Contains(f.text, tok) {
				next = append(next, f)
				continue
			}
			changed = true
			s := f.text
			for {
				k := strings.Index(s, tok)
				if k < 0 {
					break
				}
				left := s[:k]
				if t.lstrip[id] {
					left = strings.TrimRight(left, asciiSpace)
				}
				if left != "" {
					next = append(next, fragment{text: left, id: -1})
				}
				next = append(next, fragment{id: id})
				s = s[k+len(tok):]
				if t.rstrip[id] {
					s = strings.TrimLeft(s, asciiSpace)
				}
			}
			if s != "" {
				next = append(next, fragment{text: s, id: -1})
			}
		}
		if changed {
			frags = next
		}
	}
	return frags
}

// asciiSpace is C's isspace in the C locale, which llama.cpp's lstrip and
// rstrip use.
const asciiSpace = " \t\n\v\f\r"

// sortStable sorts ids by less, keeping the order of equals.
func sortStable(ids []int, less func(a, b int) bool) {
	sort.SliceStable(ids, func(i, j int) bool { return less(ids[i], ids[j]) })
}

// normalizer is one step that rewrites plain text before
// pre-tokenization (tokenizer.json's "normalizer", and the rewrites its
// pre-tokenizers imply): op is "prepend" (a before non-empty text),
// "replace" (every a by b), "lowercase", "nfc", or "prefix-space" (a space
// unless the text starts with one; "prefix-space-first" only for the
// fragment that starts the input).
type normalizer struct {
	op   string
	a, b string
}

// normalize applies the step.
func (n normalizer) normalize(s string) string {
	switch n.op {
	case "prepend":
		if s == "" {
			return s
		}
		return n.a + s
	case "replace":
		return strings.ReplaceAll(s, n.a, n.b)
	case "lowercase":
		return strings.ToLower(s)
	case "nfc":
		return nfc(s)
	case "prefix-space", "prefix-space-first": // ByteLevel's add_prefix_space, Metaspace's prepend
		if s == "" || s[0] == ' ' {
			return s
		}
		return " " + s
	}
	return s
}

// decoder turns one piece back into bytes (tokenizer.json's "decoder";
// the GGUF kinds get theirs from the vocabulary type).
type decoder struct {
	byteLevel    bool        // map GPT-2's byte alphabet back to bytes
	byteFallback bool        // a <0xHH> piece is the byte 0xHH
	replace      [][2]string // Replace steps, in order
	// stripFirst is dropped once from the front of the first piece of a
	// text (SentencePiece's dummy prefix: Strip / Metaspace decoders,
	// llama.cpp's remove_space_prefix).
	stripFirst string
}

func (d *decoder) decode(t *Tokenizer, p string, first bool) string {
	if d.byteFallback {
		if b, ok := bytePiece(p); ok {
			return byteStrings[b]
		}
	}
	if d.byteLevel {
		p = unByteLevel(p)
	}
	for _, r := range d.replace {
		p = strings.ReplaceAll(p, r[0], r[1])
	}
	if first && d.stripFirst != "" {
		p = strings.TrimPrefix(p, d.stripFirst)
	}
	return p
}
