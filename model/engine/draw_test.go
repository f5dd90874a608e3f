package engine

import (
	"slices"
	"testing"

	"github.com/stride-lm/stride/model"
)

// wideVocab is a small model with a vocabulary wide enough (4,096) that
// draw hands every sampled row its own share of the pool.
func wideVocab(t *testing.T) *model.Model {
	return mustSynth(t, model.Config{Dim: 32, HiddenDim: 64, NLayers: 2, NHeads: 4, NKVHeads: 2, VocabSize: 4096, SeqLen: 64,
		RopeTheta: 10000, NormEps: 1e-5}, 5)
}

// TestParallelDrawEqualsAlone: sampled sequences drawn side by side on
// two threads get the tokens and logits each gets alone on one thread.
func TestParallelDrawEqualsAlone(t *testing.T) {
	m := wideVocab(t)
	var specs []reqSpec
	for i := 0; i < 6; i++ {
		specs = append(specs, reqSpec{prompt: []int{1, 10 + i, 20 + i}, steps: 24, temperature: 1, seed: uint64(7 + i)})
	}
	specs = append(specs, reqSpec{prompt: []int{1, 3}, steps: 24, temperature: 0.7, seed: 3},
		reqSpec{prompt: []int{1, 4}, steps: 24, temperature: 0, seed: 1})
	want := alone(t, m, Options{Threads: 1}, specs)
	got := generate(t, m, Options{Threads: 2}, specs)
	sameAsAlone(t, got, want)
	if got.st.MaxBatch < 2 {
		t.Fatalf("the sequences never ran together: %+v", got.st)
	}
}

// TestSharedSamplerDrawsInOrder: two requests holding one Sampler (which
// Request.Sampler's contract rules out) still draw in running order on
// two threads, so the run gives what it gives on one.
func TestSharedSamplerDrawsInOrder(t *testing.T) {
	m := wideVocab(t)
	gen := func(threads int) [][]int {
		e := newEngine(t, m, Options{Threads: threads})
		s := model.NewSampler(m.Config.VocabSize, 1, 0, 42)
		res, _, err := e.Generate([]Request{{Prompt: []int{1, 5}, Steps: 20, Sampler: s}, {Prompt: []int{1, 6}, Steps: 20, Sampler: s}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return [][]int{res[0].Tokens, res[1].Tokens}
	}
	one, two := gen(1), gen(2)
	for i := range one {
		if !slices.Equal(one[i], two[i]) {
			t.Fatalf("request %d: %v on one thread, %v on two", i, one[i], two[i])
		}
	}
}
