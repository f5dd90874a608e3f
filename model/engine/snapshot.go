package engine

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/stride-lm/stride/kvcache"
)

// This file is the online loop's debugging view of the KV cache: a
// snapshot taken at a step boundary (KVSnapshot), and a stream of one
// event per step that replays onto it (SubscribeKV). Both are served by
// the loop's own goroutine between two steps, the only place where the
// cache and the scheduler's queues hold still, so every snapshot is
// consistent and the events add up to the next one exactly. No one else
// reads the cache for them.

// KVSnapshot is the KV cache and the scheduler's sequences at one step
// boundary of the online loop (docs/serving.md gives its JSON).
type KVSnapshot struct {
	// Step is the number of engine steps run so far.
	Step int `json:"step"`
	// Event is the id of the last KV event emitted before the snapshot
	// (0 for none): replaying events 1 … Event onto an earlier snapshot
	// gives this one.
	Event     uint64              `json:"event"`
	Pool      kvcache.PoolInfo    `json:"pool"`
	Blocks    []kvcache.BlockInfo `json:"blocks"`
	Sequences []KVSequence        `json:"sequences"`
	// Waiting are the requests waiting for blocks, new or preempted (they
	// hold none), in the order they will be admitted.
	Waiting  []KVWaiting `json:"waiting"`
	Counters KVCounters  `json:"counters"`
	// Check is "ok" when the cache's consistency check and the
	// snapshot's own invariants hold (kvcache.Snapshot.Check), otherwise
	// the first violation. Events leave it empty.
	Check string `json:"check,omitempty"`
}

// KVSequence is a running sequence: its cache view and its request.
type KVSequence struct {
	kvcache.SeqInfo
	// Request is the request's number, Stream.Seq (-1 if unknown).
	Request      int `json:"request"`
	PromptTokens int `json:"prompt_tokens"`
	Preemptions  int `json:"preemptions"`
}

// KVWaiting is a request waiting for blocks.
type KVWaiting struct {
	Request     int `json:"request"`
	Tokens      int `json:"tokens"` // prompt and generated tokens so far
	Preemptions int `json:"preemptions"`
}

// KVCounters are the pool's occupancy and the totals behind the page's
// counters.
type KVCounters struct {
	Usage           float64 `json:"usage"` // used blocks / all blocks, 0 to 1
	FreeBlocks      int     `json:"free_blocks"`
	UsedBlocks      int     `json:"used_blocks"`
	SharedBlocks    int     `json:"shared_blocks"`
	CachedBlocks    int     `json:"cached_blocks"`
	PromptTokens    int64   `json:"prompt_tokens"`
	PrefixHitTokens int64   `json:"prefix_hit_tokens"`
	PrefixHitRate   float64 `json:"prefix_hit_rate"` // prefix_hit_tokens / prompt_tokens
	Preemptions     int     `json:"preemptions"`
	CopyOnWrite     int64   `json:"cow_blocks"`
	CopyOnWriteB    int64   `json:"cow_bytes"`
	Evictions       int64   `json:"evictions"`
}

// kvDebug is the loop's side of the snapshots and the event stream.
type kvDebug struct {
	mu       sync.Mutex
	closed   bool               // the loop has ended
	reqs     []chan *KVSnapshot // snapshots asked for
	pending  []*KVSubscription  // subscribers to start at the next boundary
	subs     []*KVSubscription  // the loop's own from here on
	lastID   uint64             // the last event's id
	rec      recorder           // what the next event is the difference from
	testHook func(*KVSnapshot)  // set by tests: sees a snapshot at every boundary
}

// KVSnapshot returns the cache and the sequences at the online loop's
// next step boundary (starting the loop if needed), or ctx's error, or
// ErrClosed once the engine is closed.
func (e *Engine) KVSnapshot(ctx context.Context) (*KVSnapshot, error) {
	ch := make(chan *KVSnapshot, 1)
	d := &e.kv
	d.mu.Lock()
	if !e.startKV() {
		d.mu.Unlock()
		return nil, ErrClosed
	}
	d.reqs = append(d.reqs, ch)
	d.mu.Unlock()
	e.wakeLoop()
	select {
	case snap := <-ch:
		return snap, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-e.loop.done:
		return nil, ErrClosed
	}
}

// startKV starts the online loop if needed and reports whether it runs
// and will serve a request queued now (with e.kv.mu held): false once
// the loop has ended, or when Close came before it ever started.
func (e *Engine) startKV() bool {
	e.Start()
	return !e.kv.closed && e.online()
}

// KVSubscription receives the KV events of the online loop's steps.
type KVSubscription struct {
	ch      chan KVEvent
	gone    atomic.Bool
	e       *Engine
	dropped bool // loop only: events were dropped, send a snapshot next
}

// Events returns the subscription's events: first a "snapshot" event,
// then one "step" event per step that changed something. It is closed
// after Close or when the engine closes.
func (s *KVSubscription) Events() <-chan KVEvent { return s.ch }

// Close ends the subscription; its channel is closed at the loop's next
// step boundary.
func (s *KVSubscription) Close() {
	s.gone.Store(true)
	s.e.wakeLoop()
}

// SubscribeKV subscribes to the online loop's KV events (starting the
// loop if needed), with room for buffer events (at least 2). The loop
// never waits for a subscriber: when the buffer is full it drops the
// step's event and, once there is room, sends a snapshot event with
// Resync set instead, from which the replay goes on.
func (e *Engine) SubscribeKV(buffer int) (*KVSubscription, error) {
	s := &KVSubscription{ch: make(chan KVEvent, max(buffer, 2)), e: e}
	d := &e.kv
	d.mu.Lock()
	defer d.mu.Unlock()
	if !e.startKV() {
		return nil, ErrClosed
	}
	d.pending = append(d.pending, s)
	e.wakeLoop()
	return s, nil
}

// kvBoundary runs at every step boundary of the online loop: it emits
// the step's event to the subscribers, starts new ones with a snapshot
// and answers the snapshots asked for.
func (e *Engine) kvBoundary(s *scheduler) {
	d := &e.kv
	d.mu.Lock()
	reqs, pending := d.reqs, d.pending
	d.reqs, d.pending = nil, nil
	d.mu.Unlock()
	d.subs = slices.DeleteFunc(d.subs, func(sub *KVSubscription) bool {
		gone := sub.gone.Load()
		if gone {
			close(sub.ch)
		}
		return gone
	})
	if len(d.subs) > 0 {
		e.emitKV(s)
	} else if d.rec.prev != nil {
		e.cache.SetJournal(false)
		d.rec = recorder{}
	}
	for _, sub := range pending {
		if sub.gone.Load() {
			close(sub.ch)
			continue
		}
		if d.rec.prev == nil {
			e.cache.SetJournal(true)
			d.rec.reset(e, s)
		}
		sub.ch <- KVEvent{ID: d.lastID, Step: d.rec.prev.Step, Type: "snapshot", Snapshot: d.rec.prev}
		d.subs = append(d.subs, sub)
	}
	if len(reqs) > 0 || d.testHook != nil {
		snap := e.kvSnapshot(s, true)
		for _, ch := range reqs {
			ch <- snap
		}
		if d.testHook != nil {
			d.testHook(snap)
		}
	}
}

// closeKV ends every subscription and refuses later requests: the loop
// has returned.
func (e *Engine) closeKV() {
	d := &e.kv
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	for _, sub := range append(d.subs, d.pending...) {
		close(sub.ch)
	}
	d.subs, d.pending = nil, nil
}

// kvSnapshot builds the snapshot of the cache and s's queues; with
// check it runs the consistency checks too. It runs on the loop's
// goroutine.
func (e *Engine) kvSnapshot(s *scheduler, check bool) *KVSnapshot {
	cs := e.cache.Snapshot()
	byID := make(map[int]*seqState, len(s.running))
	for _, q := range s.running {
		byID[q.id] = q
	}
	tot := e.totals()
	snap := &KVSnapshot{Step: tot.Steps, Event: e.kv.lastID, Pool: cs.Pool, Blocks: cs.Blocks,
		Sequences: make([]KVSequence, 0, len(cs.Seqs)), Waiting: make([]KVWaiting, 0, len(s.waiting))}
	for _, si := range cs.Seqs {
		ks := KVSequence{SeqInfo: si, Request: -1}
		if q := byID[si.ID]; q != nil {
			ks.Request, ks.PromptTokens, ks.Preemptions = q.idx, len(q.req.Prompt), q.res.Preemptions
		}
		snap.Sequences = append(snap.Sequences, ks)
	}
	for _, q := range s.waiting {
		snap.Waiting = append(snap.Waiting, KVWaiting{Request: q.idx, Tokens: len(q.tokens), Preemptions: q.res.Preemptions})
	}
	snap.Counters = counters(cs.Stats, tot.Preemptions)
	if check {
		snap.Check = "ok"
		if err := e.cache.CheckConsistency(); err != nil {
			snap.Check = err.Error()
		} else if err := cs.Check(); err != nil {
			snap.Check = err.Error()
		}
	}
	return snap
}

// counters are the page's counters from the cache's.
func counters(st kvcache.Stats, preemptions int) KVCounters {
	c := KVCounters{FreeBlocks: st.FreeBlocks, UsedBlocks: st.UsedBlocks, SharedBlocks: st.SharedBlocks,
		CachedBlocks: st.CachedBlocks, PromptTokens: st.PromptTokens, PrefixHitTokens: st.PrefixHitTokens,
		Preemptions: preemptions, CopyOnWrite: st.CopyOnWriteBlocks, CopyOnWriteB: st.CopyOnWriteBytes,
		Evictions: st.Evictions, Usage: st.Usage()}
	if st.PromptTokens > 0 {
		c.PrefixHitRate = float64(st.PrefixHitTokens) / float64(st.PromptTokens)
	}
	return c
}
