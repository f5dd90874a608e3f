package engine

import (
	"context"
	"slices"
	"testing"
)

// TestRequestStop: a Stop callback that says yes after the third
// generated token ends the sequence there with FinishStop, its tokens a
// prefix of the unstopped run's; the other request runs on untouched.
func TestRequestStop(t *testing.T) {
	m := tinyGQA(t)
	specs := []reqSpec{{prompt: []int{1, 5, 6}, steps: 12}, {prompt: []int{1, 9}, steps: 10}}
	free, _, err := newEngine(t, m, Options{}).Run(context.Background(), build(specs, m.Config.VocabSize), Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if free[0].FinishReason != FinishLength {
		t.Skipf("unstopped run ended with %s; the test needs a full-length one", free[0].FinishReason)
	}
	reqs := build(specs, m.Config.VocabSize)
	var calls int
	reqs[0].Stop = func(tokens []int) bool {
		calls++
		return len(tokens) == 2+3 // two prompt tokens after BOS, three generated
	}
	res, _, err := newEngine(t, m, Options{}).Run(context.Background(), reqs, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].FinishReason != FinishStop || !slices.Equal(res[0].Tokens, free[0].Tokens[:5]) {
		t.Errorf("stopped: %v (%s), want %v (stop)", res[0].Tokens, res[0].FinishReason, free[0].Tokens[:5])
	}
	if calls != 3 {
		t.Errorf("Stop called %d times, want once per generated token (3)", calls)
	}
	if !slices.Equal(res[1].Tokens, free[1].Tokens) || res[1].FinishReason != free[1].FinishReason {
		t.Errorf("the other request changed: %v, want %v", res[1].Tokens, free[1].Tokens)
	}
}
