package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/stride-lm/stride/model"
)

// seqState is the scheduler's view of one request.
type seqState struct {
	idx      int
	id       int // kvcache sequence id (a new one at every admission)
	req      Request
	tokens   []int // BOS, prompt, generated: tokens[p] is fed at position p
	computed int   // positions whose K/V are in the cache
	chunk    int   // positions this step computes (plan)
	res      *Result
	admitted bool // admitted at least once (prompt tokens streamed)
	// queued: counted in the engine's arrived count (enqueued for the
	// online loop, not yet published among its waiting sequences).
	queued   bool
	spec     specState
	logitRow int          // the step's first logit row of this sequence
	out      sink         // where its events and result go
	detok    *detokenizer // its text and stop strings (nil without a tokenizer)
	keptRow  []float32    // the logits a token was sampled from, for its logprob
	// next is the token draw sampled for this step (when drawn), and
	// drawnKept its row as keepRow kept it.
	next      int
	drawn     bool
	drawnKept []float32
	// cancelled, when set, reports that the request's caller gave up
	// (Submit's context): checked at every step boundary.
	cancelled func() bool
}

// sink receives one sequence's events and, once, its final result. Both
// are called on the scheduler's goroutine.
type sink interface {
	token(Event)
	finish(Result)
}

// hookSink is Run's sink: request idx's events and result go to hooks.
type hookSink struct {
	hooks Hooks
	idx   int
}

func (h hookSink) token(ev Event) {
	if h.hooks.Token != nil {
		h.hooks.Token(ev)
	}
}

func (h hookSink) finish(r Result) {
	if h.hooks.Finish != nil {
		h.hooks.Finish(h.idx, r)
	}
}

// pending is the number of positions the sequence's next step computes:
// the rest of its prompt as one prefill, then one position per step.
//
// A sequence readmitted after preemption therefore recomputes the way it
// first computed: its prompt (less any prefix hit) in one prefill, then
// its generated tokens one decode step each, replayed without sampling.
// Recomputing them in one prefill, as vLLM does, would take one step
// instead of one per token, but a row computed in a prefill tile and the
// same row computed by a decode step round differently in the fused
// kernel, so the sequence's later tokens could change with preemption.
func (s *seqState) pending() int {
	if p := len(s.req.Prompt); s.computed < p {
		return p - s.computed
	}
	return min(1, len(s.tokens)-s.computed)
}

// replaying reports whether the sequence's next token is already known:
// it is recomputing positions it computed before being preempted.
func (s *seqState) replaying() bool { return s.computed < len(s.tokens) }

// scheduler is the state of one Run, or of the online loop: the queue
// of sequences waiting for blocks (new or preempted, none holding any)
// and the running set (each holding its blocks), in admission order.
type scheduler struct {
	e                *Engine
	st               Stats
	waiting, running []*seqState
	spec             Speculation // normalized: Method is "off" or "ngram"
	proposer         ngramProposer
	done             []*seqState          // the step's finished sequences (retire)
	cost             stepCost             // measured step costs: the chunk rule's input (stall.go)
	drawing          []*seqState          // the step's sequences that sample (draw.go)
	drawLogits       []float32            // the step's logits, while draw runs
	sampleFn         func(start, end int) // s.sample, for the pool (draw.go)
	samplers         map[*model.Sampler]struct{}
}

// newScheduler returns an idle scheduler over e's cache and forward.
func newScheduler(e *Engine) *scheduler {
	s := &scheduler{e: e, spec: e.spec}
	s.proposer = ngramProposer{k: e.spec.Draft, minN: e.spec.NgramMin, maxN: e.spec.NgramMax}
	s.sampleFn = s.sample // made once: a method value made at every step would allocate
	return s
}

// busy reports whether any sequence waits or runs.
func (s *scheduler) busy() bool { return len(s.waiting) > 0 || len(s.running) > 0 }

// cycle is one admit → step → retire round.
func (s *scheduler) cycle() error {
	if err := s.admit(); err != nil {
		return err
	}
	s.e.publish(s) // the admitted sequences run from here on, not wait
	logits, err := s.step()
	if err != nil {
		return err
	}
	if err := s.retire(logits); err != nil {
		return err
	}
	if s.e.afterStep != nil {
		return s.e.afterStep(s)
	}
	return nil
}

// Generate runs the requests together with continuous batching and
// returns one Result per request, in order. emit, if non-nil, receives
// every token as soon as it is known (prompt tokens when the sequence is
// admitted, generated ones step by step).
//
// Each step admits waiting sequences while the pool has blocks for their
// prompt, then runs one forward pass over the prefill rows of the newly
// admitted sequences and one decode row for every running one. Finished
// sequences free their blocks at once. When the pool runs dry mid-decode,
// the most recently admitted sequence is preempted (its blocks freed, its
// tokens recomputed later, its sampler state kept), so each sequence's
// output equals what it would be alone.
func (e *Engine) Generate(reqs []Request, emit func(Event)) ([]Result, Stats, error) {
	return e.Run(context.Background(), reqs, Hooks{Token: emit})
}

// Run is Generate with cancellation and a completion hook. When ctx is
// cancelled, the run stops at the next step boundary: every sequence not
// yet finished keeps the tokens it has, gets FinishInterrupted and is
// reported to hooks.Finish, and Run returns ctx's error beside the
// results. Once Start has started the online loop, Run's requests join
// it (the hooks are then called on the loop's goroutine) instead of
// running a scheduler of their own.
//
// A run is validate → (admit → step → retire)*: see the package doc.
func (e *Engine) Run(ctx context.Context, reqs []Request, hooks Hooks) ([]Result, Stats, error) {
	if e.online() {
		return e.runOnline(ctx, reqs, hooks)
	}
	s := newScheduler(e)
	defer e.retireScheduler(s)
	results := make([]Result, len(reqs))
	for i, r := range reqs {
		q := &seqState{idx: i, req: r, res: &results[i], out: hookSink{hooks, i}}
		q.arrive()
		s.accept(q)
	}
	for s.busy() {
		if err := ctx.Err(); err != nil {
			return results, s.st, s.interrupt(err)
		}
		if err := s.cycle(); err != nil {
			return results, s.st, err
		}
	}
	return results, s.st, nil
}

// accept validates q's request: a rejected one finishes with
// FinishError, one whose Steps are all forced prompt tokens finishes at
// once, and the others join the waiting queue.
func (s *scheduler) accept(q *seqState) {
	e, r := s.e, q.req
	if q.res.Err = validate(q.idx, r, e.m.Config, e.cache.CanEverFit); q.res.Err == nil && len(r.Stop) > 0 && e.opts.Tokenizer == nil {
		q.res.Err = fmt.Errorf("request %d: stop strings need Options.Tokenizer", q.idx)
	}
	if q.res.Err != nil {
		s.finish(q, FinishError)
		return
	}
	q.detok = newDetokenizer(e.opts.Tokenizer, r.Stop)
	if len(r.Prompt)-1 >= r.Steps {
		// The whole run is forced prompt tokens: nothing to compute.
		q.res.Tokens = append([]int(nil), r.Prompt[1:r.Steps+1]...)
		s.emitForced(q, r.Steps+1)
		s.finish(q, FinishLength)
		return
	}
	// Room for every token the request can reach (Steps ≤ seq_len), so
	// the decode loop's appends never reallocate.
	q.tokens = append(make([]int, 0, r.Steps+1), r.Prompt...)
	q.res.Tokens = make([]int, 0, r.Steps)
	s.waiting = append(s.waiting, q)
}

// interrupt frees the running sequences' blocks (waiting ones hold none),
// finishes every unfinished sequence as interrupted, and returns err.
func (s *scheduler) interrupt(err error) error {
	for _, q := range s.running {
		if ferr := s.e.cache.Free(q.id); ferr != nil {
			return fmt.Errorf("scheduler: %w", ferr)
		}
	}
	for _, q := range append(s.running, s.waiting...) {
		s.finish(q, FinishInterrupted)
	}
	s.running, s.waiting = nil, nil
	return err
}

// finish sets q's finish reason and text and reports its result.
func (s *scheduler) finish(q *seqState, why FinishReason) {
	q.res.FinishReason = why
	q.res.Timing.Finished = time.Now()
	s.e.uncount(q) // before its stream ends: Stats no longer counts it
	if q.detok != nil {
		q.res.FlushText = q.detok.flush()
		q.res.Text = string(q.detok.text)
	}
	q.out.finish(*q.res)
}

// emitForced records and streams the prompt tokens after BOS (up to n
// tokens of the prompt), which run.c prints as it feeds them.
func (s *scheduler) emitForced(q *seqState, n int) {
	p := q.req.Prompt[:min(n, len(q.req.Prompt))]
	if len(q.res.Tokens) == 0 {
		q.res.Tokens = append(q.res.Tokens, p[1:]...)
	}
	for i := 1; i < len(p); i++ {
		ev := Event{Seq: q.idx, Pos: i - 1, Prev: p[i-1], Token: p[i], Prompt: true}
		if q.detok != nil {
			ev.Text = piece(q.detok.codec, p[i-1], p[i])
		}
		q.out.token(ev)
	}
}
