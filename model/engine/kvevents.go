package engine

import (
	"slices"

	"github.com/stride-lm/stride/kvcache"
)

// KVEvent is what one step did to the KV cache (Type "step"), or a
// whole snapshot to start or restart a replay from (Type "snapshot").
// Applying a step event to the state of the snapshot or event before it
// — each block of Blocks replaces the pool's block with its id, each
// sequence of Sequences replaces (or adds) the sequence with its id,
// Removed sequences go, Waiting and Counters replace theirs — gives the
// state of KVSnapshot at the same Step and Event id (docs/serving.md).
type KVEvent struct {
	// ID numbers the step events from 1; a snapshot event carries the id
	// of the last step event it includes.
	ID   uint64 `json:"id"`
	Step int    `json:"step"`
	Type string `json:"type"` // "step" or "snapshot"
	// Resync marks a snapshot sent because this subscriber fell behind
	// and events were dropped.
	Resync   bool        `json:"resync,omitempty"`
	Snapshot *KVSnapshot `json:"snapshot,omitempty"`

	// Admitted sequences got blocks this step; Preempted ones gave
	// theirs back and wait again; Finished and Cancelled ones are gone
	// (Seq −1 for a request that never held blocks at a boundary).
	Admitted  []KVRef `json:"admitted"`
	Preempted []KVRef `json:"preempted"`
	Finished  []KVRef `json:"finished"`
	Cancelled []KVRef `json:"cancelled"`
	// The pool's block operations, in order (kvcache.Journal).
	kvcache.Journal
	// Writes is the slot mapping of the step's K/V writes.
	Writes *KVWrites `json:"writes,omitempty"`

	// The new state: changed blocks, new or changed sequences, the ids
	// of sequences gone, the waiting queue and the counters.
	Blocks    []kvcache.BlockInfo `json:"blocks"`
	Sequences []KVSequence        `json:"sequences"`
	Removed   []int               `json:"removed"`
	Waiting   []KVWaiting         `json:"waiting"`
	Counters  KVCounters          `json:"counters"`
}

// KVRef names a sequence: its cache id and its request.
type KVRef struct {
	Seq     int `json:"seq"`
	Request int `json:"request"`
}

// KVWrites is a step's slot mapping as runs of consecutive slots. A step
// with more than maxRuns runs is summarised: one run per sequence, from
// its first slot, N its token count (its slots need not be consecutive).
type KVWrites struct {
	Tokens     int     `json:"tokens"`
	Runs       []KVRun `json:"runs"`
	Summarized bool    `json:"summarized"`
}

// KVRun is N positions of sequence Seq from Pos written to the slots
// Slot … Slot+N−1 (Pos −1 when the sequence finished in the step and
// its positions are no longer known).
type KVRun struct {
	Seq  int   `json:"seq"`
	Pos  int   `json:"pos"`
	Slot int32 `json:"slot"`
	N    int   `json:"n"`
}

// maxRuns is the most slot runs an event lists before summarising.
const maxRuns = 256

// recorder is the state the next event is the difference from; prev
// is nil while no one subscribes (the cache keeps no journal then).
type recorder struct {
	prev    *KVSnapshot
	prevQ   map[int]*seqState // cache id → its sequence at prev
	waiting []*seqState
}

// reset makes the state now the base of the next event.
func (r *recorder) reset(e *Engine, s *scheduler) {
	r.prev = e.kvSnapshot(s, false)
	r.remember(s)
}

func (r *recorder) remember(s *scheduler) {
	r.prevQ = make(map[int]*seqState, len(s.running))
	for _, q := range s.running {
		r.prevQ[q.id] = q
	}
	r.waiting = slices.Clone(s.waiting)
}

// emitKV sends the event of the steps since the last boundary to every
// subscriber, never waiting: a full subscriber is marked and gets a
// snapshot once it has room again.
func (e *Engine) emitKV(s *scheduler) {
	d := &e.kv
	cur := e.kvSnapshot(s, false)
	prev := d.rec.prev
	ev := KVEvent{Type: "step", Step: cur.Step, Journal: e.cache.TakeJournal(), Waiting: cur.Waiting, Counters: cur.Counters}
	d.rec.diff(&ev, cur, s)
	if cur.Step > prev.Step {
		ev.Writes = e.writes(prev, cur)
	}
	changed := ev.changes(prev, cur)
	if changed {
		normalize(&ev)
		d.lastID++
		ev.ID, cur.Event = d.lastID, d.lastID
		d.rec.prev = cur
		d.rec.remember(s)
	}
	for _, sub := range d.subs {
		if sub.dropped {
			// A boundary with no change still resyncs: the subscriber
			// catches up as soon as it has room.
			snap := d.rec.prev
			select {
			case sub.ch <- KVEvent{ID: snap.Event, Step: snap.Step, Type: "snapshot", Resync: true, Snapshot: snap}:
				sub.dropped = false
			default:
			}
			continue
		}
		if !changed {
			continue
		}
		select {
		case sub.ch <- ev:
		default:
			sub.dropped = true
		}
	}
}

// diff fills ev with what changed from r.prev to cur, s being the
// scheduler at cur.
func (r *recorder) diff(ev *KVEvent, cur *KVSnapshot, s *scheduler) {
	prev := r.prev
	for i, b := range cur.Blocks {
		if b != prev.Blocks[i] {
			ev.Blocks = append(ev.Blocks, b)
		}
	}
	before := make(map[int]*KVSequence, len(prev.Sequences))
	for i := range prev.Sequences {
		before[prev.Sequences[i].ID] = &prev.Sequences[i]
	}
	now := make(map[int]bool, len(cur.Sequences))
	for _, q := range cur.Sequences {
		now[q.ID] = true
		p := before[q.ID]
		if p == nil {
			ev.Admitted = append(ev.Admitted, KVRef{Seq: q.ID, Request: q.Request})
		}
		if p == nil || !sameSeq(p, &q) {
			ev.Sequences = append(ev.Sequences, q)
		}
	}
	waiting, running := map[*seqState]bool{}, map[*seqState]bool{}
	for _, q := range s.waiting {
		waiting[q] = true
	}
	for _, q := range s.running {
		running[q] = true
	}
	gone := func(ref KVRef, q *seqState) {
		switch {
		case q != nil && waiting[q]:
			ev.Preempted = append(ev.Preempted, ref)
		case q != nil && q.res.FinishReason == FinishInterrupted:
			ev.Cancelled = append(ev.Cancelled, ref)
		default:
			ev.Finished = append(ev.Finished, ref)
		}
	}
	for _, p := range prev.Sequences {
		if !now[p.ID] {
			ev.Removed = append(ev.Removed, p.ID)
			gone(KVRef{Seq: p.ID, Request: p.Request}, r.prevQ[p.ID])
		}
	}
	for _, q := range r.waiting {
		if !waiting[q] && !running[q] {
			gone(KVRef{Seq: -1, Request: q.idx}, q)
		}
	}
}

// sameSeq reports whether a sequence is unchanged.
func sameSeq(a, b *KVSequence) bool {
	return a.Request == b.Request && a.PromptTokens == b.PromptTokens && a.Preemptions == b.Preemptions &&
		a.Length == b.Length && a.Committed == b.Committed && slices.Equal(a.Table, b.Table) &&
		slices.Equal(a.Shared, b.Shared) && slices.Equal(a.Owned, b.Owned)
}

// changes reports whether ev has anything to say.
func (ev *KVEvent) changes(prev, cur *KVSnapshot) bool {
	j := ev.Journal
	return cur.Step != prev.Step || len(ev.Blocks)+len(ev.Sequences)+len(ev.Removed)+len(ev.Finished)+len(ev.Cancelled) > 0 ||
		len(j.Allocated)+len(j.Freed)+len(j.Shared)+len(j.CopyOnWrite) > 0 ||
		!slices.Equal(prev.Waiting, cur.Waiting) || prev.Counters != cur.Counters
}

// normalize makes every list of ev a JSON array, never null.
func normalize(ev *KVEvent) {
	for _, p := range []*[]KVRef{&ev.Admitted, &ev.Preempted, &ev.Finished, &ev.Cancelled} {
		if *p == nil {
			*p = []KVRef{}
		}
	}
	for _, p := range []*[]int32{&ev.Allocated, &ev.Freed, &ev.Shared, &ev.Evicted} {
		if *p == nil {
			*p = []int32{}
		}
	}
	if ev.CopyOnWrite == nil {
		ev.CopyOnWrite = []kvcache.CopyOnWrite{}
	}
	if ev.Blocks == nil {
		ev.Blocks = []kvcache.BlockInfo{}
	}
	if ev.Sequences == nil {
		ev.Sequences = []KVSequence{}
	}
	if ev.Removed == nil {
		ev.Removed = []int{}
	}
}

// writes is the slot mapping of the last step as runs, each sequence's
// first position from its length at prev (or, for a sequence admitted
// in the step, from where its table holds the first slot).
func (e *Engine) writes(prev, cur *KVSnapshot) *KVWrites {
	buf := &e.step
	w := &KVWrites{Runs: []KVRun{}}
	total := 0
	for _, q := range buf.seqs {
		total += q.N
	}
	if total != len(buf.kv.SlotMapping) {
		return nil // not this step's buffers: say nothing rather than something wrong
	}
	bs := cur.Pool.BlockSize
	var perSeq []KVRun
	off := 0
	for _, q := range buf.seqs {
		slots := buf.kv.SlotMapping[off : off+q.N]
		off += q.N
		w.Tokens += q.N
		if q.N == 0 {
			continue
		}
		start := startPos(prev, cur, q.ID, slots[0], bs)
		perSeq = append(perSeq, KVRun{Seq: q.ID, Pos: start, Slot: slots[0], N: q.N})
		i0 := 0
		for i := 1; i <= len(slots); i++ {
			if i < len(slots) && slots[i] == slots[i-1]+1 {
				continue
			}
			pos := -1
			if start >= 0 {
				pos = start + i0
			}
			w.Runs = append(w.Runs, KVRun{Seq: q.ID, Pos: pos, Slot: slots[i0], N: i - i0})
			i0 = i
		}
	}
	if len(w.Runs) > maxRuns {
		w.Runs, w.Summarized = perSeq, true
	}
	return w
}

// startPos is the position a step started writing sequence id at.
func startPos(prev, cur *KVSnapshot, id int, slot int32, bs int) int {
	for _, q := range prev.Sequences {
		if q.ID == id {
			return q.Length
		}
	}
	for _, q := range cur.Sequences {
		if q.ID == id {
			if i := slices.Index(q.Table, slot/int32(bs)); i >= 0 {
				return i*bs + int(slot)%bs
			}
		}
	}
	return -1
}
