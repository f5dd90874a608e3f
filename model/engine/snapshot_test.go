package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stride-lm/stride/kvcache"
)

// kvState is what a replay of KV events rebuilds.
type kvState struct {
	step     int
	blocks   []kvcache.BlockInfo
	seqs     map[int]KVSequence
	waiting  []KVWaiting
	counters KVCounters
}

func stateOf(s *KVSnapshot) *kvState {
	st := &kvState{step: s.Step, blocks: slices.Clone(s.Blocks), seqs: map[int]KVSequence{},
		waiting: slices.Clone(s.Waiting), counters: s.Counters}
	for _, q := range s.Sequences {
		st.seqs[q.ID] = q
	}
	return st
}

// apply replays one step event.
func (st *kvState) apply(ev KVEvent) {
	st.step = ev.Step
	for _, b := range ev.Blocks {
		st.blocks[b.ID] = b
	}
	for _, id := range ev.Removed {
		delete(st.seqs, id)
	}
	for _, q := range ev.Sequences {
		st.seqs[q.ID] = q
	}
	st.waiting, st.counters = slices.Clone(ev.Waiting), ev.Counters
}

// differs names the first difference between a replayed state and a
// snapshot, or returns "".
func (st *kvState) differs(s *KVSnapshot) string {
	want := stateOf(s)
	switch {
	case st.step != want.step:
		return fmt.Sprintf("step %d, snapshot %d", st.step, want.step)
	case !slices.Equal(st.blocks, want.blocks):
		return fmt.Sprintf("blocks\n%v\nsnapshot\n%v", st.blocks, want.blocks)
	case !slices.Equal(st.waiting, want.waiting):
		return fmt.Sprintf("waiting %v, snapshot %v", st.waiting, want.waiting)
	case st.counters != want.counters:
		return fmt.Sprintf("counters %+v, snapshot %+v", st.counters, want.counters)
	case len(st.seqs) != len(want.seqs):
		return fmt.Sprintf("%d sequences, snapshot %d", len(st.seqs), len(want.seqs))
	}
	for id, q := range want.seqs {
		if got, ok := st.seqs[id]; !ok || !sameSeq(&got, &q) {
			return fmt.Sprintf("sequence %d: %+v, snapshot %+v", id, got, q)
		}
	}
	return ""
}

// TestKVSnapshotsAndEvents runs prompts sharing a prefix through the
// online loop on a pool small enough to preempt, and checks at every step
// boundary that the snapshot's invariants hold (the cache's consistency
// check and kvcache.Snapshot.Check: reference counts equal table
// references, free + used = total, …), and that replaying the event
// stream gives exactly the snapshot of the same event. A subscriber that
// never reads while the load runs gets a resync snapshot and still ends
// in the final state.
func TestKVSnapshotsAndEvents(t *testing.T) {
	noLeaks(t)
	m := tinyGQA(t)
	e, err := New(m, Options{BlockSize: 4, NumBlocks: 24, Tokenizer: tinyPieces()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var snaps []*KVSnapshot
	e.kv.testHook = func(s *KVSnapshot) { snaps = append(snaps, s) }
	sub, err := e.SubscribeKV(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	slow, err := e.SubscribeKV(2)
	if err != nil {
		t.Fatal(err)
	}
	var events []KVEvent
	var wg sync.WaitGroup
	wg.Go(func() {
		for ev := range sub.Events() {
			events = append(events, ev)
		}
	})
	reqs := build(mixedRequests(), m.Config.VocabSize)
	streams := make([]*Stream, len(reqs))
	for i := range reqs {
		if streams[i], err = e.Submit(context.Background(), reqs[i]); err != nil {
			t.Fatal(err)
		}
	}
	for _, st := range streams {
		if r := st.Result(); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	// The slow subscriber fell behind: take what its buffer holds, so the
	// next boundary (the final snapshot's) has room to resync it.
	var slowState *kvState
	resynced := false
	slowEvent := func(ev KVEvent) {
		switch {
		case ev.Type == "snapshot":
			slowState = stateOf(ev.Snapshot)
			resynced = resynced || ev.Resync
		case slowState != nil:
			slowState.apply(ev)
		}
	}
	for len(slow.Events()) > 0 {
		slowEvent(<-slow.Events())
	}
	final, err := e.KVSnapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
	wg.Wait()
	if _, err := e.KVSnapshot(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("a snapshot after Close: %v, want ErrClosed", err)
	}

	shared, preempted := false, false
	for _, s := range snaps {
		if s.Check != "ok" {
			t.Fatalf("step %d: %s", s.Step, s.Check)
		}
		for _, b := range s.Blocks {
			shared = shared || b.Ref > 1
		}
	}
	if !shared || final.Counters.Preemptions == 0 || final.Counters.PrefixHitTokens == 0 {
		t.Fatalf("the load should share blocks and preempt: shared %v, counters %+v", shared, final.Counters)
	}
	if len(events) == 0 || events[0].Type != "snapshot" {
		t.Fatalf("the stream starts with %d events, the first %+v", len(events), events)
	}
	st := stateOf(events[0].Snapshot)
	at := map[uint64][]*KVSnapshot{}
	for _, s := range snaps {
		at[s.Event] = append(at[s.Event], s)
	}
	compared := 0
	for _, ev := range events[1:] {
		if ev.Type != "step" || ev.ID != events[0].ID+uint64(compared)+1 {
			t.Fatalf("event %d (%s) after %d replayed from %d", ev.ID, ev.Type, compared, events[0].ID)
		}
		before := maps.Clone(st.seqs)
		st.apply(ev)
		for _, p := range ev.Preempted {
			preempted = true
			q, ok := before[p.Seq]
			if !ok || len(q.Owned) == 0 {
				t.Fatalf("event %d: preempted sequence %d held no blocks before", ev.ID, p.Seq)
			}
			for _, b := range q.Owned {
				if !slices.Contains(ev.Freed, b) {
					t.Errorf("event %d: preempted sequence %d's block %d is not freed (%v)", ev.ID, p.Seq, b, ev.Freed)
				}
			}
			if _, ok := st.seqs[p.Seq]; ok {
				t.Errorf("event %d: preempted sequence %d still holds a table", ev.ID, p.Seq)
			}
		}
		checkWrites(t, ev, st, 4)
		for _, s := range at[ev.ID] {
			if d := st.differs(s); d != "" {
				t.Fatalf("after event %d the replay differs from the snapshot: %s", ev.ID, d)
			}
		}
		compared++
	}
	t.Logf("%d events replayed against %d snapshots; final counters %+v", compared, len(snaps), final.Counters)
	if !preempted {
		t.Error("no event reports a preemption")
	}
	if d := st.differs(final); d != "" {
		t.Errorf("the replay's end differs from the final snapshot: %s", d)
	}

	// The slow subscriber's events resume from a resync snapshot and
	// replay to the end.
	for ev := range slow.Events() {
		slowEvent(ev)
	}
	if !resynced {
		t.Error("a 2-event subscriber never got a resync snapshot")
	}
	if d := slowState.differs(final); d != "" {
		t.Errorf("the slow subscriber's replay differs from the final snapshot: %s", d)
	}
}

// checkWrites checks a step's slot runs against the tables after it: run
// position p+i of a sequence that still runs lies in slot Slot+i, which
// its table maps p+i to (slot = table[p/bs]·bs + p%bs).
func checkWrites(t *testing.T, ev KVEvent, st *kvState, bs int) {
	t.Helper()
	if ev.Writes == nil {
		if ev.Step > 0 && len(ev.Admitted) > 0 {
			t.Fatalf("event %d admits sequences at step %d but lists no writes", ev.ID, ev.Step)
		}
		return
	}
	n := 0
	for _, r := range ev.Writes.Runs {
		n += r.N
		q, ok := st.seqs[r.Seq]
		if !ok || r.Pos < 0 || ev.Writes.Summarized {
			continue
		}
		for i := range r.N {
			p := r.Pos + i
			if p/bs >= len(q.Table) {
				continue // rolled back (a rejected draft)
			}
			if want := q.Table[p/bs]*int32(bs) + int32(p%bs); r.Slot+int32(i) != want {
				t.Fatalf("event %d: sequence %d position %d written to slot %d, its table maps it to %d", ev.ID, r.Seq, p, r.Slot+int32(i), want)
			}
		}
	}
	if n != ev.Writes.Tokens || n == 0 {
		t.Fatalf("event %d: runs cover %d tokens of %d", ev.ID, n, ev.Writes.Tokens)
	}
}

// TestKVAfterClose: an engine closed before its loop ever ran refuses
// snapshots and subscriptions at once instead of leaving them waiting.
func TestKVAfterClose(t *testing.T) {
	noLeaks(t)
	e, err := New(tinyGQA(t), Options{NumBlocks: 8})
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
	if _, err := e.KVSnapshot(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("snapshot: %v", err)
	}
	if _, err := e.SubscribeKV(4); !errors.Is(err, ErrClosed) {
		t.Errorf("subscribe: %v", err)
	}
}

// TestKVEventsNameCancelled: a running request whose context ends is
// reported in an event's Cancelled list with its blocks freed, and one
// that finishes in Finished.
func TestKVEventsNameCancelled(t *testing.T) {
	noLeaks(t)
	m := tinyGQA(t)
	// The engine waits in its second sampling until the test has
	// cancelled: the request is running (admitted) and cannot finish first.
	release := make(chan struct{})
	var calls atomic.Int32
	e, err := New(m, Options{BlockSize: 4, NumBlocks: 24, OnLogits: func(int, int, []float32) {
		if calls.Add(1) == 2 {
			<-release
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	sub, err := e.SubscribeKV(1 << 12)
	if err != nil {
		t.Fatal(err)
	}
	<-sub.Events() // the snapshot
	ctx, cancel := context.WithCancel(context.Background())
	long := build([]reqSpec{{prompt: []int{1, 5, 6, 7}, steps: 90, seed: 1}}, m.Config.VocabSize)[0]
	long.IgnoreEOS = true // it runs until cancelled
	short := build([]reqSpec{{prompt: []int{1, 9}, steps: 3, seed: 2}}, m.Config.VocabSize)[0]
	st, err := e.Submit(ctx, long)
	if err != nil {
		t.Fatal(err)
	}
	seq := -1
	for ev := range sub.Events() {
		if len(ev.Admitted) > 0 {
			seq = ev.Admitted[0].Seq
			break
		}
	}
	cancel()
	close(release)
	if r := st.Result(); r.FinishReason != FinishInterrupted {
		t.Fatalf("cancelled request finished %s", r.FinishReason)
	}
	st2, err := e.Submit(context.Background(), short)
	if err != nil {
		t.Fatal(err)
	}
	st2.Result()
	if _, err := e.KVSnapshot(context.Background()); err != nil { // a boundary after the cancellation
		t.Fatal(err)
	}
	e.Close()
	cancelled, finished := false, false
	for ev := range sub.Events() {
		for _, r := range ev.Cancelled {
			cancelled = cancelled || r.Seq == seq && r.Request == st.Seq && slices.Contains(ev.Removed, seq) && len(ev.Freed) > 0
		}
		for _, r := range ev.Finished {
			finished = finished || r.Request == st2.Seq
		}
	}
	if !cancelled || !finished {
		t.Errorf("events named the cancelled sequence %d: %v, the finished request %d: %v", seq, cancelled, st2.Seq, finished)
	}
}

// TestKVResubscribe: when the last subscriber leaves, the loop stops
// recording (the cache keeps no journal, so nobody watching costs
// nothing), and a later subscriber starts from a fresh snapshot that
// carries the last event's id and replays to the final snapshot.
func TestKVResubscribe(t *testing.T) {
	noLeaks(t)
	m := tinyGQA(t)
	e, err := New(m, Options{BlockSize: 4, NumBlocks: 24})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	run := func(seed uint64) {
		t.Helper()
		r := build([]reqSpec{{prompt: []int{1, 5, 6, 7, 8}, steps: 6, seed: seed}}, m.Config.VocabSize)[0]
		st, err := e.Submit(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		if res := st.Result(); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	first, err := e.SubscribeKV(1 << 12)
	if err != nil {
		t.Fatal(err)
	}
	run(1)
	first.Close()
	var last uint64
	for ev := range first.Events() { // closed at the next boundary
		last = ev.ID
	}
	if last == 0 {
		t.Fatal("the first subscriber saw no step event")
	}
	run(2) // nobody subscribes: nothing may be recorded
	if j := e.cache.TakeJournal(); len(j.Allocated)+len(j.Freed)+len(j.Shared) > 0 {
		t.Fatalf("the cache recorded a journal with no subscriber: %+v", j)
	}
	second, err := e.SubscribeKV(1 << 12)
	if err != nil {
		t.Fatal(err)
	}
	start := <-second.Events()
	if start.Type != "snapshot" || start.ID != last || start.Snapshot.Event != last {
		t.Fatalf("the second subscriber starts with %s event %d (snapshot event %d), want a snapshot at event %d",
			start.Type, start.ID, start.Snapshot.Event, last)
	}
	run(3)
	final, err := e.KVSnapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
	st, n, allocated := stateOf(start.Snapshot), 0, 0
	for ev := range second.Events() {
		if ev.Type != "step" || ev.ID != last+uint64(n)+1 {
			t.Fatalf("event %d (%s) after %d replayed from %d", ev.ID, ev.Type, n, last)
		}
		st.apply(ev)
		allocated += len(ev.Allocated)
		n++
	}
	if n == 0 || final.Event != last+uint64(n) {
		t.Fatalf("%d events after the resubscription; the final snapshot is at event %d, from %d", n, final.Event, last)
	}
	if allocated == 0 {
		t.Error("no event after the resubscription lists an allocated block: the journal is off")
	}
	if d := st.differs(final); d != "" {
		t.Errorf("the replay after resubscribing differs from the final snapshot: %s", d)
	}
}
