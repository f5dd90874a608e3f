package tokenizer

import (
	"container/heap"
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
// which Metaspace's prepend_scheme "first" asks for.
func (t *Tokenizer) encodeBPE(out []int, text string, atStart bool) ([]int, error) {
	for _, n := range t.norm {
		if n.op == "prefix-space-first" && !atStart {
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
		s := w[i : i+n]
		id, ok := t.ids[s]
		if !ok {
			id = -1
		}
		syms = append(syms, symbol{text: s, id: id})
		i += n
	}
	for i := range syms {
		syms[i].prev, syms[i].next = i-1, i+1
	}
	syms[len(syms)-1].next = -1
	q := make(pairQueue, 0, len(syms))
	try := func(l, r int, build bool) {
		if l < 0 || r < 0 || syms[l].id < 0 || syms[r].id < 0 {
			return
		}
		m, ok := t.ranks[[2]int{syms[l].id, syms[r].id}]
		if !ok {
			return
		}
		bg := bigram{rank: m.rank, left: l, right: r, id: m.id, size: len(syms[l].text) + len(syms[r].text)}
		if build {
			q = append(q, bg)
		} else {
			q.push(bg)
		}
	}
	for i := 1; i < len(syms); i++ {
		try(i-1, i, true)
	}
	heap.Init(&q)
	for !q.empty() {
		bg := q.pop()
		l, r := &syms[bg.left], &syms[bg.right]
		if l.dead || r.dead || l.next != bg.right || len(l.text)+len(r.text) != bg.size {
			continue
		}
		l.text, l.id = t.pieces[bg.id], bg.id
		r.dead = true
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = bg.left
		}
		try(l.prev, bg.left, false)
		try(bg.left, l.next, false)
	}
	for i := 0; i >= 0; i = syms[i].next {
		s := syms[i]
		if s.id >= 0 {
			out = append(out, s.id)
			continue
		}
		// A character without a piece: its <0xHH> bytes (byte fallback),
		// else the unknown id, else an error.
		ok := true
		for k := 0; k < len(s.text) && ok; k++ {
			ok = t.byteIDs[s.text[k]] >= 0
		}
		switch {
		case ok && t.byteFallback():
			for k := 0; k < len(s.text); k++ {
				out = append(out, t.byteIDs[s.text[k]])
			}
		case t.unkID >= 0:
			out = append(out, t.unkID)
		default:
			return nil, fmt.Errorf("tokenizer: %q has no piece and the vocabulary has no byte fallback or unknown token", s.text)
		}
	}
	return out, nil
}

// byteFallback reports whether characters without a piece become <0xHH>
// pieces (tokenizer.json's byte_fallback; never for byte-level BPE, whose
// alphabet covers every byte).
func (t *Tokenizer) byteFallback() bool { return t.kind == MergesBPE && t.fallback }
