package engine

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
)

// logProb64 is the float64 reference of log p(tok) under
// softmax(logits).
func logProb64(logits []float32, tok int) float64 {
	mx := math.Inf(-1)
	for _, l := range logits {
		mx = math.Max(mx, float64(l))
	}
	var sum float64
	for _, l := range logits {
		sum += math.Exp(float64(l) - mx)
	}
	return float64(logits[tok]) - mx - math.Log(sum)
}

// Score's log-probabilities are those of the logits a greedy Run samples
// from, one decode step at a time, computed in float64: the scoring pass
// (one prefill through the same cache and forward) agrees with decoding
// up to the rounding of prefill tiles against decode loops.
func TestScoreMatchesDecodeLogits(t *testing.T) {
	m := tinyGQA(t)
	var decoded [][]float32
	e := newEngine(t, m, Options{OnLogits: func(_, _ int, l []float32) { decoded = append(decoded, slices.Clone(l)) }})
	prompt := []int{1, 5, 9, 13}
	res, _, err := e.Generate(build([]reqSpec{{prompt: prompt, steps: 60}}, m.Config.VocabSize), nil)
	if err != nil || res[0].Err != nil {
		t.Fatal(err, res[0].Err)
	}
	seq := append([]int{prompt[0]}, res[0].Tokens...)
	from := len(prompt) - 1
	lp, err := e.Score(context.Background(), seq, from)
	if err != nil {
		t.Fatal(err)
	}
	if len(lp) != len(seq)-1-from || len(decoded) != len(lp) {
		t.Fatalf("%d scores, %d decoded logit rows, want %d", len(lp), len(decoded), len(seq)-1-from)
	}
	for k, got := range lp {
		want := logProb64(decoded[k], seq[from+k+1])
		if math.Abs(got-want) > 1e-4 || got > 0 {
			t.Errorf("position %d: log p %.7f, decode's logits give %.7f", from+k, got, want)
		}
	}
}

// A prefix that an earlier Run left in the cache is recomputed, not
// shared: the scores are bit for bit a fresh engine's.
func TestScoreIgnoresCachedPrefix(t *testing.T) {
	m := tinyGQA(t)
	seq := make([]int, 70)
	seq[0] = 1
	for i := 1; i < len(seq); i++ {
		seq[i] = 3 + (i*11)%60
	}
	fresh, err := newEngine(t, m, Options{}).Score(context.Background(), seq, 10)
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, m, Options{})
	if _, _, err := e.Generate(build([]reqSpec{{prompt: seq[:50], steps: 51}}, m.Config.VocabSize), nil); err != nil {
		t.Fatal(err)
	}
	if cached, err := e.cache.AddSequence(999, seq); err != nil {
		t.Fatal(err)
	} else if cached == 0 {
		t.Fatal("the earlier run left no prefix to hit")
	}
	if err := e.cache.Free(999); err != nil {
		t.Fatal(err)
	}
	again, err := e.Score(context.Background(), seq, 10)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(again, fresh) {
		t.Errorf("scores after a cached prefix differ from a fresh engine's")
	}
	if n := len(e.cache.Sequences()); n != 0 {
		t.Errorf("%d sequences left in the cache after Score", n)
	}
}

// Bad arguments are one clear error each, and a cancelled context stops
// Score before the forward pass.
func TestScoreErrors(t *testing.T) {
	m := tinyGQA(t)
	e := newEngine(t, m, Options{})
	long := make([]int, m.Config.SeqLen+1)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		tokens []int
		from   int
		ctx    context.Context
		want   string
	}{
		{[]int{1}, 0, context.Background(), "a score needs 2"},
		{long, 0, context.Background(), "seq_len=96"},
		{[]int{1, 2, 3}, 2, context.Background(), "outside [0, 1]"},
		{[]int{1, 64, 3}, 0, context.Background(), "token 64 at position 1"},
		{[]int{1, 2, 3}, 0, cancelled, "context canceled"},
	} {
		_, err := e.Score(c.ctx, c.tokens, c.from)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Score(%d tokens, %d): %v, want %q", len(c.tokens), c.from, err, c.want)
		}
	}
}
