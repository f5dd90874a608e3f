package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/stride-lm/stride/model/tokenizer"
	"github.com/stride-lm/stride/tensor"
)

// PerplexityResult is what Perplexity measures; the JSON keys are what
// infer perplexity --output json prints.
type PerplexityResult struct {
	// PPL is exp(NLL), and PPLStderr llama.cpp's estimate of its error,
	// PPL·sqrt((mean(nll²) − mean(nll)²)/(N−1)) over the N scored tokens.
	PPL       float64 `json:"ppl"`
	PPLStderr float64 `json:"ppl_stderr"`
	// NLL is the mean negative log-likelihood of the scored tokens.
	NLL          float64 `json:"nll"`
	TokensScored int     `json:"tokens_scored"`
	Chunks       int     `json:"chunks"`
	Ctx          int     `json:"ctx"`
	// Tokens counts the text's tokens, the dropped remainder included.
	Tokens int `json:"-"`
}

// DefaultPerplexityContext is llama-perplexity's default chunk length
// (its -c), which a front end caps at the model's seq_len.
const DefaultPerplexityContext = 512

// PerplexityOptions are the Options of an engine that only runs
// Perplexity over chunks of nctx positions: one sequence at a time, so
// the pool holds one chunk's blocks and shares no prefixes, on the fused
// path, with a KV cache of kvdt and threads workers (0 = all cores).
// The figures are those of any engine; only the memory differs.
func PerplexityOptions(nctx int, kvdt tensor.DType, threads int) Options {
	return Options{Path: "fused", BlockSize: defaultBlockSize, NumBlocks: (nctx + defaultBlockSize - 1) / defaultBlockSize,
		KVDType: kvdt, Threads: threads, DisablePrefixSharing: true}
}

// Perplexity scores the text the stream gives as llama.cpp's
// llama-perplexity does, so that both print the same figure for the same
// model: the tokens (which start with BOS when bos >= 0) are cut into
// chunks of nctx (the remainder is dropped); each chunk's first token is
// replaced by bos, unless bos < 0 (a vocabulary without add_bos, as
// llama.cpp does then), and the chunk runs through Score from position 0
// with an empty context; the positions nctx/2 … nctx-2 are scored, each
// on the token that follows it. The text must hold at least 2·nctx
// tokens, which is checked before any chunk runs. Only two chunks of
// tokens are held at a time. progress, when not nil, is called after each
// chunk with its number (from 1) and the running PPL.
func (e *Engine) Perplexity(ctx context.Context, tokens *tokenizer.Stream, nctx, bos int, progress func(chunk int, ppl float64)) (PerplexityResult, error) {
	if nctx < 4 || nctx > e.m.Config.SeqLen {
		return PerplexityResult{}, fmt.Errorf("perplexity: a context of %d must be in [4, seq_len=%d]", nctx, e.m.Config.SeqLen)
	}
	first := nctx / 2
	win := &tokenWindow{s: tokens}
	if err := win.fill(2 * nctx); err != nil {
		return PerplexityResult{}, fmt.Errorf("perplexity: %w", err)
	}
	if win.total < 2*nctx {
		return PerplexityResult{}, fmt.Errorf("perplexity: the text has %d tokens; a context of %d needs at least %d", win.total, nctx, 2*nctx)
	}
	chunk := make([]int, nctx)
	var nll, nll2 float64
	count, nChunks := 0, 0
	for len(win.toks) >= nctx {
		copy(chunk, win.toks[:nctx])
		if bos >= 0 {
			chunk[0] = bos
		}
		lp, err := e.Score(ctx, chunk, first)
		if err != nil {
			return PerplexityResult{}, fmt.Errorf("perplexity: chunk %d: %w", nChunks+1, err)
		}
		for _, l := range lp {
			nll -= l
			nll2 += l * l
		}
		count += len(lp)
		nChunks++
		if progress != nil {
			progress(nChunks, math.Exp(nll/float64(count)))
		}
		win.drop(nctx)
		if err := win.fill(nctx); err != nil {
			return PerplexityResult{}, fmt.Errorf("perplexity: %w", err)
		}
	}
	mean, mean2 := nll/float64(count), nll2/float64(count)
	res := PerplexityResult{PPL: math.Exp(mean), NLL: mean, TokensScored: count, Chunks: nChunks, Ctx: nctx, Tokens: win.total}
	if v := mean2 - mean*mean; v > 0 && count > 1 {
		res.PPLStderr = math.Sqrt(v/float64(count-1)) * res.PPL
	}
	return res, nil
}

// tokenWindow holds the tokens of a stream not yet consumed.
type tokenWindow struct {
	s     *tokenizer.Stream
	toks  []int
	total int // tokens read from the stream so far
	eof   bool
}

// fill reads from the stream until the window holds n tokens or the
// stream ends.
func (w *tokenWindow) fill(n int) error {
	for !w.eof && len(w.toks) < n {
		ids, err := w.s.Next()
		if errors.Is(err, io.EOF) {
			w.eof = true
			break
		}
		if err != nil {
			return err
		}
		w.toks = append(w.toks, ids...)
		w.total += len(ids)
	}
	return nil
}

// drop removes the first n tokens, reusing the window's memory.
func (w *tokenWindow) drop(n int) {
	w.toks = w.toks[:copy(w.toks, w.toks[n:])]
}
