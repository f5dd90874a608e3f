package engine

import (
	"fmt"
	"math"
	"time"

	"github.com/stride-lm/stride/attention"
	"github.com/stride-lm/stride/model"
)

// WeightBytes is what one decode step streams from memory for the
// weights (model.Forward.WeightBytes).
func (e *Engine) WeightBytes() int64 { return e.fwd.WeightBytes() }

// DecodeBytesPerToken is the memory one decode token reads at context
// ctx: the weights, plus the K and V of ctx cached positions.
func (e *Engine) DecodeBytesPerToken(ctx int) int64 {
	return e.WeightBytes() + int64(ctx)*e.cache.BytesPerToken()
}

// BenchStat is the tokens/s of repeated runs: mean and sample standard
// deviation.
type BenchStat struct {
	Mean, SD float64
	Reps     int
}

func benchStat(rates []float64) BenchStat {
	var s BenchStat
	s.Reps = len(rates)
	for _, r := range rates {
		s.Mean += r
	}
	s.Mean /= float64(len(rates))
	if len(rates) > 1 {
		var v float64
		for _, r := range rates {
			v += (r - s.Mean) * (r - s.Mean)
		}
		s.SD = math.Sqrt(v / float64(len(rates)-1))
	}
	return s
}

// BenchPrompt measures prompt processing (llama-bench's ppN): one
// sequence's n tokens in a single batched prefill, reps times after one
// warm-up run, as tokens per second.
func (e *Engine) BenchPrompt(n, reps int) (BenchStat, error) {
	var rates []float64
	for r := 0; r < reps+1; r++ {
		rate, err := e.BenchPromptRun(n)
		if err != nil {
			return BenchStat{}, err
		}
		if r > 0 { // the first run warms caches and buffers
			rates = append(rates, rate)
		}
	}
	return benchStat(rates), nil
}

// BenchPromptRun is one run of BenchPrompt: the tokens per second of one
// n-token prefill.
func (e *Engine) BenchPromptRun(n int) (float64, error) {
	c := e.m.Config
	if n < 1 || n > c.SeqLen {
		return 0, fmt.Errorf("bench: prompt of %d tokens outside [1, seq_len=%d]", n, c.SeqLen)
	}
	tokens := benchTokens(c, n)
	pos := make([]int, n)
	for i := range pos {
		pos[i] = i
	}
	id := e.nextID
	e.nextID++
	if _, err := e.cache.AddSequence(id, tokens); err != nil {
		return 0, fmt.Errorf("bench: %w", err)
	}
	defer e.cache.Free(id)
	slots, err := e.cache.Slots(id, 0, n)
	if err != nil {
		return 0, fmt.Errorf("bench: %w", err)
	}
	table, _ := e.cache.BlockTable(id)
	t0 := time.Now()
	_, err = e.fwd.Run(tokens, pos, newBatch(n, n, table, slots), e.caches, []int{n - 1})
	dt := time.Since(t0)
	if err != nil {
		return 0, err
	}
	return float64(n) / dt.Seconds(), nil
}

// BenchGenerate measures generation (llama-bench's tgN): batch sequences
// each decode n tokens after a one-token prompt, reps times after one
// warm-up run; the rate counts decode rows per second of decode time.
func (e *Engine) BenchGenerate(n, batch, reps int) (BenchStat, error) {
	var rates []float64
	for r := 0; r < reps+1; r++ {
		rate, err := e.BenchGenerateRun(n, batch)
		if err != nil {
			return BenchStat{}, err
		}
		if r > 0 {
			rates = append(rates, rate)
		}
	}
	return benchStat(rates), nil
}

// BenchGenerateRun is one run of BenchGenerate: generated tokens per
// second of decode time.
func (e *Engine) BenchGenerateRun(n, batch int) (float64, error) {
	rate, _, err := e.BenchGenerateRunStats(n, batch, false)
	return rate, err
}

// BenchGenerateRunStats is BenchGenerateRun with the run's Stats (the
// speculation counts among them). The rate counts generated tokens, not
// forward rows: with speculation a verify step runs 1+d rows and keeps
// 1 + its accepted drafts.
//
// greedy decodes at temperature 0, the decoding whose n-gram drafts can
// be accepted (they are checked against the argmax); otherwise the
// sequences sample at temperature 1.
func (e *Engine) BenchGenerateRunStats(n, batch int, greedy bool) (float64, Stats, error) {
	c := e.m.Config
	if n < 1 || n+1 > c.SeqLen || batch < 1 {
		return 0, Stats{}, fmt.Errorf("bench: tg%d with batch %d does not fit seq_len %d", n, batch, c.SeqLen)
	}
	reqs := make([]Request, batch)
	for i := range reqs {
		// A BOS-only prompt: every position after it is a decode row.
		// Sampling at temperature 1 keeps sequences from stopping early
		// on BOS as often as greedy decoding might; a sequence that does
		// stop just contributes fewer tokens.
		temp := float32(1)
		if greedy {
			temp = 0
		}
		reqs[i] = Request{Prompt: []int{model.BOSID}, Steps: n + 1, Sampler: model.NewSampler(c.VocabSize, temp, 0, uint64(1+i))}
	}
	res, st, err := e.Generate(reqs, nil)
	if err != nil {
		return 0, st, err
	}
	tokens := 0
	for _, rr := range res {
		if rr.Err != nil {
			return 0, st, rr.Err
		}
		tokens += len(rr.Tokens)
	}
	dt := st.DecodeTime + st.PrefillTime
	if dt <= 0 {
		return 0, st, fmt.Errorf("bench: tg%d measured no time", n)
	}
	return float64(tokens) / dt.Seconds(), st, nil
}

// benchTokens is a deterministic prompt: BOS, then ids cycling through
// the vocabulary.
func benchTokens(c model.Config, n int) []int {
	t := make([]int, n)
	t[0] = model.BOSID
	for i := 1; i < n; i++ {
		t[i] = 3 + (i*7919)%(c.VocabSize-3)
	}
	return t
}

// newBatch describes one sequence's step for Forward.Run: n new tokens
// ending at context length ctx, in the blocks of table, written at slots.
func newBatch(n, ctx int, table, slots []int32) *attention.Batch {
	return &attention.Batch{
		QueryStart:  []int{0},
		QueryLen:    []int{n},
		ContextLen:  []int{ctx},
		BlockTables: [][]int32{table},
		SlotMapping: slots,
	}
}
