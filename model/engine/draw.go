package engine

import "github.com/stride-lm/stride/model"

// drawSampleElems is how many logits one worker's share of a step's
// sampling covers at least: a softmax costs a few nanoseconds a logit,
// so below a few thousand the pool's hand-off costs more than it saves.
const drawSampleElems = 4096

// draw samples, before retire's serial pass, the next token of every
// sequence whose row advance takes a token from, on the engine's worker
// pool. A temperature-1 softmax over a 32,000-piece vocabulary costs
// about 0.27 ms, so at 16 rows a step, drawn one after another, sampling
// takes a large share of a decode step whose weights are read once for
// all rows. Each sequence has its own Sampler (Request.Sampler) and its
// own row of logits, so the token drawn is the one a serial draw gives;
// should two sequences share a Sampler after all, they are drawn one by
// one in running order, as before. OnLogits and the row kept for
// logprobs see the row first, before the sampler scales it in place.
func (s *scheduler) draw(logits []float32) {
	V := s.e.m.Config.VocabSize
	s.drawing = s.drawing[:0]
	for _, q := range s.running {
		q.drawn = false
		// advance's case (retire): a chunk and no drafts, and the step
		// reaches the end of what the sequence has fed (not a replay).
		if q.chunk == 0 || len(q.spec.drafts) > 0 || q.computed+q.chunk < len(q.tokens) {
			continue
		}
		row := logits[q.logitRow*V : (q.logitRow+1)*V]
		if s.e.opts.OnLogits != nil {
			s.e.opts.OnLogits(q.idx, len(q.tokens)-1, row)
		}
		q.drawnKept = q.keepRow(row)
		q.drawn = true
		s.drawing = append(s.drawing, q)
	}
	s.drawLogits = logits
	defer func() { s.drawLogits = nil }()
	if len(s.drawing) < 2 || s.sharesSampler() {
		s.sample(0, len(s.drawing))
		return
	}
	s.e.pool.ParallelFor(len(s.drawing), max(1, drawSampleElems/V), s.sampleFn)
}

// sample draws the tokens of s.drawing[start:end] from their rows of
// s.drawLogits.
func (s *scheduler) sample(start, end int) {
	V := s.e.m.Config.VocabSize
	for _, q := range s.drawing[start:end] {
		q.next = q.req.Sampler.Sample(s.drawLogits[q.logitRow*V : (q.logitRow+1)*V])
	}
}

// sharesSampler reports whether two of the sequences being drawn hold the
// same Sampler, whose draws must then stay in order.
func (s *scheduler) sharesSampler() bool {
	if s.samplers == nil {
		s.samplers = map[*model.Sampler]struct{}{}
	}
	clear(s.samplers)
	for _, q := range s.drawing {
		if _, dup := s.samplers[q.req.Sampler]; dup {
			return true
		}
		s.samplers[q.req.Sampler] = struct{}{}
	}
	return false
}
