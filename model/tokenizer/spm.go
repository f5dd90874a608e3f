package tokenizer

import (
	"container/heap"
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
func (t *Tokenizer) encodeRunC(out []int, text string) ([]int, error) {
	if text == "" {
		return out, nil
	}
	start := len(out)
	if t.spaceID >= 0 {
		out = append(out, t.spaceID)
	} else {
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
		s := text[i : i+n]
		id, ok := t.ids[s]
		if !ok {
			id = -1
		}
		syms = append(syms, symbol{text: s, id: id})
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
		ok := true
		for k := 0; k < len(s) && ok; k++ {
			ok = t.byteIDs[s[k]] >= 0
		}
		switch {
		case ok:
			for k := 0; k < len(s); k++ {
				out = append(out, t.byteIDs[s[k]])
			}
		case t.unkID >= 0:
			out = append(out, t.unkID)
		default:
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

// symbol is one piece of the text during merging, in a doubly linked list
// over the symbols slice; a merged-away symbol has dead set.
type symbol struct {
	text       string
	id         int // piece id, or -1 when text is no piece
	prev, next int
	dead       bool
}

// bigram is a candidate merge of the adjacent symbols left and right.
// For score merges the best is the highest score, for rank merges the
// lowest rank (stored negated in score); ties go to the leftmost pair. size
// is the merged byte length, which tells a stale candidate (one of its
// symbols grew since) from a live one.
type bigram struct {
	score       float32
	rank        int
	left, right int
	id          int
	size        int
}

// pairQueue is a max-heap of bigrams: higher score first, then lower
// rank, then lower left index. The left index order is the text order, so
// popping the top is run.c's "best score, leftmost on ties" and llama.cpp's
// llm_bigram_spm / llm_bigram_bpe comparators.
type pairQueue []bigram

func (q pairQueue) Len() int { return len(q) }
func (q pairQueue) Less(i, j int) bool {
	a, b := &q[i], &q[j]
	if a.score != b.score {
		return a.score > b.score
	}
	if a.rank != b.rank {
		return a.rank < b.rank
	}
	return a.left < b.left
}
func (q pairQueue) Swap(i, j int)  { q[i], q[j] = q[j], q[i] }
func (q *pairQueue) Push(x any)    { *q = append(*q, x.(bigram)) }
func (q *pairQueue) Pop() (x any)  { old := *q; x = old[len(old)-1]; *q = old[:len(old)-1]; return }
func (q *pairQueue) push(b bigram) { heap.Push(q, b) }
func (q *pairQueue) pop() bigram   { return heap.Pop(q).(bigram) }
func (q pairQueue) empty() bool    { return len(q) == 0 }

// mergeByScore merges syms by piece score until no adjacent pair's
// concatenation is a piece scoring above floor, and appends the resulting
// ids to out. Each merge costs O(log n) (a priority queue over adjacent
// pairs, as in SentencePiece and llama.cpp) instead of run.c's rescan of
// every pair, but the order of merges, and so the ids, are run.c's: the
// queue's top is always the pair run.c's scan would pick. A symbol without
// a piece is appended as -1-index for the caller to resegment.
func (t *Tokenizer) mergeByScore(out []int, syms []symbol, floor float32) []int {
	for i := range syms {
		syms[i].prev, syms[i].next = i-1, i+1
	}
	if len(syms) > 0 {
		syms[len(syms)-1].next = -1
	}
	buf := make([]byte, 0, 2*t.maxTokenLen)
	q := make(pairQueue, 0, len(syms))
	try := func(l, r int, build bool) {
		if l < 0 || r < 0 {
			return
		}
		a, b := syms[l].text, syms[r].text
		if len(a)+len(b) > t.maxTokenLen {
			return // no piece is that long
		}
		buf = append(append(buf[:0], a...), b...)
		id, ok := t.ids[string(buf)]
		if !ok {
			return
		}
		sc := t.scores[id]
		if !(sc > floor) { // NaN never merges, as in run.c's comparison
			return
		}
		bg := bigram{score: sc, left: l, right: r, id: id, size: len(buf)}
		if build {
			q = append(q, bg) // heapified once below
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
			continue // stale: one side merged since this pair was queued
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
	for i := 0; i >= 0 && i < len(syms); i = syms[i].next {
		if syms[i].id >= 0 {
			out = append(out, syms[i].id)
		} else {
			out = append(out, -1-i)
		}
	}
	return out
}
