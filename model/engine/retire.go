package engine

// retire finishes the step: each running sequence commits the positions
// it computed (registering full blocks for prefix sharing), samples its
// next token from its row of logits and streams it, and a sequence that
// sampled BOS or reached its Steps frees its blocks and finishes.
func (s *scheduler) retire(logits []float32) error {
	V := s.e.m.Config.VocabSize
	kept := s.running[:0]
	for _, q := range s.running {
		var done bool
		var why FinishReason
		var err error
		if d := len(q.spec.drafts); d > 0 {
			done, why, err = s.verify(q, logits[q.logitRow*V:(q.logitRow+d+1)*V])
		} else {
			done, why, err = s.advance(q, logits[q.logitRow*V:(q.logitRow+1)*V])
		}
		if err != nil {
			return err
		}
		if !done {
			kept = append(kept, q)
			continue
		}
		if err := s.e.cache.Free(q.id); err != nil {
			return err
		}
		s.finish(q, why)
	}
	clear(s.running[len(kept):]) // drop retired sequences' pointers
	s.running = kept
	return nil
}

// advance commits q's step and samples its next token from row, reporting
// whether q is done and why. A sequence replaying positions it computed
// before a preemption already knows its next token: it samples nothing.
func (s *scheduler) advance(q *seqState, row []float32) (bool, FinishReason, error) {
	n := q.pending()
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
	if s.e.opts.OnLogits != nil {
		s.e.opts.OnLogits(q.idx, len(q.tokens)-1, row)
	}
	// A paused sequence's pause counts the decode steps it completes (not
	// steps it was preempted in), so its drafting depends only on its own
	// tokens.
	if q.spec.pause > 0 {
		q.spec.pause--
	}
	done, why := s.take(q, q.req.Sampler.Sample(row))
	return done, why, nil
}

// take gives q its next token: a stop token (Request.StopTokens, or BOS)
// ends q without being kept; any other is appended and streamed, and
// ends q when it completes a stop string or reaches Steps.
func (s *scheduler) take(q *seqState, next int) (bool, FinishReason) {
	if q.req.stops(next) {
		return true, FinishEOS
	}
	s.appendToken(q, next)
	if q.stopped() {
		return true, FinishStop
	}
	return len(q.tokens)-1 >= q.req.Steps, FinishLength
}

// appendToken appends q's next token and streams it.
func (s *scheduler) appendToken(q *seqState, next int) {
	prev := q.tokens[len(q.tokens)-1]
	q.tokens = append(q.tokens, next)
	q.res.Tokens = append(q.res.Tokens, next)
	if s.hooks.Token != nil {
		s.hooks.Token(Event{Seq: q.idx, Pos: len(q.tokens) - 2, Prev: prev, Token: next})
	}
}

// stopped reports whether the caller's stop check (Request.Stop: stop
// strings on the decoded text) ends q after the token it just appended.
func (q *seqState) stopped() bool {
	return q.req.Stop != nil && q.req.Stop(q.res.Tokens)
}
