package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/stride-lm/stride/kvcache"
)

// admit moves waiting sequences, in order, into the running set while the
// pool has blocks for their tokens and the batch cap allows. It stops at
// the first sequence that must wait: one the pool cannot take now, or one
// whose prefix a sequence admitted in this step is computing (it is
// admitted next step and shares those blocks instead of recomputing
// them).
//
// Only sequences admitted in this call can be computing a prompt's prefix
// blocks (the others committed theirs in earlier steps), so the check
// costs nothing on the steps that admit no one. (A readmitted sequence
// replaying its generated tokens also computes blocks over several steps;
// a prompt sharing those is not held back for it and computes its own,
// with the same result.)
func (s *scheduler) admit() error {
	e := s.e
	admitted := false
	for len(s.waiting) > 0 && (e.opts.MaxBatch == 0 || len(s.running) < e.opts.MaxBatch) {
		q := s.waiting[0]
		if admitted && e.cache.PendingPrefixBlocks(q.tokens) > 0 {
			return nil
		}
		ok, err := s.admitOne(q)
		if err != nil || !ok {
			return err
		}
		admitted = true
		s.waiting = s.waiting[1:]
		s.running = append(s.running, q)
	}
	return nil
}

// ropeAhead is how many positions past its tokens an admitted sequence
// reserves RoPE tables for (at D = 128, 512 bytes a position).
const ropeAhead = 1024

// admitOne adds q to the cache under a fresh id, sharing what prefix it
// can, and reports false when the pool has too few free blocks now. The
// first admission streams q's prompt and records its cached tokens; a
// readmission after preemption only recomputes.
func (s *scheduler) admitOne(q *seqState) (bool, error) {
	e := s.e
	cached, err := e.cache.AddSequence(e.nextID, q.tokens)
	if errors.Is(err, kvcache.ErrOutOfBlocks) {
		if len(s.running) == 0 {
			return false, fmt.Errorf("scheduler: sequence %d cannot be admitted into an idle cache: %w", q.idx, err)
		}
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("scheduler: %w", err)
	}
	q.id = e.nextID
	e.nextID++
	// Positions 0 … Steps−1 are the most the sequence feeds: size the
	// cache's bookkeeping for them once, so its decode steps allocate
	// nothing there. The RoPE tables are reserved for the prompt and the
	// next ropeAhead positions at most: a request may ask for seq_len
	// steps and stop at its end token long before, and beyond that the
	// tables double on demand (a handful of growths in a long run).
	if err := e.cache.Reserve(q.id, q.req.Steps); err != nil {
		_ = e.cache.Free(q.id) // validate checked Steps against the pool: not reached
		return false, fmt.Errorf("scheduler: %w", err)
	}
	e.fwd.ReservePositions(min(q.req.Steps, len(q.tokens)+ropeAhead))
	q.computed = cached
	if !q.admitted {
		q.admitted = true
		q.res.Timing.Scheduled = time.Now()
		q.res.CachedTokens = cached
		s.emitForced(q, len(q.req.Prompt))
	}
	return true, nil
}
