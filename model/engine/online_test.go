package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stride-lm/stride/model"
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
	for _, opts := range []Options{
		{Tokenizer: tinyPieces(), NumBlocks: 24},
		{Tokenizer: tinyPieces(), MaxBatchedTokens: 20, Speculation: Speculation{Method: "ngram"}},
	} {
		onlineMatchesRun(t, m, opts)
	}
}

// onlineMatchesRun is TestOnlineMatchesRun for one engine configuration.
func onlineMatchesRun(t *testing.T, m *model.Model, opts Options) {
	specs := mixedRequests()
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
	// Stats is read from another goroutine while the loop runs (-race),
	// and is always consistent.
	stop := make(chan struct{})
	bad := make(chan string, 1)
	go func() {
		for {
			s := e.Stats()
			if s.Running+s.Waiting > len(specs) || s.KVUsage < 0 || s.KVUsage > 1 || s.KV.UsedBlocks+s.KV.FreeBlocks != s.KV.NumBlocks {
				bad <- fmt.Sprintf("%+v", s)
				return
			}
			select {
			case <-stop:
				bad <- ""
				return
			default:
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
	if s := <-bad; s != "" {
		t.Errorf("inconsistent live stats: %s", s)
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
	// The loop pauses at a's first sampled token until both requests are
	// cancelled, so a cannot run to its end first however the machine
	// schedules this goroutine (without it, a loaded machine let a finish
	// its 90 steps before cancelA).
	sampling, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	e, err := New(m, Options{MaxBatch: 1, OnLogits: func(seq, pos int, _ []float32) {
		once.Do(func() { close(sampling); <-release })
	}})
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
	<-sampling // a runs
	ctxB, cancelB := context.WithCancel(context.Background())
	b, err := e.Submit(ctxB, reqs[1]) // waits: MaxBatch 1
	if err != nil {
		t.Fatal(err)
	}
	// The engine counts b as waiting from Submit on, though the loop
	// (held in a's step) has not taken it yet.
	if s := e.Stats(); s.Running != 1 || s.Waiting != 1 {
		t.Errorf("a running, b queued: Stats says %d running, %d waiting; want 1 and 1", s.Running, s.Waiting)
	}
	cancelB()
	cancelA()
	close(release)
	<-b.Done()
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
// Close is ErrClosed; an invalid request is refused at once; Run's requests
// join the loop.
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
	// Run joins the loop and gives what Submit gave.
	again := build([]reqSpec{{prompt: []int{1, 5}, steps: 6}}, m.Config.VocabSize)
	var streamed []int
	res, _, err := e.Run(context.Background(), again, Hooks{Token: func(ev Event) { streamed = append(streamed, ev.Token) }})
	if err != nil || !slices.Equal(res[0].Tokens, st.Result().Tokens) || !slices.Equal(streamed, res[0].Tokens) {
		t.Errorf("Run on the online loop: %v (%v), streamed %v; Submit gave %v", res[0].Tokens, err, streamed, st.Result().Tokens)
	}
	// A cancelled Run on the loop ends its requests interrupted.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	res, _, err = e.Run(done, build([]reqSpec{{prompt: []int{1, 5}, steps: 60}}, m.Config.VocabSize), Hooks{})
	if !errors.Is(err, context.Canceled) || res[0].FinishReason != FinishInterrupted {
		t.Errorf("cancelled Run on the loop: %v, %s", err, res[0].FinishReason)
	}
	bad := reqs[0]
	bad.Steps = 1000
	if _, err := e.Submit(context.Background(), bad); !errors.Is(err, ErrContextLength) {
		t.Errorf("steps beyond seq_len: %v, want ErrContextLength", err)
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

// TestOnlineSubmitDoneContext: a request whose context is already done
// when it is submitted to a fresh engine (the loop not yet started)
// never starts.
func TestOnlineSubmitDoneContext(t *testing.T) {
	noLeaks(t)
	m := tinyGQA(t)
	e := newEngine(t, m, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	st, err := e.Submit(ctx, build([]reqSpec{{prompt: []int{1, 5}, steps: 40}}, m.Config.VocabSize)[0])
	if err != nil {
		t.Fatal(err)
	}
	if r := st.Result(); r.FinishReason != FinishInterrupted || len(r.Tokens) != 0 {
		t.Errorf("%s with %v, want interrupted before it started", r.FinishReason, r.Tokens)
	}
}
