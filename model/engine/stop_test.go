package engine

import (
	"context"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"
)

// tinyPieces is a 64-token codec whose pieces split multi-byte
// characters and stop strings across tokens.
func tinyPieces() pieceCodec {
	base := []string{"a", "b", "c", " ", "\xc3", "\xa9", "\xe2\x82", "\xac", "\xf0\x9f", "\x98\x80", "St", "op", "!", "\n", "ab", "c€"}
	var p pieceCodec
	for len(p) < 64 {
		p = append(p, base...)
	}
	return p
}

// TestRequestStopStrings: with stop strings, the engine ends a sequence
// exactly where the brute-force reference (decode the unstopped run's
// tokens, cut at the first stop) does, with FinishStop, that text, and
// events whose deltas (then FlushText) concatenate to it; the other
// request runs on untouched.
func TestRequestStopStrings(t *testing.T) {
	m := tinyGQA(t)
	codec := tinyPieces()
	specs := []reqSpec{{prompt: []int{1, 5, 6}, steps: 60, temperature: 1, seed: 7}, {prompt: []int{1, 9}, steps: 50, temperature: 1, seed: 8}}
	opts := Options{Tokenizer: codec}
	free, _, err := newEngine(t, m, opts).Run(context.Background(), build(specs, m.Config.VocabSize), Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	gen := free[0].Tokens[2:]
	var pieces []string
	for _, id := range gen {
		pieces = append(pieces, codec.Decode(0, id))
	}
	matched := 0
	for _, stops := range [][]string{{"!\nop"}, {"€!", "c "}, {"St\x98\x80", "😀"}, {"c\xc3\xc3ì"}, {"zzz"}} {
		want, at := cutAtStop(pieces, stops)
		if at >= 0 {
			matched++
		}
		reqs := build(specs, m.Config.VocabSize)
		reqs[0].Stop = stops
		var deltas []string
		hooks := Hooks{Token: func(ev Event) {
			if ev.Seq == 0 && !ev.Prompt {
				deltas = append(deltas, ev.Text)
			}
		}}
		res, _, err := newEngine(t, m, opts).Run(context.Background(), reqs, hooks)
		if err != nil {
			t.Fatal(err)
		}
		wantTokens, why := free[0].Tokens, free[0].FinishReason
		if at >= 0 {
			wantTokens, why = free[0].Tokens[:2+at+1], FinishStop
		}
		r := res[0]
		if r.FinishReason != why || !slices.Equal(r.Tokens, wantTokens) || r.Text != want {
			t.Errorf("stops %q: %v (%s) %q, want %v (%s) %q", stops, r.Tokens, r.FinishReason, r.Text, wantTokens, why, want)
		}
		if got := strings.Join(deltas, "") + r.FlushText; got != want {
			t.Errorf("stops %q: deltas+flush %q, want %q", stops, got, want)
		}
		if !slices.Equal(res[1].Tokens, free[1].Tokens) {
			t.Errorf("stops %q: the other request changed", stops)
		}
	}
	if matched < 2 {
		t.Errorf("only %d stop sets matched the unstopped text %q: the test checks little", matched, strings.Join(pieces, ""))
	}
}

// TestStopStringsNeedTokenizer: stop strings without a detokenizer are
// the request's error, not a silently ignored field.
func TestStopStringsNeedTokenizer(t *testing.T) {
	m := tinyGQA(t)
	reqs := build([]reqSpec{{prompt: []int{1, 5}, steps: 8}}, m.Config.VocabSize)
	reqs[0].Stop = []string{"x"}
	res, _, err := newEngine(t, m, Options{}).Run(context.Background(), reqs, Hooks{})
	if err != nil || res[0].Err == nil || !strings.Contains(res[0].Err.Error(), "Tokenizer") {
		t.Fatalf("got %v, %v; want the request's error naming the tokenizer", res[0].Err, err)
	}
}

// TestLogprobs: each generated token's logprob and top alternatives are
// the float64 log-softmax of the logits it was sampled from (seen
// through OnLogits), sorted by probability.
func TestLogprobs(t *testing.T) {
	m := tinyGQA(t)
	var rows [][]float32
	opts := Options{OnLogits: func(seq, pos int, l []float32) { rows = append(rows, slices.Clone(l)) }}
	reqs := build([]reqSpec{{prompt: []int{1, 5, 6}, steps: 20, temperature: 0.8, seed: 3}}, m.Config.VocabSize)
	reqs[0].Logprobs, reqs[0].TopLogprobs = true, 5
	var events []*TokenLogprob
	res, _, err := newEngine(t, m, opts).Run(context.Background(), reqs, Hooks{Token: func(ev Event) {
		if !ev.Prompt {
			events = append(events, ev.Logprob)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	gen := res[0].Tokens[2:]
	if len(res[0].Logprobs) != len(gen) || len(events) != len(gen) {
		t.Fatalf("%d logprobs, %d events for %d tokens", len(res[0].Logprobs), len(events), len(gen))
	}
	for i, lp := range res[0].Logprobs {
		ref := logSoftmax64(rows[i])
		if lp.Token != gen[i] || math.Abs(float64(lp.Logprob)-ref[gen[i]]) > 1e-6 || events[i] == nil || events[i].Logprob != lp.Logprob {
			t.Fatalf("token %d: %+v, want id %d logprob %g", i, lp, gen[i], ref[gen[i]])
		}
		ids := make([]int, len(ref))
		for j := range ids {
			ids[j] = j
		}
		sort.SliceStable(ids, func(a, b int) bool { return ref[ids[a]] > ref[ids[b]] })
		for k, top := range lp.Top {
			if top.Token != ids[k] || math.Abs(float64(top.Logprob)-ref[ids[k]]) > 1e-6 {
				t.Fatalf("token %d top %d: %+v, want %d (%g)", i, k, top, ids[k], ref[ids[k]])
			}
		}
		if len(lp.Top) != 5 {
			t.Fatalf("token %d: %d alternatives, want 5", i, len(lp.Top))
		}
	}
}

// logSoftmax64 is the log-softmax of row in float64, written plainly.
func logSoftmax64(row []float32) []float64 {
	var sum float64
	for _, x := range row {
		sum += math.Exp(float64(x))
	}
	out := make([]float64, len(row))
	for i, x := range row {
		out[i] = float64(x) - math.Log(sum)
	}
	return out
}
