package engine

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/tensor"
)

// PathReport is what one attention path cost for a generation run.
type PathReport struct {
	Path          string
	PrefillTime   time.Duration // wall time of steps holding prefill rows
	DecodeTime    time.Duration // wall time of pure decode steps
	PrefillTokens int
	DecodeTokens  int
	// Stats are the accounting counters accumulated during generation
	// (the KV pool allocated at engine start is excluded).
	Stats tensor.Stats
	// PeakExtraBytes is the peak of live bytes above what was live when
	// generation began (weights are not counted, the KV pool is the
	// baseline): the transient memory the path needed.
	PeakExtraBytes int64
	Tokens         [][]int // per request
}

// DecodePerToken is the mean wall time of one decode row.
func (r PathReport) DecodePerToken() time.Duration {
	if r.DecodeTokens == 0 {
		return 0
	}
	return r.DecodeTime / time.Duration(r.DecodeTokens)
}

// TokensPerSecond is generated tokens (decode rows plus one sampled token
// per prefill) per second of forward time.
func (r PathReport) TokensPerSecond() float64 {
	total := (r.PrefillTime + r.DecodeTime).Seconds()
	if total == 0 {
		return 0
	}
	n := 0
	for _, t := range r.Tokens {
		n += len(t)
	}
	return float64(n) / total
}

// Comparison sets the naive and the fused path side by side on the same
// requests.
type Comparison struct {
	Naive, Fused PathReport
	// MaxAbsDeltaLogit is the largest |logit_naive − logit_fused| over every
	// logit vector both paths sampled from at the same (sequence,
	// position).
	MaxAbsDeltaLogit float64
	// TokensIdentical reports whether both paths produced the same tokens
	// for every request.
	TokensIdentical bool
}

type logitKey struct{ seq, pos int }

// Compare runs the same requests through the naive and the fused path.
// newRequests must return fresh requests (fresh samplers) on each call, so
// both runs start from the same RNG state. base configures both engines;
// its Path, Ledger and OnLogits are set per run.
func Compare(m *model.Model, base Options, newRequests func() []Request) (*Comparison, error) {
	cmp := &Comparison{}
	logits := map[logitKey][]float32{}
	for _, path := range []string{"naive", "fused"} {
		led := tensor.NewLedger()
		opts := base
		opts.Path, opts.Ledger = path, led
		first := path == "naive"
		opts.OnLogits = func(seq, pos int, row []float32) {
			k := logitKey{seq, pos}
			if first {
				logits[k] = append([]float32(nil), row...)
				return
			}
			if ref, ok := logits[k]; ok {
				for i, v := range row {
					cmp.MaxAbsDeltaLogit = math.Max(cmp.MaxAbsDeltaLogit, math.Abs(float64(v-ref[i])))
				}
			}
		}
		e, err := New(m, opts)
		if err != nil {
			return nil, err
		}
		led.ResetPeak()
		before := led.Stats()
		res, st, err := e.Generate(newRequests(), nil)
		after := led.Stats()
		e.Close()
		if err != nil {
			return nil, fmt.Errorf("%s path: %w", path, err)
		}
		r := PathReport{
			Path: path, PrefillTime: st.PrefillTime, DecodeTime: st.DecodeTime,
			PrefillTokens: st.PrefillTokens, DecodeTokens: st.DecodeTokens,
			Stats: after.Sub(before), PeakExtraBytes: after.PeakLiveBytes - before.LiveBytes,
		}
		for i, rr := range res {
			if rr.Err != nil {
				return nil, fmt.Errorf("%s path: request %d: %w", path, i, rr.Err)
			}
			r.Tokens = append(r.Tokens, rr.Tokens)
		}
		if first {
			cmp.Naive = r
		} else {
			cmp.Fused = r
		}
	}
	cmp.TokensIdentical = len(cmp.Naive.Tokens) == len(cmp.Fused.Tokens)
	for i := range cmp.Naive.Tokens {
		if cmp.TokensIdentical && !slices.Equal(cmp.Naive.Tokens[i], cmp.Fused.Tokens[i]) {
			cmp.TokensIdentical = false
		}
	}
	return cmp, nil
}

// ContextRequests builds the request of a context-length sweep point: a
// prompt of ctxLen tokens (BOS then a deterministic cycle through the
// vocabulary) followed by decode greedy decode steps, so prefill runs at
// S = ctxLen and decode at contexts ctxLen … ctxLen+decode.
func ContextRequests(c model.Config, ctxLen, decode int) (func() []Request, error) {
	if ctxLen < 1 || decode < 1 {
		return nil, fmt.Errorf("context sweep: context %d and decode steps %d must be >= 1", ctxLen, decode)
	}
	if ctxLen+decode > c.SeqLen {
		return nil, fmt.Errorf("context sweep: context %d + %d decode steps exceed seq_len %d", ctxLen, decode, c.SeqLen)
	}
	prompt := make([]int, ctxLen)
	prompt[0] = model.BOSID
	for i := 1; i < ctxLen; i++ {
		prompt[i] = 3 + (i*7919)%(c.VocabSize-3)
	}
	return func() []Request {
		return []Request{{Prompt: prompt, Steps: ctxLen + decode, Sampler: model.NewSampler(c.VocabSize, 0, 0, 1)}}
	}, nil
}
