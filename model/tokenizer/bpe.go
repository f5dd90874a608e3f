package tokenizer

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// byteToRune is GPT-2's bytes_to_unicode: the printable Latin-1 bytes
// ('!'..'~', '¡'..'¬', '®'..'ÿ') stand for themselves, and the other 68
// bytes map in order to U+0100 onwards, so every byte is a printable
// character and a byte-level vocabulary needs no control characters ("Ġ",
// U+0120, is the space).
var byteToRune, runeToByte = func() (b2r [256]rune, r2b map[rune]byte) {
	r2b = make(map[rune]byte, 256)
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			b2r[b] = rune(b)
		} else {
			b2r[b] = rune(256 + n)
			n++
		}
		r2b[b2r[b]] = byte(b)
	}
	return
}()

// byteLevel spells the bytes of s in GPT-2's byte alphabet.
func byteLevel(s string) string {
	var sb strings.Builder
	sb.Grow(2 * len(s))
	for i := 0; i < len(s); i++ {
		sb.WriteRune(byteToRune[s[i]])
	}
	return sb.String()
}

// unByteLevel maps a byte-level piece back to its bytes; a character
// outside the byte alphabet is kept as its UTF-8 (llama.cpp writes
// [UNK_BYTE_...] there; keeping the text is kinder and never panics).
func unByteLevel(p string) string {
	var b []byte
	for _, r := range p {
		if c, ok := runeToByte[r]; ok {
			b = append(b, c)
		} else {
			b = utf8.AppendRune(b, r)
		}
	}
	return string(b)
}

// encodeBPE appends the ids of one plain fragment: normalize, split with
// the pre-tokenizer, then within each piece (in the byte alphabet for
// ByteLevelBPE) merge by rank, as llama.cpp's llm_tokenizer_bpe and
// Hugging Face's BPE model do.
//
// atStart says the fragment begins the input (not after a special token),
// which Metaspace's prepend_scheme "first" asks for. cont says the
// fragment continues a text cut in the middle (see Stream): nothing is
// prepended to it.
func (t *Tokenizer) encodeBPE(out []int, text string, atStart, cont bool) ([]int, error) {
	for _, n := range t.norm {
		if n.op == "prefix-space-first" && !atStart {
			continue
		}
		if cont && (n.op == "prepend" || n.op == "prefix-space") {
			continue
		}
		text = n.normalize(text)
	}
	var err error
	for _, w := range split(t.pre, text) {
		if t.kind == ByteLevelBPE {
			w = byteLevel(w)
		}
		if out, err = t.bpeWord(out, w); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// bpeWord merges one pre-tokenized word. With ignoreMerges (Llama 3) a
// word that is itself a piece is taken whole.
func (t *Tokenizer) bpeWord(out []int, w string) ([]int, error) {
	if w == "" {
		return out, nil
	}
	if t.ignoreMerges {
		if id, ok := t.ids[w]; ok {
			return append(out, id), nil
		}
	}
	syms := make([]symbol, 0, len(w))
	for i := 0; i < len(w); {
		_, n := utf8.DecodeRuneInString(w[i:])
		syms = append(syms, t.symbolOf(w[i:i+n]))
		i += n
	}
	t.mergePairs(syms, &mergeRule{})
	for i := 0; i >= 0; i = syms[i].next {
		s := syms[i]
		if s.id >= 0 {
			out = append(out, s.id)
			continue
		}
		var ok bool
		if out, ok = t.appendUnknown(out, s.text, t.byteFallback()); !ok {
			return nil, fmt.Errorf("tokenizer: %q has no piece and the vocabulary has no byte fallback or unknown token", s.text)
		}
	}
	return out, nil
}

// rankPair is the candidate merge of symbols l and r by rank: both must be
// pieces, and the pair a merge rule.
func (t *Tokenizer) rankPair(syms []symbol, l, r int) (bigram, bool) {
	if syms[l].id < 0 || syms[r].id < 0 {
		return bigram{}, false
	}
	m, ok := t.ranks[[2]int{syms[l].id, syms[r].id}]
	if !ok {
		return bigram{}, false
	}
	return bigram{rank: m.rank, left: l, right: r, id: m.id, size: len(syms[l].text) + len(syms[r].text)}, true
}

// byteFallback reports whether characters without a piece become <0xHH>
// pieces (tokenizer.json's byte_fallback; never for byte-level BPE, whose
// alphabet covers every byte).
func (t *Tokenizer) byteFallback() bool { return t.kind == MergesBPE && t.fallback }
