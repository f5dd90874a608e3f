package tokenizer

import "container/heap"

// The merge loop shared by SentencePiece's score merges (mergeByScore) and
// BPE's rank merges (bpeWord): symbols in a linked list over a slice, and a
// priority queue of the candidate merges of adjacent symbols, so that each
// merge costs O(log n).

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

// pushIf queues bg when ok (a pair function's answer).
func (q *pairQueue) pushIf(bg bigram, ok bool) {
	if ok {
		q.push(bg)
	}
}

// mergeRule says which adjacent symbols merge: by BPE rank (a merge
// rule for the two pieces) or, with byScore, by SentencePiece score (their
// concatenation is a piece scoring above floor). A plain switch rather
// than a function value keeps each pair test a direct, inlined call.
type mergeRule struct {
	byScore bool
	floor   float32
	buf     []byte // scratch for a score pair's concatenation
}

// pairOf is the candidate merge of the adjacent live symbols l and r
// under rule, or false when they never merge.
func (t *Tokenizer) pairOf(rule *mergeRule, syms []symbol, l, r int) (bigram, bool) {
	if rule.byScore {
		return t.scorePair(syms, l, r, rule.floor, &rule.buf)
	}
	return t.rankPair(syms, l, r)
}

// mergePairs links syms into a list and merges the best candidate pair
// (ordered as pairQueue orders them) until none is left. A merged pair
// becomes its left symbol, with the merged piece; its right symbol is dead
// and unlinked. Candidates queued before one of their symbols grew are
// stale, told by their size, and skipped.
func (t *Tokenizer) mergePairs(syms []symbol, rule *mergeRule) {
	for i := range syms {
		syms[i].prev, syms[i].next = i-1, i+1
	}
	if len(syms) > 0 {
		syms[len(syms)-1].next = -1
	}
	q := make(pairQueue, 0, len(syms))
	for i := 1; i < len(syms); i++ {
		if bg, ok := t.pairOf(rule, syms, i-1, i); ok {
			q = append(q, bg) // heapified once below
		}
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
		if l.prev >= 0 {
			q.pushIf(t.pairOf(rule, syms, l.prev, bg.left))
		}
		if l.next >= 0 {
			q.pushIf(t.pairOf(rule, syms, bg.left, l.next))
		}
	}
}

// symbolOf is the symbol of one character of the text: its piece's id, or
// -1 when the vocabulary has no such piece.
func (t *Tokenizer) symbolOf(s string) symbol {
	id, ok := t.ids[s]
	if !ok {
		id = -1
	}
	return symbol{text: s, id: id}
}

// appendUnknown appends the ids of a symbol left without a piece after
// merging: its <0xHH> byte pieces when byteFallback allows them and the
// vocabulary has every one, else the unknown id. It reports false when
// neither applies.
func (t *Tokenizer) appendUnknown(out []int, s string, byteFallback bool) ([]int, bool) {
	if byteFallback && t.hasBytePieces(s) {
		for k := 0; k < len(s); k++ {
			out = append(out, t.byteIDs[s[k]])
		}
		return out, true
	}
	if t.unkID >= 0 {
		return append(out, t.unkID), true
	}
	return out, false
}

// hasBytePieces reports whether every byte of s has its <0xHH> piece.
func (t *Tokenizer) hasBytePieces(s string) bool {
	for k := 0; k < len(s); k++ {
		if t.byteIDs[s[k]] < 0 {
			return false
		}
	}
	return true
}
