package engine

// plan sets how many positions each running sequence computes this step
// (seqState.chunk). Without a token budget (Options.MaxBatchedTokens 0)
// a prefilling sequence computes the rest of its prompt at once. With
// one, decoding sequences go first, as in vLLM's scheduler: each gets
// its one position (and its drafts) whatever the budget, so a long prompt
// never stalls the running streams; what is left of the budget goes to
// the prefilling sequences in admission order, in chunks that are whole
// multiples of the path's prefill alignment (Engine.chunkAlign), except a
// prompt's last chunk. A chunk then starts where a prefix hit could have
// ended, so the kernels tile it as they tile the whole prompt and the
// sequence's logits are bit for bit those of an unchunked run.
//
// With Options.PrefillStall (k) the budget is also a time: while any
// sequence decodes, the step's prefill tokens are capped at what costs
// about k of their decode steps (prefillCap, from the scheduler's
// measured step costs), so a long prompt delays each stream's next token
// by about k decode steps however fast or slow the model is. With no
// stream decoding the token budget alone applies.
func (s *scheduler) plan() {
	limited := s.e.opts.MaxBatchedTokens > 0
	budget := s.e.opts.MaxBatchedTokens
	if !limited {
		budget = 1 << 30
	}
	prefilling, decoding := false, false
	for _, q := range s.running {
		q.chunk = q.pending()
		if q.computed < len(q.req.Prompt) {
			prefilling = true
			continue
		}
		decoding = decoding || q.chunk+len(q.spec.drafts) > 0
		budget -= q.chunk + len(q.spec.drafts)
	}
	if decoding {
		if c := prefillCap(s.e.opts.PrefillStall, s.cost, s.e.chunkAlign); c > 0 {
			budget, limited = min(budget, c), true
		}
	}
	if !limited || !prefilling {
		return
	}
	align := s.e.chunkAlign
	first := true
	for _, q := range s.running {
		if q.computed >= len(q.req.Prompt) {
			continue
		}
		rest := q.chunk
		switch {
		case rest <= budget:
		case budget >= align:
			q.chunk = budget / align * align
		case first:
			// The decodes took the budget: the oldest prompt still moves
			// by one aligned chunk, so no arrival waits on them forever.
			q.chunk = min(rest, align)
		default:
			q.chunk = 0
		}
		budget -= q.chunk
		first = false
	}
}
