package engine

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// collect reads a stream to its end and returns its generated events.
func collect(st *Stream) []Event {
	var gen []Event
	for ev := range st.Events() {
		if !ev.Prompt {
			gen = append(gen, ev)
		}
	}
	return gen
}

// noLeaks checks, after t and all its cleanups (engines closed), that no
// goroutine is left running.
func noLeaks(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // registered first, run last
}

// TestOnlineMatchesRun: requests submitted to the online loop, some while
// others already run, give exactly the tokens, text and logprobs that Run
// gives them; the loop leaks no goroutine after Close.
func TestOnlineMatchesRun(t *testing.T) {
	noLeaks(t)
	m := tinyGQA(t)
	specs := mixedRequests()
	opts := Options{Tokenizer: tinyPieces(), NumBlocks: 24}
	reqs := build(specs, m.Config.VocabSize)
	for i := range reqs {
		reqs[i].Logprobs, reqs[i].Stop = true, []string{"€!"}
	}
	want, _, err := newEngine(t, m, opts).Run(context.Background(), reqs, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	// Stats is read from another goroutine while the loop runs (-race).
	stop := make(chan struct{})
	polled := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				polled <- n
				return
			default:
				if s := e.Stats(); s.Running > 0 {
					n++
				}
			}
		}
	}()
	reqs = build(specs, m.Config.VocabSize)
	streams := make([]*Stream, len(reqs))
	for i := range reqs {
		reqs[i].Logprobs, reqs[i].Stop = true, []string{"€!"}
		if streams[i], err = e.Submit(context.Background(), reqs[i]); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			time.Sleep(time.Millisecond) // let some start first
		}
	}
	for i, st := range streams {
		gen := collect(st)
		r := st.Result()
		if !slices.Equal(r.Tokens, want[i].Tokens) || r.Text != want[i].Text || r.FinishReason != want[i].FinishReason {
			t.Errorf("request %d: %v %q (%s), want %v %q (%s)", i, r.Tokens, r.Text, r.FinishReason, want[i].Tokens, want[i].Text, want[i].FinishReason)
		}
		for j, lp := range r.Logprobs {
			if j >= len(want[i].Logprobs) || lp.Logprob != want[i].Logprobs[j].Logprob {
				t.Fatalf("request %d token %d: logprob %v, want %v", i, j, lp, want[i].Logprobs)
			}
		}
		if len(gen) != len(r.Logprobs) {
			t.Errorf("request %d: %d generated events, %d logprobs", i, len(gen), len(r.Logprobs))
		}
	}
	close(stop)
	if n := <-polled; n == 0 {
		t.Error("Stats never saw a running sequence")
	}
	e.Close()
}

// TestOnlineCancel: a request cancelled while queued never starts (no
// event, no token); one cancelled while running ends interrupted and its
// blocks go back: the cache's free-block count returns to its idle
// value, and nothing runs or waits.
func TestOnlineCancel(t *testing.T) {
	noLeaks(t)
	m := tinyGQA(t)
	e, err := New(m, Options{MaxBatch: 1})
	if err != nil {
		t.Fatal(err)
	}
	idle := e.Stats().KV.FreeBlocks
	reqs := build([]reqSpec{{prompt: []int{1, 5, 6}, steps: 90, temperature: 1, seed: 1}, {prompt: []int{1, 7}, steps: 20}}, m.Config.VocabSize)
	reqs[0].IgnoreEOS = true
	ctxA, cancelA := context.WithCancel(context.Background())
	a, err := e.Submit(ctxA, reqs[0])
	if err != nil {
		t.Fatal(err)
	}
	ctxB, cancelB := context.WithCancel(context.Background())
	b, err := e.Submit(ctxB, reqs[1]) // waits: MaxBatch 1
	if err != nil {
		t.Fatal(err)
	}
	for ev := range a.Events() {
		if !ev.Prompt {
			break // a runs
		}
	}
	cancelB()
	<-b.Done()
	cancelA()
	ra, rb := a.Result(), b.Result()
	if rb.FinishReason != FinishInterrupted || len(rb.Tokens) != 0 || len(collect(b)) != 0 {
		t.Errorf("queued request: %s with %v; want interrupted before it started", rb.FinishReason, rb.Tokens)
	}
	if ra.FinishReason != FinishInterrupted || len(ra.Tokens) >= 89 {
		t.Errorf("running request: %s after %d tokens; want interrupted early", ra.FinishReason, len(ra.Tokens))
	}
	if s := e.Stats(); s.KV.FreeBlocks != idle || s.Running != 0 || s.Waiting != 0 {
		t.Errorf("after cancelling: %d free blocks (idle %d), %d running, %d waiting", s.KV.FreeBlocks, idle, s.Running, s.Waiting)
	}
	e.Close()
}

// TestOnlineIdleAndClose: an idle loop takes no steps (it sleeps, not
// spins); a request still running at Close ends interrupted; Submit after
// Close is ErrClosed; an invalid request is refused at once; Run is
// refused while the loop owns the scheduler.
func TestOnlineIdleAndClose(t *testing.T) {
	noLeaks(t)
	m := tinyGQA(t)
	e, err := New(m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	reqs := build([]reqSpec{{prompt: []int{1, 5}, steps: 6}, {prompt: []int{1, 5}, steps: 90}}, m.Config.VocabSize)
	st, err := e.Submit(context.Background(), reqs[0])
	if err != nil {
		t.Fatal(err)
	}
	st.Result()
	steps := e.Stats().Steps
	time.Sleep(30 * time.Millisecond)
	if s := e.Stats().Steps; s != steps {
		t.Errorf("idle loop took %d steps", s-steps)
	}
	if _, _, err := e.Run(context.Background(), reqs[:1], Hooks{}); err == nil {
		t.Error("Run while the online loop runs: no error")
	}
	bad := reqs[0]
	bad.Steps = 1000
	if _, err := e.Submit(context.Background(), bad); err == nil {
		t.Error("steps beyond seq_len: no error")
	}
	reqs[1].IgnoreEOS = true
	long, err := e.Submit(context.Background(), reqs[1])
	if err != nil {
		t.Fatal(err)
	}
	<-long.Events()
	e.Close()
	if r := long.Result(); r.FinishReason != FinishInterrupted && r.FinishReason != FinishLength {
		t.Errorf("running at Close: %s", r.FinishReason)
	}
	if _, err := e.Submit(context.Background(), reqs[0]); !errors.Is(err, ErrClosed) {
		t.Errorf("Submit after Close: %v, want ErrClosed", err)
	}
}
