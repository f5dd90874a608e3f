package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stride-lm/stride/model/engine"
)

// The debug routes are off until EnableDebug; then a backend without a
// KV cache answers 501, the page's files are served without the key
// (they hold no data) under a policy that allows only their own
// requests, and nothing else under /kv exists.
func TestDebugRoutes(t *testing.T) {
	_, plain := startServer(t, newFake(1), Config{}, nil)
	if r := do(t, "GET", plain.URL+"/debug/kv", ""); r.status != http.StatusNotFound {
		t.Errorf("/debug/kv without --debug-endpoints: %d", r.status)
	}
	if r := do(t, "GET", plain.URL+"/kv", ""); r.status != http.StatusNotFound {
		t.Errorf("/kv without --debug-endpoints: %d", r.status)
	}
	s, ts := startServer(t, newFake(1), Config{APIKeys: []string{"k"}}, nil)
	s.EnableDebug(DebugOptions{})
	for _, path := range []string{"/kv", "/kv/", "/kv/kv.js", "/kv/kv.css"} {
		r := do(t, "GET", ts.URL+path, "")
		if r.status != 200 || !strings.Contains(r.header.Get("Content-Security-Policy"), "default-src 'self'") || len(r.body) == 0 {
			t.Errorf("GET %s without a key: %d %v", path, r.status, r.header)
		}
	}
	if r := do(t, "GET", ts.URL+"/kv", ""); !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") || !strings.Contains(string(r.body), "/kv/kv.js") {
		t.Errorf("/kv is not the page: %s", r.body)
	}
	for _, path := range []string{"/kv/embed.go", "/kv/x/kv.js", "/kv/nothing"} {
		if r := do(t, "GET", ts.URL+path, ""); r.status != http.StatusNotFound && r.status != http.StatusUnauthorized {
			t.Errorf("GET %s: %d %s", path, r.status, r.body)
		}
	}
	for _, path := range []string{"/debug/kv", "/debug/kv/events"} {
		if r := do(t, "GET", ts.URL+path, ""); r.status != http.StatusUnauthorized {
			t.Errorf("GET %s without the key: %d", path, r.status)
		}
		r := do(t, "GET", ts.URL+path, "", "Authorization", "Bearer k")
		if msg, _, _, _ := errorObject(t, r); r.status != http.StatusNotImplemented || !strings.Contains(msg, "no KV cache") {
			t.Errorf("GET %s on a fake backend: %d %s", path, r.status, r.body)
		}
	}
	if r := do(t, "POST", ts.URL+"/debug/kv", "", "Authorization", "Bearer k"); r.status != http.StatusMethodNotAllowed {
		t.Errorf("POST /debug/kv: %d", r.status)
	}
}

// kvSnap is GET /debug/kv's body; kvEv one event of the stream.
type kvSnap struct {
	engine.KVSnapshot
	Requests map[string]kvRequest `json:"requests"`
}

type kvEv struct {
	engine.KVEvent
	Requests map[string]kvRequest `json:"requests"`
}

// snapshotKeys is the stable top level of /debug/kv (docs/serving.md).
var snapshotKeys = []string{"blocks", "check", "counters", "event", "pool", "requests", "sequences", "step", "waiting"}

func getSnapshot(t *testing.T, url string) kvSnap {
	t.Helper()
	r := do(t, "GET", url+"/debug/kv", "")
	if r.status != 200 {
		t.Fatalf("/debug/kv: %d %s", r.status, r.body)
	}
	var top map[string]json.RawMessage
	var s kvSnap
	if err := json.Unmarshal(r.body, &top); err != nil {
		t.Fatal(err)
	}
	if keys := slices.Sorted(maps.Keys(top)); !slices.Equal(keys, snapshotKeys) {
		t.Fatalf("/debug/kv has keys %v, the documented schema %v", keys, snapshotKeys)
	}
	if err := json.Unmarshal(r.body, &s); err != nil {
		t.Fatal(err)
	}
	if s.Check != "ok" {
		t.Fatalf("step %d: %s", s.Step, s.Check)
	}
	return s
}

// readEvents reads the SSE stream into out until the body closes.
func readEvents(t *testing.T, res *http.Response, mu *sync.Mutex, out *[]kvEv) {
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 16<<20)
	var typ string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			typ = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var ev kvEv
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev); err != nil || ev.Type != typ {
				t.Errorf("event %q (%s): %v", line, typ, err)
				return
			}
			mu.Lock()
			*out = append(*out, ev)
			mu.Unlock()
		}
	}
}

// TestDebugKVReplaysToSnapshots serves the built-in model on a pool
// small enough to preempt, streams /debug/kv/events while prompts sharing
// a prefix run, takes /debug/kv snapshots meanwhile, and checks that each
// snapshot holds its invariants (the cache's check and the snapshot's:
// reference counts = table references, free + used = total) and equals
// the replay of the events up to its event id; that the running
// sequences carry their HTTP request ids; and that the run shared blocks
// and preempted.
func TestDebugKVReplaysToSnapshots(t *testing.T) {
	b, _ := engineBackendWith(t, engine.Options{NumBlocks: 14, Threads: 2})
	s, ts := startServer(t, b, Config{ModelName: "m"}, nil)
	s.EnableDebug(DebugOptions{ShowText: true})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/debug/kv/events", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("/debug/kv/events: %v %v", err, res)
	}
	var mu sync.Mutex
	var events []kvEv
	done := make(chan struct{})
	go func() { defer close(done); readEvents(t, res, &mu, &events) }()
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(events) > 0 })

	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			body := fmt.Sprintf(`{"model":"m","prompt":"Once upon a time, there was a little girl named Lily. She loved to play outside %d","max_tokens":180,"temperature":0,"ignore_eos":true}`, i)
			if r := post(t, ts.URL+"/v1/completions", body); r.status != 200 {
				t.Errorf("completion %d: %d %s", i, r.status, r.body)
			}
		})
	}
	// A second server on the same engine, without ShowText, never shows
	// text.
	s2, ts2 := startServer(t, b, Config{ModelName: "m"}, nil)
	s2.EnableDebug(DebugOptions{})
	var snaps []kvSnap
	ids, named := false, false
	for range 20 {
		for _, r := range getSnapshot(t, ts2.URL).Requests {
			if r.Text != "" {
				t.Fatalf("text without ShowText: %+v", r)
			}
			named = named || r.ID != ""
		}
		sn := getSnapshot(t, ts.URL)
		for _, q := range sn.Sequences {
			r := sn.Requests[fmt.Sprint(q.Request)]
			ids = ids || strings.HasPrefix(r.ID, "cmpl-") && strings.HasPrefix(r.Text, "Once upon a time")
		}
		snaps = append(snaps, sn)
		time.Sleep(2 * time.Millisecond)
	}
	wg.Wait()
	final := getSnapshot(t, ts.URL)
	snaps = append(snaps, final)
	waitFor(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return events[len(events)-1].ID >= final.Event
	})
	cancel()
	<-done
	if !ids || !named {
		t.Errorf("no snapshot named a running sequence's request id and text (%v), or its id without ShowText (%v)", ids, named)
	}
	if final.Counters.Preemptions == 0 || final.Counters.PrefixHitTokens == 0 || len(final.Sequences) != 0 {
		t.Errorf("the load should preempt and hit the prefix cache, and end idle: %+v", final.Counters)
	}

	if events[0].Type != "snapshot" {
		t.Fatalf("the stream starts with %q", events[0].Type)
	}
	st := replayState(events[0].Snapshot)
	shared := false
	for _, ev := range events[1:] {
		if ev.Type != "step" {
			t.Fatalf("event %d is a %s (resync?) in a stream read at once", ev.ID, ev.Type)
		}
		st.apply(&ev.KVEvent)
		for _, b := range st.Blocks {
			shared = shared || b.Ref > 1
		}
		for _, sn := range snaps {
			if sn.Event == ev.ID {
				if d := st.differs(&sn.KVSnapshot); d != "" {
					t.Fatalf("after event %d the replay differs from /debug/kv: %s", ev.ID, d)
				}
			}
		}
	}
	if !shared {
		t.Error("no step shared a block")
	}
}

// replay is the state a client rebuilds from the events.
type replay struct {
	engine.KVSnapshot
	seqs map[int]engine.KVSequence
}

func replayState(s *engine.KVSnapshot) *replay {
	r := &replay{KVSnapshot: *s, seqs: map[int]engine.KVSequence{}}
	r.Blocks = slices.Clone(s.Blocks)
	for _, q := range s.Sequences {
		r.seqs[q.ID] = q
	}
	return r
}

func (r *replay) apply(ev *engine.KVEvent) {
	r.Step, r.Event = ev.Step, ev.ID
	for _, b := range ev.Blocks {
		r.Blocks[b.ID] = b
	}
	for _, id := range ev.Removed {
		delete(r.seqs, id)
	}
	for _, q := range ev.Sequences {
		r.seqs[q.ID] = q
	}
	r.Waiting, r.Counters = ev.Waiting, ev.Counters
}

func (r *replay) differs(s *engine.KVSnapshot) string {
	switch {
	case r.Step != s.Step:
		return fmt.Sprintf("step %d, snapshot %d", r.Step, s.Step)
	case !slices.Equal(r.Blocks, s.Blocks):
		return "blocks differ"
	case fmt.Sprint(r.Waiting) != fmt.Sprint(s.Waiting) || r.Counters != s.Counters:
		return fmt.Sprintf("waiting %v %+v, snapshot %v %+v", r.Waiting, r.Counters, s.Waiting, s.Counters)
	case len(r.seqs) != len(s.Sequences):
		return fmt.Sprintf("%d sequences, snapshot %d", len(r.seqs), len(s.Sequences))
	}
	for _, q := range s.Sequences {
		got := r.seqs[q.ID]
		if fmt.Sprint(got) != fmt.Sprint(q) {
			return fmt.Sprintf("sequence %d: %+v, snapshot %+v", q.ID, got, q)
		}
	}
	return ""
}
