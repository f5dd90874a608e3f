package engine

import (
	"fmt"
	"time"
)

// retire finishes the step: each running sequence commits the positions
// it computed (registering full blocks for prefix sharing), samples its
// next token from its row of logits and streams it, and a sequence that
// sampled BOS or reached its Steps frees its blocks and finishes. The
// counts Stats reads are published before the finished sequences'
// results are reported.
func (s *scheduler) retire(logits []float32) error {
	V := s.e.m.Config.VocabSize
	s.draw(logits)
	kept := s.running[:0]
	s.done = s.done[:0]
	for i, q := range s.running {
		if q.chunk == 0 && len(q.spec.drafts) == 0 {
			kept = append(kept, q) // waited for the token budget this step
			continue
		}
		var done bool
		var why FinishReason
		var err error
		if d := len(q.spec.drafts); d > 0 {
			done, why, err = s.verify(q, logits[q.logitRow*V:(q.logitRow+d+1)*V])
		} else {
			done, why, err = s.advance(q)
		}
		if err == nil && done {
			err = s.e.cache.Free(q.id)
		}
		if err != nil {
			// Keep q and the sequences after it running, so whoever
			// handles the error (Run returns, the online loop fails them)
			// sees each sequence exactly once.
			s.settle(append(kept, s.running[i:]...))
			return err
		}
		if !done {
			kept = append(kept, q)
			continue
		}
		q.res.FinishReason = why
		s.done = append(s.done, q)
	}
	s.settle(kept)
	return nil
}

// settle makes running the running set, publishes the counts Stats
// reads, then reports the results of the sequences retire finished.
func (s *scheduler) settle(running []*seqState) {
	clear(s.running[len(running):]) // drop retired sequences' pointers
	s.running = running
	s.e.publish(s)
	for _, q := range s.done {
		s.finish(q, q.res.FinishReason)
	}
	clear(s.done)
	s.done = s.done[:0]
}

// advance commits q's step and takes the token draw sampled for it,
// reporting whether q is done and why. A sequence replaying positions it
// computed before a preemption already knows its next token: it samples
// nothing.
func (s *scheduler) advance(q *seqState) (bool, FinishReason, error) {
	n := q.chunk
	if n > 1 {
		s.st.PrefillTokens += n
	} else {
		s.st.DecodeTokens += n
	}
	q.computed += n
	if err := s.e.cache.Commit(q.id, q.tokens); err != nil {
		return false, "", err
	}
	if q.replaying() {
		return false, "", nil
	}
	if !q.drawn {
		return false, "", fmt.Errorf("engine: sequence %d reached its sample with no token drawn", q.idx)
	}
	q.spec.checkShadow(q.next)
	done, why := s.take(q, q.next, q.drawnKept)
	return done, why, nil
}

// take gives q its next token, sampled from the logits kept (nil
// without Request.Logprobs): a stop token (Request.StopTokens, or BOS)
// ends q without being kept; any other is appended and streamed, and ends
// q when it completes a stop string or reaches Steps.
func (s *scheduler) take(q *seqState, next int, kept []float32) (bool, FinishReason) {
	if q.req.stops(next) {
		return true, FinishEOS
	}
	if s.appendToken(q, next, kept) {
		return true, FinishStop
	}
	return len(q.tokens)-1 >= q.req.Steps, FinishLength
}

// appendToken appends q's next token and streams it with the text it
// releases and its logprob, reporting whether it completed a stop string.
func (s *scheduler) appendToken(q *seqState, next int, kept []float32) bool {
	prev := q.tokens[len(q.tokens)-1]
	q.tokens = append(q.tokens, next)
	q.res.Tokens = append(q.res.Tokens, next)
	ev := Event{Seq: q.idx, Pos: len(q.tokens) - 2, Prev: prev, Token: next}
	stopped := false
	if q.detok != nil {
		ev.Text, stopped = q.detok.add(prev, next)
	}
	if kept != nil {
		lp := logprobOf(kept, next, q.req.TopLogprobs)
		q.res.Logprobs = append(q.res.Logprobs, lp)
		ev.Logprob = &q.res.Logprobs[len(q.res.Logprobs)-1]
	}
	if q.res.GeneratedTokens++; q.res.GeneratedTokens == 1 {
		q.res.Timing.FirstToken = time.Now()
	}
	q.out.token(ev)
	return stopped
}

// keepRow returns a copy of the logits row q samples its next token
// from, when q reports logprobs (the sampler may scale row in place), or
// nil.
func (q *seqState) keepRow(row []float32) []float32 {
	if !q.req.Logprobs {
		return nil
	}
	q.keptRow = append(q.keptRow[:0], row...)
	return q.keptRow
}
