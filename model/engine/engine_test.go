package engine

import (
	"github.com/stride-lm/stride/model"

	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func tinyGQA(t testing.TB) *model.Model {
	t.Helper()
	c := model.Config{Dim: 32, HiddenDim: 64, NLayers: 2, NHeads: 4, NKVHeads: 2, VocabSize: 64, SeqLen: 96,
		RopeTheta: 10000, NormEps: 1e-5}
	m, err := model.Synthesize(c, 11)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func newEngine(t testing.TB, m *model.Model, opts Options) *Engine {
	t.Helper()
	e, err := New(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// reqSpec describes a request; build makes fresh samplers from it, so the
// same spec can run several times from the same RNG state.
type reqSpec struct {
	prompt      []int
	steps       int
	temperature float32
	seed        uint64
}

func build(specs []reqSpec, vocab int) []Request {
	out := make([]Request, len(specs))
	for i, s := range specs {
		out[i] = Request{Prompt: s.prompt, Steps: s.steps, Sampler: model.NewSampler(vocab, s.temperature, 0.9, s.seed)}
	}
	return out
}

// mixedRequests returns prompts of different lengths sharing a prefix,
// sampled at different temperatures, each with its own seed.
func mixedRequests() []reqSpec {
	base := []int{1, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31, 33, 35, 37}
	var specs []reqSpec
	for i := 0; i < 6; i++ {
		p := append([]int(nil), base[:3+i*2]...)
		if i%2 == 1 {
			p = append(p, 40+i)
		}
		temp := float32(0)
		if i%3 != 0 {
			temp = 0.9
		}
		specs = append(specs, reqSpec{prompt: p, steps: 40 + 7*i, temperature: temp, seed: uint64(1000 + i)})
	}
	return specs
}

// alone runs each request by itself on a fresh engine.
func alone(t *testing.T, m *model.Model, path string, specs []reqSpec) [][]int {
	t.Helper()
	var out [][]int
	for _, r := range build(specs, m.Config.VocabSize) {
		e := newEngine(t, m, Options{Path: path})
		res, _, err := e.Generate([]Request{r}, nil)
		if err != nil || res[0].Err != nil {
			t.Fatal(err, res[0].Err)
		}
		out = append(out, res[0].Tokens)
	}
	return out
}

func TestBatchedGenerationEqualsAlone(t *testing.T) {
	m := tinyGQA(t)
	reqs := mixedRequests()
	for _, path := range []string{"fused", "naive"} {
		want := alone(t, m, path, reqs)
		for _, tc := range []struct {
			name string
			opts Options
		}{
			{"roomy pool", Options{Path: path, BlockSize: 4}},
			{"no prefix sharing", Options{Path: path, BlockSize: 4, DisablePrefixSharing: true}},
			{"tight pool preempts", Options{Path: path, BlockSize: 4, NumBlocks: 24}},
			{"batch cap 2", Options{Path: path, BlockSize: 8, MaxBatch: 2}},
		} {
			t.Run(path+"/"+tc.name, func(t *testing.T) {
				e := newEngine(t, m, tc.opts)
				var streamed = make([][]int, len(reqs))
				res, st, err := e.Generate(build(reqs, m.Config.VocabSize), func(ev Event) {
					streamed[ev.Seq] = append(streamed[ev.Seq], ev.Token)
				})
				if err != nil {
					t.Fatal(err)
				}
				for i := range reqs {
					if res[i].Err != nil {
						t.Fatalf("seq %d: %v", i, res[i].Err)
					}
					if !slices.Equal(res[i].Tokens, want[i]) {
						t.Fatalf("seq %d differs from running alone:\n got %v\nwant %v", i, res[i].Tokens, want[i])
					}
					if !slices.Equal(streamed[i], want[i]) {
						t.Fatalf("seq %d: streamed tokens %v differ from result", i, streamed[i])
					}
				}
				if tc.opts.NumBlocks == 24 && st.Preemptions == 0 {
					t.Fatalf("a 24-block pool should have forced preemption (stats %+v)", st)
				}
				if st.MaxBatch < 2 {
					t.Fatalf("sequences never ran together: %+v", st)
				}
				if tc.opts.MaxBatch > 0 && st.MaxBatch > tc.opts.MaxBatch {
					t.Fatalf("batch cap %d exceeded: %d", tc.opts.MaxBatch, st.MaxBatch)
				}
				if err := e.Cache().CheckConsistency(); err != nil {
					t.Fatal(err)
				}
				if got := e.Cache().FreeBlocks(); got != e.Cache().NumBlocks() {
					t.Fatalf("blocks leaked: %d of %d free", got, e.Cache().NumBlocks())
				}
			})
		}
	}
}

func TestPrefixSharingSkipsComputation(t *testing.T) {
	m := tinyGQA(t)
	prefix := []int{1, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	var reqs []reqSpec
	for i := 0; i < 4; i++ {
		reqs = append(reqs, reqSpec{prompt: append(slices.Clone(prefix), 20+i, 30+i), steps: 30, seed: 1})
	}
	want := alone(t, m, "fused", reqs)
	e := newEngine(t, m, Options{BlockSize: 4, MaxBatch: 1})
	res, st, err := e.Generate(build(reqs, m.Config.VocabSize), nil)
	if err != nil {
		t.Fatal(err)
	}
	cached := 0
	for i, r := range res {
		if !slices.Equal(r.Tokens, want[i]) {
			t.Fatalf("seq %d changed by prefix sharing: %v vs %v", i, r.Tokens, want[i])
		}
		cached += r.CachedTokens
	}
	// The first sequence computes the 12 shared positions (3 full blocks
	// of 4 before the last prompt token); the other three reuse them.
	if cached != 3*12 {
		t.Fatalf("cached prompt tokens = %d, want 36", cached)
	}
	if st.PrefillTokens != 4*len(reqs[0].prompt)-36 {
		t.Fatalf("prefill computed %d tokens, want %d", st.PrefillTokens, 4*len(reqs[0].prompt)-36)
	}
}

func TestGenerateRejectsBadRequestsOthersContinue(t *testing.T) {
	m := tinyGQA(t)
	long := make([]int, m.Config.SeqLen+1)
	long[0] = 1
	reqs := []Request{
		{Prompt: long, Steps: m.Config.SeqLen, Sampler: model.NewSampler(m.Config.VocabSize, 0, 0, 1)},
		{Prompt: []int{1, 2}, Steps: 10, Sampler: model.NewSampler(m.Config.VocabSize, 0, 0, 1)},
		{Prompt: []int{5}, Steps: 10, Sampler: model.NewSampler(m.Config.VocabSize, 0, 0, 1)},
		{Prompt: []int{1, 999}, Steps: 10, Sampler: model.NewSampler(m.Config.VocabSize, 0, 0, 1)},
	}
	e := newEngine(t, m, Options{})
	res, _, err := e.Generate(reqs, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, sub := range map[int]string{0: "longer than seq_len", 2: "must start with BOS", 3: "outside the vocabulary"} {
		if res[i].Err == nil || !strings.Contains(res[i].Err.Error(), sub) {
			t.Fatalf("request %d: err %v, want one mentioning %q", i, res[i].Err, sub)
		}
	}
	if res[1].Err != nil || len(res[1].Tokens) == 0 || res[1].Tokens[0] != 2 {
		t.Fatalf("the valid request did not run: %+v", res[1])
	}
}

func TestGenerateTinyPoolErrorsBeforeWork(t *testing.T) {
	m := tinyGQA(t)
	e := newEngine(t, m, Options{BlockSize: 4, NumBlocks: 2})
	res, st, err := e.Generate([]Request{{Prompt: []int{1, 3, 4, 5, 6, 7, 8, 9, 10}, Steps: 20,
		Sampler: model.NewSampler(m.Config.VocabSize, 0, 0, 1)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Err == nil || !strings.Contains(res[0].Err.Error(), "pool") || st.Steps != 0 {
		t.Fatalf("want a pool-size error before any step, got %v (steps %d)", res[0].Err, st.Steps)
	}
}

// TestGoldenStories260KBatched runs the golden greedy sequence inside a
// batch of other prompts, through the scheduler, on both paths: it must
// still be llama2.c's output token for token.
func TestGoldenStories260KBatched(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the batched golden run (4 sequences, both paths) runs in the full suite")
	}
	m, tok := stories260K(t)
	want := readGoldenIDs(t, filepath.Join(sharedDir(t), "models", "golden", "stories260K.greedy.ids"))
	for _, path := range []string{"fused", "naive"} {
		reqs := []Request{{Prompt: []int{model.BOSID}, Steps: 256, Sampler: model.NewSampler(512, 0, 0.9, 1)}}
		for i, p := range []string{"Once upon a time", "The cat sat", "Lily and Ben went to the park"} {
			ids, err := tok.Encode(p, true, false)
			if err != nil {
				t.Fatal(err)
			}
			reqs = append(reqs, Request{Prompt: ids, Steps: 100 + 50*i, Sampler: model.NewSampler(512, 1.0, 0.9, uint64(i+5))})
		}
		e := newEngine(t, m, Options{Path: path, BlockSize: 16})
		res, _, err := e.Generate(reqs, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res[0].Tokens, want) {
			t.Fatalf("%s: golden sequence changed inside a batch:\n got %v\nwant %v", path, res[0].Tokens, want)
		}
	}
}
