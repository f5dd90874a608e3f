package engine

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/stride-lm/stride/model"
)

// TestRunFinishHook: Finish fires once per request, in completion order,
// with the result Run returns and a reason that says why it stopped.
func TestRunFinishHook(t *testing.T) {
	m := tinyGQA(t)
	e := newEngine(t, m, Options{})
	specs := []reqSpec{
		{prompt: []int{1, 5, 6}, steps: 12},
		{prompt: []int{1, 5, 6, 7}, steps: 3}, // all forced prompt tokens
		{prompt: []int{1, 500}, steps: 8},     // token outside the vocabulary
		{prompt: []int{1, 9}, steps: 5, temperature: 0.9, seed: 3},
	}
	var order []int
	got := map[int]Result{}
	res, _, err := e.Run(context.Background(), build(specs, m.Config.VocabSize), Hooks{Finish: func(seq int, r Result) {
		if _, dup := got[seq]; dup {
			t.Errorf("sequence %d finished twice", seq)
		}
		order = append(order, seq)
		got[seq] = r
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(specs) {
		t.Fatalf("finish hook saw %v, want every one of %d requests", order, len(specs))
	}
	for i, r := range res {
		if !slices.Equal(got[i].Tokens, r.Tokens) || got[i].FinishReason != r.FinishReason {
			t.Errorf("seq %d: hook saw %v/%s, Run returned %v/%s", i, got[i].Tokens, got[i].FinishReason, r.Tokens, r.FinishReason)
		}
	}
	if res[1].FinishReason != FinishLength || res[2].FinishReason != FinishError || res[2].Err == nil {
		t.Errorf("forced-only: %s; rejected: %s (%v)", res[1].FinishReason, res[2].FinishReason, res[2].Err)
	}
	for _, i := range []int{0, 3} {
		r := res[i]
		switch {
		case r.FinishReason == FinishLength && len(r.Tokens) == specs[i].steps:
		case r.FinishReason == FinishEOS && len(r.Tokens) < specs[i].steps:
		default:
			t.Errorf("seq %d: %d tokens of %d steps with reason %q", i, len(r.Tokens), specs[i].steps, r.FinishReason)
		}
	}
	// Rejected and forced-only requests retire before any step runs.
	if order[0] != 1 || order[1] != 2 {
		t.Errorf("completion order %v: want the requests that need no step first", order)
	}
}

// TestRunInterrupted: cancelling stops at the next step boundary; every
// unfinished sequence keeps a prefix of what it would have produced and is
// reported as interrupted.
func TestRunInterrupted(t *testing.T) {
	m := tinyGQA(t)
	specs := []reqSpec{{prompt: []int{1, 5}, steps: 40}, {prompt: []int{1, 8, 9}, steps: 40, temperature: 0.8, seed: 9}}
	full, _, err := newEngine(t, m, Options{}).Generate(build(specs, m.Config.VocabSize), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seen := 0
	e := newEngine(t, m, Options{})
	res, _, err := e.Run(ctx, build(specs, m.Config.VocabSize), Hooks{Token: func(ev Event) {
		if seen++; seen == 10 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	for i, r := range res {
		if r.FinishReason == FinishInterrupted {
			if len(r.Tokens) >= len(full[i].Tokens) || !slices.Equal(r.Tokens, full[i].Tokens[:len(r.Tokens)]) {
				t.Errorf("seq %d: interrupted tokens %v are not a proper prefix of %v", i, r.Tokens, full[i].Tokens)
			}
			continue
		}
		if !slices.Equal(r.Tokens, full[i].Tokens) {
			t.Errorf("seq %d finished (%s) with %v, want %v", i, r.FinishReason, r.Tokens, full[i].Tokens)
		}
	}
	if res[0].FinishReason != FinishInterrupted && res[1].FinishReason != FinishInterrupted {
		t.Errorf("no sequence was interrupted: %s, %s", res[0].FinishReason, res[1].FinishReason)
	}
	if e.Cache().FreeBlocks() != e.Cache().NumBlocks() {
		t.Errorf("blocks held after interrupt: %d free of %d", e.Cache().FreeBlocks(), e.Cache().NumBlocks())
	}
}

// A header may claim seq_len 2^20, and a request may ask for all of it:
// the RoPE tables still cover only the positions the run reaches (plus
// the reservation ahead), not seq_len (issue 11: 4.2 GB for 3 steps).
func TestRoPETablesFollowPositionsUsed(t *testing.T) {
	c := model.Config{Dim: 8, HiddenDim: 16, NLayers: 1, NHeads: 2, NKVHeads: 1, VocabSize: 32, SeqLen: 1 << 20,
		RopeTheta: 10000, NormEps: 1e-5}
	m := mustSynth(t, c, 3)
	e := newEngine(t, m, Options{NumBlocks: c.SeqLen / 16})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	res, _, err := e.Run(ctx, []Request{{Prompt: []int{model.BOSID, 5}, Steps: c.SeqLen, Sampler: model.NewSampler(c.VocabSize, 1, 0, 7)}},
		Hooks{Token: func(Event) {
			if n++; n == 20 {
				cancel()
			}
		}})
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	reached := len(res[0].Tokens) // positions fed: BOS and every token but the last
	if got := e.Forward().RoPEPositions(); got < reached || got > 2+ropeAhead {
		t.Fatalf("RoPE tables cover %d positions after a run of %d; want at most %d", got, reached, 2+ropeAhead)
	}
}

// TestRunStopTokens: a request with StopTokens ends at the first of them
// (not included, FinishEOS) instead of at BOS, and its prompt may start
// with another id (a GGUF vocabulary's own BOS, or none).
func TestRunStopTokens(t *testing.T) {
	m := tinyGQA(t)
	e := newEngine(t, m, Options{})
	greedy := func(prompt []int, stops []int) Result {
		res, _, err := e.Run(context.Background(), []Request{{Prompt: prompt, Steps: 20,
			Sampler: model.NewSampler(m.Config.VocabSize, 0, 0.9, 1), StopTokens: stops}}, Hooks{})
		if err != nil {
			t.Fatal(err)
		}
		return res[0]
	}
	free := greedy([]int{1, 5, 6}, nil)
	if free.Err != nil || len(free.Tokens) < 6 {
		t.Fatalf("unstopped run: %v, %d tokens", free.Err, len(free.Tokens))
	}
	// Stop at the id generated fourth (after the 2 forced prompt tokens);
	// an absent id in the list changes nothing.
	stop := free.Tokens[4]
	cut := slices.Index(free.Tokens[2:], stop) + 2
	got := greedy([]int{1, 5, 6}, []int{m.Config.VocabSize + 7, stop})
	if got.FinishReason != FinishEOS || !slices.Equal(got.Tokens, free.Tokens[:cut]) {
		t.Errorf("with stop %d: %v (%s), want %v (eos)", stop, got.Tokens, got.FinishReason, free.Tokens[:cut])
	}
	// IgnoreEOS samples past the stop id, keeping it, as the unstopped run.
	res, _, err := e.Run(context.Background(), []Request{{Prompt: []int{1, 5, 6}, Steps: 20,
		Sampler: model.NewSampler(m.Config.VocabSize, 0, 0.9, 1), StopTokens: []int{stop}, IgnoreEOS: true}}, Hooks{})
	if err != nil || !slices.Equal(res[0].Tokens, free.Tokens) || res[0].FinishReason != free.FinishReason {
		t.Errorf("IgnoreEOS: %v (%s, %v), want the unstopped %v (%s)", res[0].Tokens, res[0].FinishReason, err, free.Tokens, free.FinishReason)
	}
	// A prompt not starting with BOSID is accepted with StopTokens, refused
	// without.
	if r := greedy([]int{5, 6}, []int{}); r.Err != nil || len(r.Tokens) == 0 {
		t.Errorf("prompt without BOS, StopTokens set: %v", r.Err)
	}
	if r := greedy([]int{5, 6}, nil); r.Err == nil {
		t.Error("prompt without BOS accepted under run.c's rule")
	}
}
