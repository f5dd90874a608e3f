package tokenizer

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// llama2.c's fixed special ids and byte numbering: ids 3..258 are the raw
// bytes <0x00>..<0xFF> in the Llama vocabulary, and run.c's byte fallback
// is id b+3 without looking the piece up.
const (
	llama2cBOS = 1
	llama2cEOS = 2
	byteOffset = 3
)

// noMerge is run.c's starting best_score: a pair whose merged piece scores
// at or below it is never merged.
const noMerge = float32(-1e10)

// NewLlama2c returns the tokenizer of a llama2.c tokenizer.bin: pieces
// spell the space as ' ' (not "▁"), BOS is 1 and EOS is 2, and Encode and
// Decode follow run.c exactly (see encodeRunC). maxTokenLen is the file's
// max_token_length. The slices are kept, not copied.
func NewLlama2c(pieces []string, scores []float32, maxTokenLen int) (*Tokenizer, error) {
	if len(pieces) != len(scores) {
		return nil, fmt.Errorf("tokenizer: %d pieces but %d scores", len(pieces), len(scores))
	}
	if len(pieces) == 0 {
		return nil, fmt.Errorf("tokenizer: empty vocabulary")
	}
	// Types only serve DecodeAll (which drops <unk>, BOS and EOS unless
	// asked); run.c's Encode and Decode ignore them, and run.c parses no
	// special tokens in the text.
	types := make([]TokenType, len(pieces))
	for i, p := range pieces {
		types[i] = TypeNormal
		if _, ok := bytePiece(p); ok {
			types[i] = TypeByte
		}
	}
	types[0] = TypeUnknown
	for _, id := range []int{llama2cBOS, llama2cEOS} {
		if id < len(types) {
			types[id] = TypeControl
		}
	}
	t := newTokenizer(SentencePiece, pieces, scores, types)
	t.runc = true
	t.maxTokenLen = max(t.maxTokenLen, maxTokenLen)
	if len(pieces) > llama2cBOS {
		t.bos = llama2cBOS
	}
	if len(pieces) > llama2cEOS {
		t.eos = llama2cEOS
	}
	t.addBOS = true
	if id, ok := t.ids[" "]; ok {
		t.spaceID = id
	}
	t.setEOG()
	return t, nil
}

// encodeRunC appends the ids of text as run.c's encode does (after its
// optional BOS):
//
//  1. If text is not empty, the piece " " (SentencePiece's dummy prefix;
//     its byte id 0x20+3 if the vocabulary lacks it, where run.c would
//     emit -1).
//  2. Text is cut into UTF-8 code points the way run.c scans bytes: a byte
//     that is not a continuation byte (10xxxxxx) starts a group, and
//     continuation bytes join it, up to 4 bytes. A group that is a piece
//     becomes its id; otherwise each of its bytes b becomes id b+3 (the
//     <0xHH> byte pieces), so any input, invalid UTF-8 included, encodes.
//  3. Repeatedly, the adjacent pair whose concatenation is a piece with the
//     highest score (the leftmost on ties) is merged, until no pair merges.
//
// Unlike C, a NUL byte does not end the text; it encodes as byte 0x00.
// The error reports a byte id outside a vocabulary smaller than 259.
// Without prefix (a text continued at a cut), step 1 is left out.
func (t *Tokenizer) encodeRunC(out []int, text string, prefix bool) ([]int, error) {
	if text == "" {
		return out, nil
	}
	start := len(out)
	switch {
	case !prefix:
	case t.spaceID >= 0:
		out = append(out, t.spaceID)
	default:
		out = append(out, byteOffset+' ')
	}
	for i := 0; i < len(text); {
		j := i + 1
		for j < len(text) && text[j]&0xC0 == 0x80 && j-i < 4 {
			j++
		}
		if id, ok := t.ids[text[i:j]]; ok {
			out = append(out, id)
		} else {
			for k := i; k < j; k++ {
				out = append(out, byteOffset+int(text[k]))
			}
		}
		i = j
	}
	for _, id := range out[start:] {
		if id >= len(t.pieces) {
			return nil, fmt.Errorf("tokenizer: byte fallback id %d is outside the %d-piece vocabulary", id, len(t.pieces))
		}
	}
	syms := make([]symbol, len(out)-start)
	for i, id := range out[start:] {
		syms[i] = symbol{text: t.pieces[id], id: id}
	}
	return t.mergeByScore(out[:start], syms, noMerge), nil
}

// encodeSPM appends the ids of one plain fragment as llama.cpp's
// llm_tokenizer_spm does.
func (t *Tokenizer) encodeSPM(out []int, text string, prevSpecial bool) ([]int, error) {
	if t.addSpacePrefix && prevSpecial {
		text = " " + text
	}
	if text == "" {
		return out, nil
	}
	if t.escapeSpaces {
		text = strings.ReplaceAll(text, " ", "▁")
	}
	syms := make([]symbol, 0, len(text))
	for i := 0; i < len(text); {
		n := utf8Len(text[i])
		n = min(n, len(text)-i)
		syms = append(syms, t.symbolOf(text[i:i+n]))
		i += n
	}
	start := len(out)
	out = t.mergeByScore(out, syms, negInf)
	// A symbol left without a piece (a character outside the vocabulary)
	// came back as -1-index: spell it as its <0xHH> byte pieces (or <unk>).
	merged := out[start:]
	if !slices.ContainsFunc(merged, func(id int) bool { return id < 0 }) {
		return out, nil
	}
	res := append(make([]int, 0, len(merged)+8), merged...)
	out = out[:start]
	for _, id := range res {
		if id >= 0 {
			out = append(out, id)
			continue
		}
		s := syms[-1-id].text
		var ok bool
		if out, ok = t.appendUnknown(out, s, true); !ok {
			return nil, fmt.Errorf("tokenizer: %q has no piece and the vocabulary has no byte pieces or <unk> for it", s)
		}
	}
	return out, nil
}

// utf8Len is the length of the UTF-8 sequence that lead byte b starts, as
// llama.cpp's unicode_len_utf8 computes it (a stray continuation byte
// counts as one).
func utf8Len(b byte) int {
	switch {
	case b < 0xC0:
		return 1
	case b < 0xE0:
		return 2
	case b < 0xF0:
		return 3
	case b < 0xF8:
		return 4
	}
	return 1
}

var negInf = float32(math.Inf(-1))

// mergeByScore merges syms by piece score until no adjacent pair's
// concatenation is a piece scoring above floor, and appends the resulting
// ids to out. Each merge costs O(log n) (a priority queue over adjacent
// pairs, as in SentencePiece and llama.cpp) instead of run.c's rescan of
// every pair, but the order of merges, and so the ids, are run.c's: the
// queue's top is always the pair run.c's scan would pick. A symbol without
// a piece is appended as -1-index for the caller to resegment.
func (t *Tokenizer) mergeByScore(out []int, syms []symbol, floor float32) []int {
	t.mergePairs(syms, &mergeRule{byScore: true, floor: floor, buf: make([]byte, 0, 2*t.maxTokenLen)})
	for i := 0; i >= 0 && i < len(syms); i = syms[i].next {
		if syms[i].id >= 0 {
			out = append(out, syms[i].id)
		} else {
			out = append(out, -1-i)
		}
	}
	return out
}

// scorePair is the candidate merge of symbols l and r by score: their
// concatenation (built in buf) must be a piece scoring above floor.
func (t *Tokenizer) scorePair(syms []symbol, l, r int, floor float32, buf *[]byte) (bigram, bool) {
	a, b := syms[l].text, syms[r].text
	if len(a)+len(b) > t.maxTokenLen {
		return bigram{}, false // no piece is that long
	}
	*buf = append(append((*buf)[:0], a...), b...)
	id, ok := t.ids[string(*buf)]
	if !ok {
		return bigram{}, false
	}
	sc := t.scores[id]
	if !(sc > floor) { // NaN never merges, as in run.c's comparison
		return bigram{}, false
	}
	return bigram{score: sc, left: l, right: r, id: id, size: len(*buf)}, true
}
