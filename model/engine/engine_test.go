package engine

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/tensor"
	"github.com/stride-lm/stride/tensor/testfixture"
)

// tinyGQA is a small synthetic GQA model (4 query heads over 2 KV heads).
func tinyGQA(t testing.TB) *model.Model {
	return mustSynth(t, model.Config{Dim: 32, HiddenDim: 64, NLayers: 2, NHeads: 4, NKVHeads: 2, VocabSize: 64, SeqLen: 96,
		RopeTheta: 10000, NormEps: 1e-5}, 11)
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

// mixedRequests returns prompts of different lengths (3 to 38 tokens)
// sharing a prefix, sampled at different temperatures, each with its own
// seed. The longer ones share more than 16 tokens with the shorter ones,
// so both paths get prefix hits at their alignment.
func mixedRequests() []reqSpec {
	base := []int{1}
	for i := 1; i < 40; i++ {
		base = append(base, 5+(i*7)%50)
	}
	var specs []reqSpec
	for i := 0; i < 6; i++ {
		p := append([]int(nil), base[:3+i*7]...)
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

// seqPos names the logits a sequence sampled at one position.
type seqPos struct{ seq, pos int }

// run is one Generate: its results and stats, the tokens streamed per
// sequence, and the bits of every logit vector sampled from.
type run struct {
	res      []Result
	st       Stats
	streamed [][]int
	logits   map[seqPos][]uint32
}

// generate runs specs on a fresh engine built with opts, recording the
// logits of every sampling step through OnLogits.
func generate(t *testing.T, m *model.Model, opts Options, specs []reqSpec) run {
	t.Helper()
	return generateChecked(t, m, opts, specs, nil)
}

// generateChecked is generate with after, if not nil, run after every
// scheduler step.
func generateChecked(t *testing.T, m *model.Model, opts Options, specs []reqSpec, after func(*scheduler) error) run {
	t.Helper()
	r := run{streamed: make([][]int, len(specs)), logits: map[seqPos][]uint32{}}
	opts.OnLogits = func(seq, pos int, lg []float32) {
		k := seqPos{seq, pos}
		if _, dup := r.logits[k]; dup {
			t.Errorf("seq %d sampled position %d twice", seq, pos)
		}
		bits := make([]uint32, len(lg))
		for i, v := range lg {
			bits[i] = math.Float32bits(v)
		}
		r.logits[k] = bits
	}
	e := newEngine(t, m, opts)
	e.afterStep = after
	var err error
	r.res, r.st, err = e.Generate(build(specs, m.Config.VocabSize), func(ev Event) {
		r.streamed[ev.Seq] = append(r.streamed[ev.Seq], ev.Token)
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, res := range r.res {
		if res.Err != nil {
			t.Fatalf("seq %d: %v", i, res.Err)
		}
	}
	if err := e.Cache().CheckConsistency(); err != nil {
		t.Fatal(err)
	}
	if got := e.Cache().FreeBlocks(); got != e.Cache().NumBlocks() {
		t.Fatalf("blocks leaked: %d of %d free", got, e.Cache().NumBlocks())
	}
	return r
}

// alone runs each request by itself on a fresh engine (no batching, no
// prefix hits, no preemption) and merges the runs.
func alone(t *testing.T, m *model.Model, opts Options, specs []reqSpec) run {
	t.Helper()
	all := run{logits: map[seqPos][]uint32{}}
	for i, sp := range specs {
		r := generate(t, m, opts, []reqSpec{sp})
		all.res = append(all.res, r.res[0])
		all.streamed = append(all.streamed, r.streamed[0])
		for k, v := range r.logits {
			all.logits[seqPos{i, k.pos}] = v
		}
	}
	return all
}

// sameAsAlone fails unless every sequence of got produced the tokens and
// the bit-identical logits it produced alone.
func sameAsAlone(t *testing.T, got, want run) {
	t.Helper()
	closeToAlone(t, got, want, 0)
}

// closeToAlone fails unless every sequence of got produced the tokens it
// produced alone, with logits that differ by at most tol (0: the same
// bits).
func closeToAlone(t *testing.T, got, want run, tol float64) {
	t.Helper()
	for i := range want.res {
		if !slices.Equal(got.res[i].Tokens, want.res[i].Tokens) {
			t.Fatalf("seq %d differs from running alone:\n got %v\nwant %v", i, got.res[i].Tokens, want.res[i].Tokens)
		}
		if !slices.Equal(got.streamed[i], want.res[i].Tokens) {
			t.Fatalf("seq %d: streamed tokens %v differ from result", i, got.streamed[i])
		}
	}
	if len(got.logits) != len(want.logits) {
		t.Fatalf("%d logit vectors sampled, %d alone", len(got.logits), len(want.logits))
	}
	for k, w := range want.logits {
		g := got.logits[k]
		for j := range w {
			if d := math.Abs(float64(math.Float32frombits(g[j])) - float64(math.Float32frombits(w[j]))); g[j] != w[j] && !(d <= tol) {
				t.Fatalf("seq %d position %d: logit %d is %v, alone %v (tolerance %g)", k.seq, k.pos, j,
					math.Float32frombits(g[j]), math.Float32frombits(w[j]), tol)
			}
		}
	}
}

// TestBatchedGenerationEqualsAlone: a sequence's logits, bit for bit, and
// so its tokens, do not depend on what it is batched with, on prefix hits
// (within the batch and after preemption) or on being preempted and
// recomputed, on both attention paths and for every KV dtype.
func TestBatchedGenerationEqualsAlone(t *testing.T) {
	m := tinyGQA(t)
	reqs := mixedRequests()
	for _, kv := range []tensor.DType{tensor.F32, tensor.F16, tensor.BF16} {
		for _, path := range []string{"fused", "naive"} {
			want := alone(t, m, Options{Path: path, KVDType: kv}, reqs)
			for _, tc := range []struct {
				name string
				opts Options
			}{
				{"roomy pool", Options{BlockSize: 4}},
				{"no prefix sharing", Options{BlockSize: 4, DisablePrefixSharing: true}},
				{"tight pool preempts", Options{BlockSize: 4, NumBlocks: 24}},
				{"tight pool preempts, no sharing", Options{BlockSize: 4, NumBlocks: 24, DisablePrefixSharing: true}},
				{"batch cap 2", Options{BlockSize: 8, MaxBatch: 2}},
			} {
				t.Run(fmt.Sprintf("%v/%s/%s", kv, path, tc.name), func(t *testing.T) {
					opts := tc.opts
					opts.Path, opts.KVDType = path, kv
					got := generate(t, m, opts, reqs)
					sameAsAlone(t, got, want)
					st := got.st
					cached := 0
					for _, r := range got.res {
						cached += r.CachedTokens
					}
					if !opts.DisablePrefixSharing && cached == 0 {
						t.Fatalf("no prefix hit: the shared-prefix path went untested (stats %+v)", st)
					}
					if opts.NumBlocks == 24 && st.Preemptions == 0 {
						t.Fatalf("a 24-block pool should have forced preemption (stats %+v)", st)
					}
					if st.MaxBatch < 2 {
						t.Fatalf("sequences never ran together: %+v", st)
					}
					if opts.MaxBatch > 0 && st.MaxBatch > opts.MaxBatch {
						t.Fatalf("batch cap %d exceeded: %d", opts.MaxBatch, st.MaxBatch)
					}
				})
			}
		}
	}
}

// TestPrefixSharingSkipsComputation: prompts with a common prefix compute
// it once, whether they run one after another (batch cap 1) or are
// submitted together (the first computes the shared blocks, the others
// are admitted a step later and reuse them), and each still produces
// exactly the logits it produces alone.
func TestPrefixSharingSkipsComputation(t *testing.T) {
	m := tinyGQA(t)
	prefix := []int{1, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}
	var reqs []reqSpec
	for i := 0; i < 4; i++ {
		reqs = append(reqs, reqSpec{prompt: append(slices.Clone(prefix), 30+i, 40+i), steps: 40, seed: 1})
	}
	for _, kv := range []tensor.DType{tensor.F32, tensor.BF16} {
		for _, path := range []string{"fused", "naive"} {
			want := alone(t, m, Options{Path: path, KVDType: kv}, reqs)
			for _, maxBatch := range []int{1, 0} {
				t.Run(fmt.Sprintf("%v/%s/max_batch=%d", kv, path, maxBatch), func(t *testing.T) {
					got := generate(t, m, Options{Path: path, KVDType: kv, BlockSize: 4, MaxBatch: maxBatch}, reqs)
					sameAsAlone(t, got, want)
					// The first sequence computes the 16 shared positions (4
					// full blocks of 4 before the last prompt token, which
					// both paths' alignment allows); the other three reuse
					// them.
					for i, r := range got.res {
						if want := min(i, 1) * 16; r.CachedTokens != want {
							t.Fatalf("seq %d: cached_tokens = %d, want %d", i, r.CachedTokens, want)
						}
					}
					if n := 4*len(reqs[0].prompt) - 48; got.st.PrefillTokens != n {
						t.Fatalf("prefill computed %d tokens, want %d", got.st.PrefillTokens, n)
					}
					if maxBatch == 0 && got.st.MaxBatch != len(reqs) {
						t.Fatalf("submitted together, at most %d ran at once; want %d", got.st.MaxBatch, len(reqs))
					}
				})
			}
		}
	}
}

// A prefix hit that leaves a suffix of a few tokens, on an MHA model (one
// query head per KV head): the fused kernel picks its inner loops per
// query tile (tiles of fewer than 4 rows take the direct decode loops,
// which round differently from its matmul tiles), so a suffix starting
// mid-tile would compute its rows differently from the whole prompt. The
// engine shares prefixes only in multiples of the path's
// PrefillAlignment (32 tokens here, 8 blocks of 4), so the fused path
// gets fewer hits than the naive one, and both reproduce the alone
// logits bit for bit.
func TestPrefixHitShortSuffixMHA(t *testing.T) {
	c := model.Config{Dim: 32, HiddenDim: 64, NLayers: 2, NHeads: 4, NKVHeads: 4, VocabSize: 64, SeqLen: 96,
		RopeTheta: 10000, NormEps: 1e-5}
	m := mustSynth(t, c, 12)
	var prefix []int
	for i := 0; i < 41; i++ { // 32 tokens the fused path shares, 40 the naive one
		prefix = append(prefix, 1+i%50)
	}
	var reqs []reqSpec
	for i := 0; i < 3; i++ {
		reqs = append(reqs, reqSpec{prompt: append(slices.Clone(prefix), 20+i, 30+i), steps: 70, seed: uint64(1 + i), temperature: 0.8})
	}
	for _, kv := range []tensor.DType{tensor.F32, tensor.F16, tensor.BF16} {
		for _, path := range []string{"fused", "naive"} {
			t.Run(fmt.Sprintf("%v/%s", kv, path), func(t *testing.T) {
				want := alone(t, m, Options{Path: path, KVDType: kv}, reqs)
				got := generate(t, m, Options{Path: path, KVDType: kv, BlockSize: 4}, reqs)
				wantCached := map[string]int{"fused": 32, "naive": 40}[path]
				if got.res[1].CachedTokens != wantCached || got.res[2].CachedTokens != wantCached {
					t.Fatalf("cached tokens %d, %d: want %d each", got.res[1].CachedTokens, got.res[2].CachedTokens, wantCached)
				}
				sameAsAlone(t, got, want)
			})
		}
	}
}

// Holding a sharer back costs one step, not a serial run: the three
// sharers are admitted together in step 2, so the whole run takes one
// step more than its longest sequence needs.
func TestPrefixSharingInBatchCostsOneStep(t *testing.T) {
	m := tinyGQA(t)
	prefix := []int{1, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}
	var specs []reqSpec
	for i := 0; i < 4; i++ {
		specs = append(specs, reqSpec{prompt: append(slices.Clone(prefix), 30+i), steps: 50})
	}
	var order []int
	e := newEngine(t, m, Options{BlockSize: 4})
	res, st, err := e.Run(context.Background(), build(specs, m.Config.VocabSize), Hooks{Finish: func(seq int, r Result) {
		order = append(order, seq)
	}})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Err != nil || r.FinishReason != FinishLength {
			t.Fatalf("seq %d: %v, %s: the test needs every sequence to run its full length", i, r.Err, r.FinishReason)
		}
	}
	// Each sequence needs steps − (prompt − 1) forward passes (its prefill
	// samples the first generated token); the sharers start one step late.
	if need := specs[0].steps - (len(specs[0].prompt) - 1) + 1; st.Steps != need {
		t.Fatalf("%d steps, want %d", st.Steps, need)
	}
	if order[0] != 0 {
		t.Fatalf("completion order %v: the sequence admitted first finishes first", order)
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
	want := testfixture.ReadIDs(t, filepath.Join(sharedDir(t), "models", "golden", "stories260K.greedy.ids"))
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
