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
	// Exact verifies each draft row with the decode kernel (one
	// attention entry per row), so every logit is the bit pattern the
	// non-speculative run computes; the default verifies the rows as one
	// multi-row query (the prefill kernel), faster, with logits equal to
	// within rounding (see docs/speculative.md).
	Exact bool

	// noPause, set by benchmarks, turns the adaptive pause off.
	noPause bool
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
	}
	return s, nil
}

// MaxDraft and MaxNgram bound Draft and NgramMax: a verify step of more
// rows than that, or a longer lookup key, buys nothing on any text.
const (
	MaxDraft = 64
	MaxNgram = 64
)

// The adaptive rule (see docs/speculative.md for the measurements behind
// the numbers): a sequence keeps the outcome of its last acceptWindow
// verify steps; when they accepted fewer than pauseBelow of the tokens
// they drafted, it stops drafting for pauseMin decode steps. The first
// verify step after a pause is a probe: if it accepts at least pauseBelow
// of its drafts, drafting resumes with a fresh window; if not, the
// sequence pauses again for twice as long, up to pauseMax steps. Text
// that stays unpredictable thus pays one verify step per pauseMax decode
// steps, and text that turns repetitive (a story that starts to loop) is
// drafted for again within pauseMax steps.
//
// A match of fewer than strongMatch tokens drafts at most one token.
const (
	acceptWindow = 4
	pauseBelow   = 0.3
	pauseMin     = 16
	pauseMax     = 128
	strongMatch  = 2
)

// specState is one sequence's speculation bookkeeping.
type specState struct {
	hist   *tokenHistory
	drafts []int // this step's drafts (fed at positions computed+1 …)

	// The last acceptWindow verify steps, as a ring: tokens drafted and
	// accepted.
	drafted, accepted [acceptWindow]int
	filled, next      int
	dlen              int  // the next draft's length cap (0 = 1): grows on success
	pause             int  // decode steps left without drafting
	backoff           int  // the next pause's length
	probing           bool // the next verify step is a probe after a pause
}

// record adds a verify step's outcome and starts a pause when the
// window's acceptance rate is below pauseBelow, or when a probe fails.
func (sp *specState) record(drafted, accepted int, noPause bool) {
	if noPause {
		return
	}
	// The draft length: doubled (up to k, applied by propose's min with
	// Draft) after a verify step that accepted everything, cut back to
	// one more than what was accepted otherwise.
	if accepted == drafted {
		sp.dlen = min(2*max(sp.dlen, 1), MaxDraft)
	} else {
		sp.dlen = accepted + 1
	}
	if sp.probing {
		sp.probing = false
		if float64(accepted) >= pauseBelow*float64(drafted) {
			sp.filled, sp.next, sp.backoff = 0, 0, pauseMin
			return
		}
		sp.backoff = min(2*sp.backoff, pauseMax)
		sp.pause, sp.probing, sp.dlen = sp.backoff, true, 1
		return
	}
	sp.drafted[sp.next], sp.accepted[sp.next] = drafted, accepted
	sp.next = (sp.next + 1) % acceptWindow
	sp.filled = min(sp.filled+1, acceptWindow)
	if sp.filled < acceptWindow {
		return
	}
	d, a := 0, 0
	for i := range acceptWindow {
		d += sp.drafted[i]
		a += sp.accepted[i]
	}
	if float64(a) >= pauseBelow*float64(d) {
		return
	}
	sp.backoff = pauseMin
	sp.pause, sp.probing, sp.dlen = pauseMin, true, 1
}

// decoding reports whether q's next step is a plain decode step: its
// prompt is computed and it is not replaying positions after a
// preemption.
func (q *seqState) decoding() bool {
	return q.computed >= len(q.req.Prompt) && q.computed == len(q.tokens)-1
}

// propose fills every running sequence's drafts for this step. A
// sequence drafts only while decoding, not paused, and while room is
// left: the verify step's last row must stay within Steps positions.
func (s *scheduler) propose() error {
	if !s.spec.On() {
		return nil
	}
	for _, q := range s.running {
		sp := &q.spec
		sp.drafts = sp.drafts[:0]
		if !q.decoding() {
			continue
		}
		if sp.pause > 0 {
			continue // counted down in retire, once the decode step is done
		}
		if sp.hist == nil {
			h, err := newTokenHistory(q.req.Steps+1, s.spec.NgramMin, s.spec.NgramMax)
			if err != nil {
				return fmt.Errorf("scheduler: %w", err)
			}
			sp.hist, sp.drafts = h, make([]int, 0, s.spec.Draft)
		}
		sp.hist.sync(q.tokens)
		// Positions computed … computed+d run; the last must be < Steps.
		room := q.req.Steps - len(q.tokens)
		if !s.spec.noPause {
			room = min(room, max(sp.dlen, 1))
		}
		var n int
		sp.drafts, n = s.proposer.propose(sp.drafts, sp.hist, room)
		if !s.spec.noPause {
			sp.drafts = capWeakMatch(sp.drafts, n)
		}
	}
	return nil
}

// capWeakMatch cuts a draft found by a suffix match of n < strongMatch
// tokens to its first token. One shared token is weak evidence that what
// followed it then follows now; on stories260K such drafts were the
// rejected ones, and cutting them saved verify rows without losing
// accepted tokens (docs/speculative.md).
func capWeakMatch(drafts []int, n int) []int {
	if n < strongMatch {
		return drafts[:min(len(drafts), 1)]
	}
	return drafts
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
	acc := 0
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
			break
		}
	}
	s.st.AcceptedTokens += acc
	q.res.AcceptedTokens += acc
	sp.record(d, acc, s.spec.noPause)
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
