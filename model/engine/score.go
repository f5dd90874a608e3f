package engine

import (
	"context"
	"fmt"
	"math"
)

// Score runs tokens as one sequence from position 0, with an empty
// context, through the engine's KV cache and forward pass, and returns
// the log-probability the model gives each token after the ones before
// it: logprobs[i] = log p(tokens[from+i+1] | tokens[:from+i+1]) for every
// position from … len(tokens)-2, computed from that position's logits as
// llama.cpp's perplexity tool does (see logProb). Only the logits of
// those positions are computed.
//
// The whole of tokens is one batched prefill (so len(tokens) ≤ seq_len),
// and no prefix blocks are shared or registered: a score is the same
// whatever ran on the engine before. Like Run, Score must not run
// concurrently with another call on the same Engine. It checks ctx once,
// before the forward pass.
func (e *Engine) Score(ctx context.Context, tokens []int, from int) ([]float64, error) {
	c := e.m.Config
	n := len(tokens)
	if n < 2 || n > c.SeqLen {
		return nil, fmt.Errorf("score: %d tokens; a score needs 2 … seq_len=%d", n, c.SeqLen)
	}
	if from < 0 || from > n-2 {
		return nil, fmt.Errorf("score: first scored position %d is outside [0, %d]", from, n-2)
	}
	for i, t := range tokens {
		if t < 0 || t >= c.VocabSize {
			return nil, fmt.Errorf("score: token %d at position %d is outside the vocabulary (size %d)", t, i, c.VocabSize)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	logits, err := e.scoreLogits(tokens, from)
	if err != nil {
		return nil, err
	}
	v := c.VocabSize
	lp := make([]float64, n-1-from)
	for k := range lp {
		lp[k] = logProb(logits[k*v:(k+1)*v], tokens[from+k+1])
	}
	return lp, nil
}

// scoreLogits runs tokens as a fresh sequence and returns the logits of
// positions from … len(tokens)-2, valid until the next forward pass. The
// sequence's blocks are freed before it returns.
func (e *Engine) scoreLogits(tokens []int, from int) ([]float32, error) {
	n := len(tokens)
	id := e.nextID
	e.nextID++
	cached, err := e.cache.AddSequence(id, tokens)
	if err != nil {
		return nil, fmt.Errorf("score: %w", err)
	}
	defer e.cache.Free(id)
	if cached > 0 {
		// A prefix left by an earlier Run: recompute it anyway, since its
		// positions' logits are needed too.
		if err := e.cache.Truncate(id, 0); err != nil {
			return nil, fmt.Errorf("score: %w", err)
		}
	}
	slots, err := e.cache.Slots(id, 0, n)
	if err != nil {
		return nil, fmt.Errorf("score: %w", err)
	}
	table, err := e.cache.BlockTable(id)
	if err != nil {
		return nil, fmt.Errorf("score: %w", err)
	}
	pos := make([]int, n)
	for i := range pos {
		pos[i] = i
	}
	rows := make([]int, 0, n-1-from)
	for r := from; r < n-1; r++ {
		rows = append(rows, r)
	}
	return e.fwd.Run(tokens, pos, newBatch(n, n, table, slots), e.caches, rows)
}

// logProb is log p(tok) under softmax(logits), computed as llama.cpp's
// perplexity tool does: the maximum in float32, Σ expf(l − max) summed in
// float64, then l_tok − max − log(Σ). Perplexity figures are reproduced
// to the printed digit only with this order of operations.
func logProb(logits []float32, tok int) float64 {
	mx := logits[0]
	for _, l := range logits[1:] {
		mx = max(mx, l)
	}
	var sum float64
	for _, l := range logits {
		sum += float64(float32(math.Exp(float64(l - mx))))
	}
	return float64(logits[tok]-mx) - math.Log(sum)
}
