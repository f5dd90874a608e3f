package engine

import (
	"context"
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
	// First is where the tokens first differ (the earliest position over
	// all requests), nil when they are identical.
	First *Divergence
}

// Divergence is the first token on which the two paths disagree, with
// the logits it was drawn from: the paths share every matmul, norm and
// activation kernel, so what differs is the attention arithmetic (the
// naive path's materialized softmax against the fused kernel's online
// one), and a token flips only where its logits' margin is that small.
type Divergence struct {
	Seq, Pos               int // request, and the token's index in Result.Tokens
	NaiveToken, FusedToken int
	// DeltaLogit is the largest |logit_naive − logit_fused| of the logit
	// vector the token was drawn from.
	DeltaLogit float64
	// NaiveMargin is, in the naive logits, the logit of the naive pick
	// minus that of the fused pick; FusedMargin the reverse in the fused
	// logits. For greedy picks both are ≥ 0, and a DeltaLogit larger than
	// their sum is what lets the picks part.
	NaiveMargin, FusedMargin float64
}

type logitKey struct{ seq, pos int }

// Compare runs the same requests through the naive and the fused path.
// newRequests must return fresh requests (fresh samplers) on each call, so
// both runs start from the same RNG state. base configures both engines;
// its Path, Ledger and OnLogits are set per run.
func Compare(m *model.Model, base Options, newRequests func() []Request) (*Comparison, error) {
	cmp := &Comparison{}
	logits := map[logitKey][]float32{}
	fused := map[logitKey][]float32{}
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
				fused[k] = append([]float32(nil), row...)
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
	if !cmp.TokensIdentical {
		cmp.First = firstDivergence(cmp.Naive.Tokens, cmp.Fused.Tokens, logits, fused)
	}
	return cmp, nil
}

// firstDivergence finds the earliest position at which a request's
// tokens differ between the paths and reads the margins off the logits
// each path drew that token from. Result.Tokens leaves BOS out, so token
// i was drawn from the logits of position i.
// It returns nil when no request's tokens differ where both have logits.
func firstDivergence(naive, fused [][]int, nl, fl map[logitKey][]float32) *Divergence {
	var d *Divergence
	for seq := range min(len(naive), len(fused)) {
		a, b := naive[seq], fused[seq]
		for pos := range min(len(a), len(b)) {
			if a[pos] == b[pos] {
				continue
			}
			k := logitKey{seq, pos}
			x, y := nl[k], fl[k]
			if x == nil || y == nil || (d != nil && d.Pos <= pos) {
				break
			}
			d = &Divergence{Seq: seq, Pos: pos, NaiveToken: a[pos], FusedToken: b[pos]}
			for i := range x {
				d.DeltaLogit = math.Max(d.DeltaLogit, math.Abs(float64(x[i]-y[i])))
			}
			d.NaiveMargin = float64(x[a[pos]] - x[b[pos]])
			d.FusedMargin = float64(y[b[pos]] - y[a[pos]])
			break
		}
	}
	return d
}

// contextRequests builds the request of a context-length sweep point: a
// prompt of ctxLen tokens (BOS then a deterministic cycle through the
// vocabulary) followed by decode greedy decode steps, so prefill runs at
// S = ctxLen and decode at contexts ctxLen … ctxLen+decode.
func contextRequests(c model.Config, ctxLen, decode int) (func() []Request, error) {
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

// CompareContexts is the sweep of `infer compare --contexts`: Compare at
// each context length L of contexts, on a prompt of L tokens followed by
// decode greedy steps, so prefill runs at S = L and decode at contexts
// L … L+decode. ctx is checked between lengths (one comparison runs to
// its end, so an interrupt during the last one is returned after it),
// and done, when not nil, is called after each with the number measured
// so far. It returns the points measured before the error that stopped
// it, with that error.
func CompareContexts(ctx context.Context, m *model.Model, base Options, contexts []int, decode int, done func(measured int)) ([]ComparePoint, error) {
	var points []ComparePoint
	for _, L := range contexts {
		if err := ctx.Err(); err != nil {
			return points, err
		}
		mk, err := contextRequests(m.Config, L, decode)
		if err != nil {
			return points, err
		}
		cmp, err := Compare(m, base, mk)
		if err != nil {
			return points, fmt.Errorf("context %d: %w", L, err)
		}
		points = append(points, NewComparePoint(L, cmp))
		if done != nil {
			done(len(points))
		}
	}
	return points, ctx.Err()
}
