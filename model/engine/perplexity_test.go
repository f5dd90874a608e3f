package engine

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/tokenizer"
	"github.com/stride-lm/stride/tensor"
)

// Perplexity is llama-perplexity's method over Score: whole chunks of
// nctx (the remainder dropped), each chunk's first token replaced by BOS,
// positions nctx/2 … nctx-2 scored; PPL, NLL and the error estimate are
// recomputed here in float64 from each chunk's own Score.
func TestPerplexityChunksAndFigures(t *testing.T) {
	m := mustSynth(t, model.Config{Dim: 32, HiddenDim: 64, NLayers: 2, NHeads: 4, NKVHeads: 2, VocabSize: 259, SeqLen: 64,
		RopeTheta: 10000, NormEps: 1e-5}, 7)
	e := newEngine(t, m, Options{})
	codec, err := tokenizer.NewBytes(259)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("once upon a time there was a cat. ", 3) // 102 bytes: 103 ids with BOS
	const nctx, bos = 16, 1
	s, err := tokenizer.NewStream(codec, strings.NewReader(text), tokenizer.EncodeOptions{BOS: true})
	if err != nil {
		t.Fatal(err)
	}
	var chunks []int
	res, err := e.Perplexity(context.Background(), s, nctx, bos, func(c int, ppl float64) { chunks = append(chunks, c) })
	if err != nil {
		t.Fatal(err)
	}
	ids, _ := codec.Encode(text, true, false)
	var nll, nll2 float64
	n := 0
	for c := 0; (c+1)*nctx <= len(ids); c++ {
		chunk := append([]int{bos}, ids[c*nctx+1:(c+1)*nctx]...)
		lp, err := e.Score(context.Background(), chunk, nctx/2)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lp {
			nll, nll2, n = nll-l, nll2+l*l, n+1
		}
	}
	mean := nll / float64(n)
	stderr := math.Sqrt((nll2/float64(n)-mean*mean)/float64(n-1)) * math.Exp(mean)
	if res.Chunks != len(ids)/nctx || len(chunks) != res.Chunks || res.TokensScored != res.Chunks*(nctx-1-nctx/2) ||
		res.Tokens != len(ids) || res.Ctx != nctx {
		t.Fatalf("result %+v, progress %v: want %d chunks of %d scored tokens from %d", res, chunks, len(ids)/nctx, nctx-1-nctx/2, len(ids))
	}
	if math.Abs(res.NLL-mean) > 1e-12 || math.Abs(res.PPL-math.Exp(mean)) > 1e-9 || math.Abs(res.PPLStderr-stderr) > 1e-9 {
		t.Errorf("nll %v ppl %v ± %v, want %v, %v ± %v", res.NLL, res.PPL, res.PPLStderr, mean, math.Exp(mean), stderr)
	}
	short, _ := tokenizer.NewStream(codec, strings.NewReader("too short"), tokenizer.EncodeOptions{BOS: true})
	if _, err := e.Perplexity(context.Background(), short, nctx, bos, nil); err == nil || !strings.Contains(err.Error(), "needs at least 32") {
		t.Errorf("a text shorter than two chunks: %v", err)
	}
}

// An engine sized by PerplexityOptions holds one chunk's blocks and
// gives the figures of a default engine, to the bit.
func TestPerplexityOptions(t *testing.T) {
	m := mustSynth(t, model.Config{Dim: 32, HiddenDim: 64, NLayers: 2, NHeads: 4, NKVHeads: 2, VocabSize: 259, SeqLen: 64,
		RopeTheta: 10000, NormEps: 1e-5}, 7)
	codec, err := tokenizer.NewBytes(259)
	if err != nil {
		t.Fatal(err)
	}
	const nctx = 20
	text := strings.Repeat("once upon a time there was a cat. ", 3)
	var res [2]PerplexityResult
	for i, opts := range []Options{{}, PerplexityOptions(nctx, tensor.F32, 1)} {
		e := newEngine(t, m, opts)
		if i == 1 && e.Cache().NumBlocks() != 2 {
			t.Errorf("a %d-position chunk in blocks of 16: %d blocks, want 2", nctx, e.Cache().NumBlocks())
		}
		s, err := tokenizer.NewStream(codec, strings.NewReader(text), tokenizer.EncodeOptions{BOS: true})
		if err != nil {
			t.Fatal(err)
		}
		if res[i], err = e.Perplexity(context.Background(), s, nctx, 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	if res[0] != res[1] {
		t.Errorf("default engine %+v, PerplexityOptions %+v", res[0], res[1])
	}
}
