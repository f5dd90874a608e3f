package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/stride-lm/stride/kvcache"
	"github.com/stride-lm/stride/tensor"
)

// DefaultMaxBatchedTokens is the token budget per step that servers use
// by default (Options.MaxBatchedTokens): docs/serving.md gives the
// measurement behind it.
const DefaultMaxBatchedTokens = 256

// ErrClosed is the error of a Submit after Close.
var ErrClosed = errors.New("engine: closed")

// loopState is the online loop's side of the Engine: requests submitted
// since the loop last looked, and the signals that wake and stop it.
type loopState struct {
	mu        sync.Mutex
	started   bool
	closing   bool
	arrived   []*seqState
	nextSeq   int
	wake      chan struct{} // capacity 1: a pending wake-up is never lost (made by New)
	done      chan struct{} // closed when the loop goroutine has returned (made by New)
	closeOnce sync.Once
}

// Stream is one submitted request: its events as they happen and its
// final result.
type Stream struct {
	// Seq numbers the request among those submitted to its engine; it is
	// every event's Event.Seq.
	Seq       int
	events    chan Event
	done      chan struct{}
	res       Result
	cancelled atomic.Bool
	stopWatch func() bool // stops the context's AfterFunc
}

// Events returns the request's events in order (prompt tokens first). It
// is closed after the last one, when the request has finished. The
// channel holds every event the request can produce, so a slow reader
// never holds up the engine.
func (st *Stream) Events() <-chan Event { return st.events }

// Done is closed when the request has finished.
func (st *Stream) Done() <-chan struct{} { return st.done }

// Result blocks until the request has finished and returns its result.
func (st *Stream) Result() Result {
	<-st.done
	return st.res
}

func (st *Stream) token(ev Event) { st.events <- ev }

func (st *Stream) finish(r Result) {
	st.res = r
	st.stopWatch()
	close(st.events)
	close(st.done)
}

// Start starts the online loop on its own goroutine: from then on
// requests are given with Submit, and Run's requests join the loop too.
// The loop sleeps while there is nothing to do and wakes on a submission
// or a cancellation. Start is called by the first Submit if not before; later
// calls do nothing. Close stops it.
func (e *Engine) Start() {
	l := &e.loop
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.started || l.closing {
		return
	}
	l.started = true
	go e.serve()
}

// Submit queues r for the online loop (starting it if needed) and
// returns its stream. The loop takes it between two steps. When ctx is
// done the request is cancelled: if still queued it never starts; if
// running, its KV blocks are freed at the next step boundary. Either way
// it ends with FinishInterrupted. An invalid request is an error at once,
// naming what is wrong, and so is a Submit after Close (ErrClosed).
func (e *Engine) Submit(ctx context.Context, r Request) (*Stream, error) {
	if err := checkRequest(r, e.m.Config, e.cache.CanEverFit); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	if len(r.Stop) > 0 && e.opts.Tokenizer == nil {
		return nil, errors.New("engine: stop strings need Options.Tokenizer")
	}
	st := &Stream{events: make(chan Event, r.Steps+1), done: make(chan struct{})}
	q := &seqState{req: r, res: &st.res, out: st, cancelled: st.cancelled.Load}
	st.stopWatch = context.AfterFunc(ctx, func() {
		st.cancelled.Store(true)
		e.wakeLoop()
	})
	if ctx.Err() != nil { // AfterFunc's call may come after the loop took q
		st.cancelled.Store(true)
	}
	seq, err := e.enqueue(q, true)
	if err != nil {
		st.stopWatch()
		return nil, err
	}
	st.Seq = seq
	return st, nil
}

// enqueue hands q to the online loop (starting it if needed), numbering
// it when number is set, and returns its number.
func (e *Engine) enqueue(q *seqState, number bool) (int, error) {
	e.Start()
	l := &e.loop
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing {
		return 0, ErrClosed
	}
	if number {
		q.idx = l.nextSeq
		l.nextSeq++
	}
	q.arrive()
	e.countArrival(q)
	l.arrived = append(l.arrived, q)
	e.wakeLoop()
	return q.idx, nil
}

// runOnline is Run while the online loop runs: the requests join it,
// their events and results go to hooks on the loop's goroutine, and Run
// returns when all have finished. The Stats returned are the loop's over
// the call, steps shared with other requests included.
func (e *Engine) runOnline(ctx context.Context, reqs []Request, hooks Hooks) ([]Result, Stats, error) {
	results := make([]Result, len(reqs))
	var cancelled atomic.Bool
	stop := context.AfterFunc(ctx, func() {
		cancelled.Store(true)
		e.wakeLoop()
	})
	defer stop()
	if ctx.Err() != nil {
		cancelled.Store(true)
	}
	before := e.totals()
	var wg sync.WaitGroup
	for i, r := range reqs {
		wg.Add(1)
		q := &seqState{idx: i, req: r, res: &results[i], out: doneSink{hookSink{hooks, i}, wg.Done}, cancelled: cancelled.Load}
		if _, err := e.enqueue(q, false); err != nil {
			wg.Done() // q never reached the loop
			wg.Wait()
			for j := i; j < len(reqs); j++ {
				results[j] = Result{Err: err, FinishReason: FinishError}
			}
			return results, e.totals().since(before), err
		}
	}
	wg.Wait()
	return results, e.totals().since(before), ctx.Err()
}

// doneSink is a sink that also calls done after the result.
type doneSink struct {
	sink
	done func()
}

func (d doneSink) finish(r Result) {
	d.sink.finish(r)
	d.done()
}

// wakeLoop wakes the loop if it sleeps, or makes its next sleep return
// at once.
func (e *Engine) wakeLoop() {
	select {
	case e.loop.wake <- struct{}{}:
	default:
	}
}

// online reports whether Start has started the loop.
func (e *Engine) online() bool {
	e.loop.mu.Lock()
	defer e.loop.mu.Unlock()
	return e.loop.started
}

// serve is the online loop: take the requests that arrived, drop the
// cancelled ones, run one scheduler cycle, or sleep when there is no
// work. One scheduler, the same as Run's, serves every request.
func (e *Engine) serve() {
	defer close(e.loop.done)
	defer e.closeKV()
	s := newScheduler(e)
	defer e.retireScheduler(s)
	for {
		arrived, closing := e.takeArrived()
		for _, q := range arrived {
			if q.cancelled() {
				s.finish(q, FinishInterrupted) // cancelled before it was queued
				continue
			}
			s.accept(q)
		}
		e.publishArrivals(s, arrived)
		if closing {
			_ = s.interrupt(ErrClosed) // the cache is released next: a Free error changes nothing
			return
		}
		if err := s.reap(); err != nil {
			s.fail(err)
		}
		e.publish(s)
		e.kvBoundary(s)
		if !s.busy() {
			<-e.loop.wake
			continue
		}
		if err := s.cycle(); err != nil {
			s.fail(err)
		}
	}
}

// takeArrived returns the requests submitted since the last call and
// whether Close has asked the loop to stop.
func (e *Engine) takeArrived() ([]*seqState, bool) {
	l := &e.loop
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.arrived
	l.arrived = nil
	return a, l.closing
}

// stopLoop asks the online loop to stop and waits until it has.
func (e *Engine) stopLoop() {
	l := &e.loop
	l.mu.Lock()
	started := l.started
	l.closing = true
	l.mu.Unlock()
	if started {
		e.wakeLoop()
		<-l.done
	}
}

// reap finishes the cancelled sequences: a waiting one never starts, a
// running one gives its blocks back now. The counts Stats reads are
// published before their streams end, so a caller whose stream has ended
// no longer sees it running or waiting.
func (s *scheduler) reap() error {
	var err error
	var gone []*seqState
	keep := func(qs []*seqState, running bool) []*seqState {
		kept := qs[:0]
		for _, q := range qs {
			if q.cancelled == nil || !q.cancelled() {
				kept = append(kept, q)
				continue
			}
			if running {
				if ferr := s.e.cache.Free(q.id); ferr != nil && err == nil {
					err = fmt.Errorf("scheduler: %w", ferr)
				}
			}
			gone = append(gone, q)
		}
		clear(qs[len(kept):])
		return kept
	}
	s.waiting = keep(s.waiting, false)
	s.running = keep(s.running, true)
	s.e.publish(s)
	for _, q := range gone {
		s.finish(q, FinishInterrupted)
	}
	return err
}

// fail ends every sequence with FinishError after the scheduler failed
// (a bug, or a sequence that alone does not fit): their blocks are freed
// and the loop goes on with the requests that arrive next.
func (s *scheduler) fail(err error) {
	for _, q := range s.running {
		_ = s.e.cache.Free(q.id) // best effort: the step that failed may not have added it
	}
	for _, q := range append(s.running, s.waiting...) {
		q.res.Err = err
		s.finish(q, FinishError)
	}
	s.running, s.waiting = nil, nil
}

// LiveStats is the engine's state for metrics and health checks, safe to
// read from any goroutine while the engine runs. The counters are totals
// over the engine's life (every Run and the online loop).
type LiveStats struct {
	// Running is the sequences in the running set now. Waiting is those
	// waiting for it: submitted and not yet taken by the loop, queued
	// for admission, or preempted and queued for readmission (vLLM's
	// num_requests_waiting counts the same). A stream that has ended is
	// in neither.
	Running, Waiting int
	// KV is the cache now: blocks free, used and shared, and in total
	// the prompt tokens looked up for a prefix (PromptTokens), those found
	// (PrefixHitTokens) and the blocks copied on write.
	KV kvcache.Stats
	// KVUsage is the fraction of the pool's blocks in use, 0 to 1.
	KVUsage float64
	// Totals: steps, prefill and decode tokens, preemptions, and the
	// speculative tokens drafted and accepted.
	Steps, PrefillTokens, DecodeTokens, Preemptions int
	DraftTokens, AcceptedTokens                     int
	// Ledger is Options.Ledger's account of the activations and the
	// cache (bytes copied, copy operations, bytes allocated); zero
	// without a Ledger. BytesCopied over Steps is what a step copies.
	Ledger tensor.Stats
}

// liveCounters are what Stats reads besides the cache, written by the
// scheduler's goroutine after every step.
type liveCounters struct {
	mu               sync.Mutex
	running, waiting int   // len(s.running) and len(s.waiting) at the last publish
	arrived          int   // sequences enqueued and not yet published in waiting (seqState.queued)
	base, cur        Stats // finished schedulers' totals; the current one's
}

// Stats returns the engine's live state.
func (e *Engine) Stats() LiveStats {
	l := &e.live
	l.mu.Lock()
	t := addStats(l.base, l.cur)
	ls := LiveStats{Running: l.running, Waiting: l.waiting + l.arrived, Steps: t.Steps, PrefillTokens: t.PrefillTokens,
		DecodeTokens: t.DecodeTokens, Preemptions: t.Preemptions, DraftTokens: t.DraftTokens, AcceptedTokens: t.AcceptedTokens}
	l.mu.Unlock()
	ls.KV = e.cache.Stats()
	if e.opts.Ledger != nil {
		ls.Ledger = e.opts.Ledger.Stats()
	}
	ls.KVUsage = ls.KV.Usage()
	return ls
}

// publish copies s's counts for Stats.
func (e *Engine) publish(s *scheduler) {
	l := &e.live
	l.mu.Lock()
	l.running, l.waiting, l.cur = len(s.running), len(s.waiting), s.st
	l.mu.Unlock()
}

// countArrival counts q, just enqueued for the loop, as waiting until
// publishArrivals (or its finish) hands it over to the scheduler's counts.
func (e *Engine) countArrival(q *seqState) {
	l := &e.live
	l.mu.Lock()
	l.arrived++
	q.queued = true
	l.mu.Unlock()
}

// publishArrivals moves the arrivals the loop has just accepted from
// the arrived count to the scheduler's waiting count, in one update, so
// Stats never sees a sequence twice or not at all.
func (e *Engine) publishArrivals(s *scheduler, arrived []*seqState) {
	l := &e.live
	l.mu.Lock()
	for _, q := range arrived {
		if q.queued {
			q.queued = false
			l.arrived--
		}
	}
	l.running, l.waiting = len(s.running), len(s.waiting)
	l.mu.Unlock()
}

// uncount drops q from the arrived count if it is still in it: q
// finishes before the loop published it (cancelled or invalid on
// arrival, or the loop closing).
func (e *Engine) uncount(q *seqState) {
	if !q.queued {
		return
	}
	l := &e.live
	l.mu.Lock()
	l.arrived--
	q.queued = false
	l.mu.Unlock()
}

// retireScheduler folds a finished scheduler's totals into the engine's.
func (e *Engine) retireScheduler(s *scheduler) {
	l := &e.live
	l.mu.Lock()
	l.base, l.cur = addStats(l.base, s.st), Stats{}
	l.running, l.waiting = 0, 0
	l.mu.Unlock()
}

// totals is the engine's Stats over its life so far.
func (e *Engine) totals() Stats {
	e.live.mu.Lock()
	defer e.live.mu.Unlock()
	return addStats(e.live.base, e.live.cur)
}

// since is the counters of s less those of earlier (MaxBatch: s's).
func (s Stats) since(earlier Stats) Stats {
	return Stats{Steps: s.Steps - earlier.Steps, PrefillTokens: s.PrefillTokens - earlier.PrefillTokens,
		DecodeTokens: s.DecodeTokens - earlier.DecodeTokens, PrefillTime: s.PrefillTime - earlier.PrefillTime,
		DecodeTime: s.DecodeTime - earlier.DecodeTime, MaxBatch: s.MaxBatch,
		Preemptions: s.Preemptions - earlier.Preemptions, DraftTokens: s.DraftTokens - earlier.DraftTokens,
		AcceptedTokens: s.AcceptedTokens - earlier.AcceptedTokens, VerifySteps: s.VerifySteps - earlier.VerifySteps}
}

// addStats sums the counters of a and b (MaxBatch: the larger).
func addStats(a, b Stats) Stats {
	return Stats{Steps: a.Steps + b.Steps, PrefillTokens: a.PrefillTokens + b.PrefillTokens,
		DecodeTokens: a.DecodeTokens + b.DecodeTokens, PrefillTime: a.PrefillTime + b.PrefillTime,
		DecodeTime: a.DecodeTime + b.DecodeTime, MaxBatch: max(a.MaxBatch, b.MaxBatch),
		Preemptions: a.Preemptions + b.Preemptions, DraftTokens: a.DraftTokens + b.DraftTokens,
		AcceptedTokens: a.AcceptedTokens + b.AcceptedTokens, VerifySteps: a.VerifySteps + b.VerifySteps}
}
