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
func (s *scheduler) plan() {
	budget := s.e.opts.MaxBatchedTokens
	prefilling := false
	for _, q := range s.running {
		q.chunk = q.pending()
		if q.computed < len(q.req.Prompt) {
			prefilling = true
			continue
		}
		budget -= q.chunk + len(q.spec.drafts)
	}
	if s.e.opts.MaxBatchedTokens == 0 || !prefilling {
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
