package loadgen

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
)

// wordCounter counts like a tokenizer with BOS whose tokens are the
// letters of every word but "a", "I" and "the" (one token each).
func wordCounter(_ context.Context, text string) (int, error) {
	n := 1
	for _, w := range strings.Fields(text) {
		switch w {
		case "a", "I", "the", "x", ".":
			n++
		default:
			n += len(w)
		}
	}
	return n, nil
}

// Random prompts hit their drawn lengths exactly, within the range
// ratio's bounds, and repeat for a seed.
func TestRandomPromptsAreTokenExact(t *testing.T) {
	r := Random{N: 40, InputLen: 50, OutputLen: 20, RangeRatio: 0.5}
	ps, inexact, err := RandomPrompts(context.Background(), r, rand.New(rand.NewPCG(1, 2)), wordCounter)
	if err != nil || inexact != 0 {
		t.Fatalf("%v, %d inexact", err, inexact)
	}
	lens := map[int]bool{}
	for _, p := range ps {
		n, _ := wordCounter(nil, p.Text)
		if n != p.Len || p.Len < 25 || p.Len > 75 || p.OutputLen < 10 || p.OutputLen > 30 {
			t.Errorf("prompt %d: counted %d, Len %d, output %d", p.Index, n, p.Len, p.OutputLen)
		}
		lens[p.Len] = true
	}
	if len(lens) < 10 {
		t.Errorf("only %d distinct lengths in 40 draws over [25, 75]", len(lens))
	}
	again, _, _ := RandomPrompts(context.Background(), r, rand.New(rand.NewPCG(1, 2)), wordCounter)
	if again[7].Text != ps[7].Text {
		t.Error("the same seed gave another prompt")
	}
	if _, _, err := RandomPrompts(context.Background(), Random{N: 1, InputLen: 1, OutputLen: 1, RangeRatio: 1}, rand.New(rand.NewPCG(1, 2)), wordCounter); err == nil {
		t.Error("range ratio 1 accepted")
	}
}

// drawLen follows vLLM's inclusive integer bounds.
func TestDrawLenBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	seen := map[int]bool{}
	for range 2000 {
		n := drawLen(rng, 10, 0.2) // [8, 12]
		if n < 8 || n > 12 {
			t.Fatalf("drew %d", n)
		}
		seen[n] = true
	}
	if len(seen) != 5 {
		t.Errorf("drew %v, want all of 8..12", seen)
	}
	if drawLen(rng, 1, 0.9) != 1 {
		t.Error("a length below 1")
	}
}

var jsonlSeeds = []string{
	"{\"prompt\":\"hello\"}\n\n{\"prompt\":\"bye\",\"output_len\":3}\n",
	"{\"prompt\":1}",
	"{\"output_len\":2}",
	"{\"prompt\":\"x\",\"output_len\":0}",
	"[\"a\"]\n",
	"",
}

func TestParseJSONL(t *testing.T) {
	ps, err := ParseJSONL(strings.NewReader(jsonlSeeds[0]), 9)
	if err != nil || len(ps) != 2 || ps[0].Text != "hello" || ps[0].OutputLen != 9 || ps[1].OutputLen != 3 || ps[1].Index != 1 {
		t.Fatalf("%+v %v", ps, err)
	}
	for i, want := range []string{"line 1", "line 1: no", "line 1: output_len", "line 1", "no prompts"} {
		_, err := ParseJSONL(strings.NewReader(jsonlSeeds[i+1]), 1)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("seed %d: error %v, want one line with %q", i+1, err, want)
		}
	}
	if got := Take(ps, 5); len(got) != 5 || got[4].Text != "hello" || got[4].Index != 4 {
		t.Errorf("Take: %+v", got)
	}
}

// Any file either parses into prompts within bounds or is a one-line
// error.
func FuzzParseJSONL(f *testing.F) {
	for _, s := range jsonlSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ps, err := ParseJSONL(strings.NewReader(string(b)), 4)
		if err != nil {
			if strings.Contains(err.Error(), "\n") || len(ps) != 0 {
				t.Fatalf("error %q with %d prompts", err, len(ps))
			}
			return
		}
		for i, p := range ps {
			if p.Index != i || p.OutputLen < 1 {
				t.Fatalf("prompt %+v", p)
			}
		}
	})
}
