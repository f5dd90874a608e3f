package engine

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// checkTiming checks that r's stages happened in order, inside the call
// that ran it ([before, after]), that its first generated token was
// stamped no later than a hook saw it (first), and that GeneratedTokens
// counts the generated events (gen).
func checkTiming(t *testing.T, name string, r Result, before, after, first time.Time, gen int) {
	t.Helper()
	tm := r.Timing
	if r.GeneratedTokens != gen {
		t.Errorf("%s: GeneratedTokens %d, the hooks saw %d generated events", name, r.GeneratedTokens, gen)
	}
	if tm.Arrival.Before(before) || tm.Finished.After(after) || tm.Finished.Before(tm.Arrival) {
		t.Errorf("%s: arrival %v, finished %v outside the call [%v, %v]", name, tm.Arrival, tm.Finished, before, after)
	}
	if r.Err != nil {
		if !tm.Scheduled.IsZero() || !tm.FirstToken.IsZero() {
			t.Errorf("%s: a rejected request was scheduled at %v, first token %v", name, tm.Scheduled, tm.FirstToken)
		}
		return
	}
	if tm.Scheduled.Before(tm.Arrival) || tm.FirstToken.Before(tm.Scheduled) || tm.Finished.Before(tm.FirstToken) {
		t.Errorf("%s: stages out of order: %+v", name, tm)
	}
	if tm.FirstToken.After(first) {
		t.Errorf("%s: first token stamped at %v, after the hook saw it at %v", name, tm.FirstToken, first)
	}
}

// Result.Timing records vLLM's four stages for Run's and Submit's
// requests, and GeneratedTokens the generated events.
func TestResultTiming(t *testing.T) {
	m := tinyGQA(t)
	e := newEngine(t, m, Options{})
	specs := []reqSpec{{prompt: []int{1, 5, 6}, steps: 12}, {prompt: []int{1, 500}, steps: 8}, {prompt: []int{1, 9}, steps: 6, temperature: 0.9, seed: 3}}
	first := map[int]time.Time{}
	gen := map[int]int{}
	hooks := Hooks{Token: func(ev Event) {
		if !ev.Prompt {
			if gen[ev.Seq]++; gen[ev.Seq] == 1 {
				first[ev.Seq] = time.Now()
			}
		}
	}}
	before := time.Now()
	res, _, err := e.Run(context.Background(), build(specs, m.Config.VocabSize), hooks)
	after := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	if res[1].Err == nil || gen[0] < 2 {
		t.Fatalf("request 1 (a token outside the vocabulary) rejected: %v; request 0 generated %d tokens, want 2 or more", res[1].Err, gen[0])
	}
	for i, r := range res {
		checkTiming(t, fmt.Sprint("Run ", i), r, before, after, first[i], gen[i])
	}

	before = time.Now()
	st, err := e.Submit(context.Background(), build(specs[:1], m.Config.VocabSize)[0])
	if err != nil {
		t.Fatal(err)
	}
	n, firstEv := 0, time.Time{}
	for ev := range st.Events() {
		if !ev.Prompt {
			if n++; n == 1 {
				firstEv = time.Now()
			}
		}
	}
	checkTiming(t, "Submit", st.Result(), before, time.Now(), firstEv, n)
}

// TokensPerSecond is run.c's rate: the tokens after the first over the
// time from the first to the finish.
func TestTokensPerSecond(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(gen int, d time.Duration) Result {
		return Result{GeneratedTokens: gen, Timing: Timing{FirstToken: t0, Finished: t0.Add(d)}}
	}
	for _, c := range []struct {
		r    Result
		want float64
	}{
		{at(5, 2*time.Second), 2},
		{at(101, 500*time.Millisecond), 200},
		{at(1, time.Second), 0},
		{at(0, 0), 0},
		{at(3, 0), 0},
	} {
		if got := c.r.TokensPerSecond(); got != c.want {
			t.Errorf("%d tokens over %v: %v tok/s, want %v", c.r.GeneratedTokens, c.r.Timing.Finished.Sub(t0), got, c.want)
		}
	}
}
