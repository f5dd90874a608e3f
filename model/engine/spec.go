package engine

import (
	"fmt"
)

// Speculation configures prompt-lookup speculative decoding (see
// docs/speculative.md): each decoding sequence drafts up to Draft tokens
// from its own history with an n-gram lookup, and one step verifies them.
// The zero value is off.
type Speculation struct {
	// Method is "" or "off" (no drafts) or "ngram".
	Method string
	// Draft is k, the most tokens drafted per step (vLLM's
	// num_speculative_tokens); 0 means DefaultDraft.
	Draft int
	// NgramMin and NgramMax bound the suffix lengths looked up (vLLM's
	// prompt_lookup_min and prompt_lookup_max); 0 means the defaults 1
	// and 3.
	NgramMin, NgramMax int

	// DraftCost is what one verify row costs, as a fraction of a one-row
	// decode step: the adaptive rule drafts d tokens only where the
	// tokens it expects to keep pay for d more rows. 0 means the default
	// for the model (DefaultDraftCost); see docs/speculative.md §4.
	DraftCost float64

	// always, set by benchmarks, turns the adaptive rule off: every
	// match is drafted at full length.
	always bool
}

// The defaults of Speculation's zero fields, vLLM's and the CLI's.
const (
	DefaultDraft    = 4
	DefaultNgramMin = 1
	DefaultNgramMax = 3
)

// On reports whether drafting is enabled.
func (s Speculation) On() bool { return s.Method == "ngram" }

// normalize fills the defaults and checks the values.
func (s Speculation) normalize() (Speculation, error) {
	switch s.Method {
	case "", "off":
		return Speculation{Method: "off"}, nil
	case "ngram":
	default:
		return s, fmt.Errorf("engine: unknown speculation method %q (want off or ngram)", s.Method)
	}
	if s.Draft == 0 {
		s.Draft = DefaultDraft
	}
	if s.NgramMin == 0 {
		s.NgramMin = DefaultNgramMin
	}
	if s.NgramMax == 0 {
		s.NgramMax = max(DefaultNgramMax, s.NgramMin)
	}
	switch {
	case s.Draft < 1 || s.Draft > MaxDraft:
		return s, fmt.Errorf("engine: draft must be in [1, %d] (got %d)", MaxDraft, s.Draft)
	case s.NgramMin < 1:
		return s, fmt.Errorf("engine: ngram_min must be >= 1 (got %d)", s.NgramMin)
	case s.NgramMax < s.NgramMin || s.NgramMax > MaxNgram:
		return s, fmt.Errorf("engine: ngram_max must be in [ngram_min=%d, %d] (got %d)", s.NgramMin, MaxNgram, s.NgramMax)
	case !(s.DraftCost >= 0 && s.DraftCost <= MaxDraftCost):
		return s, fmt.Errorf("engine: draft_cost must be in [0, %g] (got %v)", float64(MaxDraftCost), s.DraftCost)
	}
	return s, nil
}

// MaxDraft and MaxNgram bound Draft and NgramMax: a verify step of more
// rows than that, or a longer lookup key, buys nothing on any text.
const (
	MaxDraft = 64
	MaxNgram = 64
)

// MaxDraftCost bounds Speculation.DraftCost: a verify row that costs
// more than this many decode steps never pays, whatever is accepted.
const MaxDraftCost = 64

// The adaptive rule (docs/speculative.md §4). Each sequence keeps an
// estimate a of how often a draft token is right, from its own history:
// every verify step adds its accepted tokens as hits and its
// first rejection as a miss, and every plain decode step whose proposer
// had a draft adds whether the token sampled was that draft's first
// token (a shadow draft: the same test a verify row would have made, for
// free). Hits and misses decay by acceptDecay per observation, so the
// estimate follows text that starts or stops looping within about ten
// steps. With a draft cost c (one verify row over a one-row step), d
// drafts keep a + a² + … + a^d more tokens in expectation for c·d more
// cost, and the sequence drafts the d ≤ k that maximizes the step's
// tokens per cost (draftLen), 0 when no d beats the step without it. What
// is drafted never changes a sequence's tokens (Sampler.Verify spends the
// coins plain decoding would), only the steps they take, so the rule may
// weigh the step's other rows.
//
// A match of fewer than strongMatch tokens drafts at most one token.
const (
	acceptDecay = 0.9
	strongMatch = 2
)

// The default draft costs (Speculation.DraftCost 0): a model whose
// weights reach memoryBoundBytes, the size of a large last-level cache,
// streams them from memory at every step, and a verify row costs little
// beside that read (the stories110M shape on two threads: an 8-row step
// costs 1.3–1.7 one-row steps in F32 and ggml Q8_0, about 0.1 per row);
// a smaller one sits in the caches and a row costs a large part of a
// step (stories260K: 0.35–0.6).
const (
	memoryBoundBytes = 32 << 20
	memoryBoundCost  = 0.1
	cacheBoundCost   = 0.5
)

// DefaultDraftCost is the draft cost the adaptive rule uses for a model
// whose decode step reads weightBytes of weights, when
// Speculation.DraftCost is 0.
func DefaultDraftCost(weightBytes int64) float64 {
	if weightBytes >= memoryBoundBytes {
		return memoryBoundCost
	}
	return cacheBoundCost
}

// specState is one sequence's speculation bookkeeping.
type specState struct {
	hist   *tokenHistory
	drafts []int // this step's drafts (fed at positions computed+1 …)

	// hits and misses are the decayed counts behind the acceptance
	// estimate, from a prior of one each (a = ½ before any evidence) that
	// decays like the rest.
	hits, misses float64
	// shadow is the first token of the draft a plain decode step did not
	// verify, checked against the token the step samples; hasShadow
	// says there is one.
	shadow    int
	hasShadow bool
}

// acceptance is the estimate a of a draft token being right.
func (sp *specState) acceptance() float64 {
	return sp.hits / (sp.hits + sp.misses)
}

// observe folds hits and misses into the decayed counts.
func (sp *specState) observe(hits, misses int) {
	sp.hits = acceptDecay*sp.hits + float64(hits)
	sp.misses = acceptDecay*sp.misses + float64(misses)
}

// record adds a verify step's outcome: its accepted drafts are hits and
// a rejection, if any, one miss (the tokens after it were never tested,
// nor were those after a stop).
func (sp *specState) record(accepted int, rejected bool) {
	miss := 0
	if rejected {
		miss = 1
	}
	sp.observe(accepted, miss)
}

// checkShadow tests a plain decode step's shadow draft against the token
// it produced.
func (sp *specState) checkShadow(next int) {
	if !sp.hasShadow {
		return
	}
	sp.hasShadow = false
	if next == sp.shadow {
		sp.observe(1, 0)
	} else {
		sp.observe(0, 1)
	}
}

// stepValue is a step's expected worth as the adaptive rule drafts for
// it: tokens, those its sequences are expected to keep, and cost, its
// time in one-row decode steps. A step of B decode rows starts at
// (B, 1 + c·(B−1)) for a row cost c, and each draft adds its expected
// tokens and c per row.
type stepValue struct{ tokens, cost float64 }

// newStepValue is the value of a step of rows decode rows before any
// draft, for a row cost c.
func newStepValue(rows int, c float64) stepValue {
	return stepValue{tokens: float64(rows), cost: 1 + c*float64(max(rows-1, 0))}
}

// draftLen is the adaptive rule's draft length for one sequence of step
// v: the d in [0, n] that maximizes the step's expected tokens per unit
// of cost, (v.tokens + a + a² + … + a^d) / (v.cost + c·d), when each
// draft token is right with probability a given the ones before it were;
// ties keep the shorter draft. It returns d and a + … + a^d. Alone in
// its step (v = (1, 1)) the ratio is (1 + a + … + a^d) / (1 + c·d); in a
// step of many rows a draft has to beat the step's own tokens per cost,
// so fewer are made, as they should be when rows are what the step pays
// for.
func draftLen(a, c float64, n int, v stepValue) (int, float64) {
	best, bestD, bestKept := v.tokens/v.cost, 0, 0.0
	kept, p := 0.0, 1.0
	for d := 1; d <= n; d++ {
		p *= a
		kept += p
		if r := (v.tokens + kept) / (v.cost + c*float64(d)); r > best*(1+1e-9) {
			best, bestD, bestKept = r, d, kept
		}
	}
	return bestD, bestKept
}

// decoding reports whether q's next step is a plain decode step: its
// prompt is computed and it is not replaying positions after a
// preemption.
func (q *seqState) decoding() bool {
	return q.computed >= len(q.req.Prompt) && q.computed == len(q.tokens)-1
}

// propose fills every running sequence's drafts for this step, as many
// as the adaptive rule says; a sequence that drafts none keeps the first
// proposed token as its shadow draft. A sequence drafts only while
// decoding and while room is left: the verify step's last row must stay
// within Steps positions.
func (s *scheduler) propose() error {
	if !s.spec.On() {
		return nil
	}
	rows := 0
	for _, q := range s.running {
		if q.decoding() {
			rows++
		}
	}
	v := newStepValue(rows, s.spec.DraftCost)
	for _, q := range s.running {
		sp := &q.spec
		sp.drafts, sp.hasShadow = sp.drafts[:0], false
		if !q.decoding() {
			continue
		}
		if sp.hist == nil {
			h, err := newTokenHistory(q.req.Steps+1, s.spec.NgramMin, s.spec.NgramMax)
			if err != nil {
				return fmt.Errorf("scheduler: %w", err)
			}
			sp.hist, sp.drafts = h, make([]int, 0, s.spec.Draft)
			sp.hits, sp.misses = 1, 1
		}
		sp.hist.sync(q.tokens)
		// Positions computed … computed+d run; the last must be < Steps.
		room := q.req.Steps - len(q.tokens)
		var n int
		sp.drafts, n = s.proposer.propose(sp.drafts, sp.hist, room)
		if s.spec.always {
			continue
		}
		d, kept := draftLen(sp.acceptance(), s.spec.DraftCost, weakMatchCap(len(sp.drafts), n), v)
		v.tokens += kept
		v.cost += s.spec.DraftCost * float64(d)
		sp.hasShadow = d == 0 && len(sp.drafts) > 0
		if sp.hasShadow {
			sp.shadow = sp.drafts[0]
		}
		sp.drafts = sp.drafts[:d]
	}
	return nil
}

// weakMatchCap is how many of found drafted tokens a suffix match of n
// tokens may draft: one when n < strongMatch, else all. One shared token
// is weak evidence that what followed it then follows now; on
// stories260K such drafts were the rejected ones, and cutting them saved
// verify rows without losing accepted tokens (docs/speculative.md).
func weakMatchCap(found, n int) int {
	if n < strongMatch {
		return min(found, 1)
	}
	return found
}

// verify retires a sequence that ran a verify step: rows holds the
// logits of its last token and of each draft, [1+d, vocab]. Row j
// decides the token after position computed+j: while the drafts are
// accepted (greedy: equal to the argmax; sampled: model.Sampler.Verify)
// it moves on, and the first rejection's replacement, or after d
// acceptances the last row's own sample, ends the step. The rejected
// drafts' K/V are given back (kvcache.Cache.Truncate) before the
// accepted positions are committed.
func (s *scheduler) verify(q *seqState, rows []float32) (bool, FinishReason, error) {
	V := s.e.m.Config.VocabSize
	sp := &q.spec
	d := len(sp.drafts)
	base := q.computed // the position of the last token
	s.st.DecodeTokens += d + 1
	s.st.VerifySteps++
	s.st.DraftTokens += d
	q.res.VerifySteps++
	q.res.DraftTokens += d
	done, why := false, FinishLength
	acc, rejected := 0, false
	for j := 0; j <= d; j++ {
		row := rows[j*V : (j+1)*V]
		if s.e.opts.OnLogits != nil {
			s.e.opts.OnLogits(q.idx, len(q.tokens)-1, row)
		}
		var next int
		ok := false
		kept := q.keepRow(row)
		if j < d {
			next, ok = q.req.Sampler.Verify(row, sp.drafts[j])
		} else {
			next = q.req.Sampler.Sample(row)
		}
		done, why = s.take(q, next, kept)
		if ok && why != FinishEOS {
			acc++ // an accepted draft that is kept
		}
		if done || !ok {
			rejected = j < d && !ok
			break
		}
	}
	s.st.AcceptedTokens += acc
	q.res.AcceptedTokens += acc
	sp.record(acc, rejected)
	// Positions base … base+acc hold the K/V of the tokens the sequence
	// keeps (its last token and the accepted drafts); the rest were fed
	// rejected drafts.
	q.computed = base + 1 + acc
	if err := s.e.cache.Truncate(q.id, q.computed); err != nil {
		return false, "", err
	}
	if err := s.e.cache.Commit(q.id, q.tokens); err != nil {
		return false, "", err
	}
	sp.drafts = sp.drafts[:0]
	return done, why, nil
}
