package engine

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/tensor"
	"github.com/stride-lm/stride/tensor/testfixture"
)

// ngram is speculation with the defaults; cheapRows prices a verify row
// at 0.05 of a step, as on a model much larger than the test's, so the
// adaptive rule drafts wherever a draft has some chance, and the tests of
// verification see many drafts on tiny models.
var (
	ngram     = Speculation{Method: "ngram"}
	cheapRows = Speculation{Method: "ngram", DraftCost: 0.05}
)

// repetitiveRequests are greedy prompts that repeat a phrase, so the
// n-gram lookup has something to find from the first decode step, plus
// prompts without repeats that share a prefix with them (prefix hits).
func repetitiveRequests() []reqSpec {
	phrase := []int{9, 17, 33, 4, 21, 50, 12}
	var specs []reqSpec
	for i := 0; i < 5; i++ {
		p := []int{model.BOSID}
		for r := 0; r < 2+i%3; r++ {
			p = append(p, phrase...)
		}
		p = append(p, phrase[:1+i]...)
		specs = append(specs, reqSpec{prompt: p, steps: 60 + 5*i})
	}
	specs = append(specs, reqSpec{prompt: []int{model.BOSID, 3, 5, 7}, steps: 70})
	return specs
}

// TestSpeculativeGreedySameAsOff: with speculation on, every greedy
// sequence produces the tokens that it produces with speculation off and
// alone, however it is batched, preempted or prefix-shared, on both paths
// and for every KV dtype; its logits at every position are the same bits
// (the verify rows attend as decode rows); and the drafts were really
// verified, some accepted, some not.
func TestSpeculativeGreedySameAsOff(t *testing.T) {
	m := tinyGQA(t)
	reqs := append(repetitiveRequests(), mixedGreedy()...)
	for _, kv := range []tensor.DType{tensor.F32, tensor.F16, tensor.BF16} {
		for _, path := range []string{"fused", "naive"} {
			want := alone(t, m, Options{Path: path, KVDType: kv}, reqs)
			for _, tc := range []struct {
				name string
				opts Options
			}{
				{"alone", Options{}},
				{"roomy pool", Options{BlockSize: 4}},
				{"no prefix sharing", Options{BlockSize: 4, DisablePrefixSharing: true}},
				{"tight pool preempts", Options{BlockSize: 4, NumBlocks: 30}},
				{"batch cap 3", Options{BlockSize: 8, MaxBatch: 3}},
				{"draft 7, ngram 2..4", Options{BlockSize: 4, Speculation: Speculation{Method: "ngram", Draft: 7, NgramMin: 2, NgramMax: 4}}},
			} {
				t.Run(fmt.Sprintf("%v/%s/%s", kv, path, tc.name), func(t *testing.T) {
					opts := tc.opts
					opts.Path, opts.KVDType = path, kv
					if !opts.Speculation.On() {
						opts.Speculation = ngram
					}
					var got run
					if tc.name == "alone" {
						got = alone(t, m, opts, reqs)
					} else {
						got = generate(t, m, opts, reqs)
					}
					sameAsAlone(t, got, want)
					acc, drafted := 0, 0
					for _, r := range got.res {
						acc += r.AcceptedTokens
						drafted += r.DraftTokens
					}
					if acc == 0 || acc == drafted {
						t.Fatalf("drafted %d, accepted %d: both outcomes of verification must occur", drafted, acc)
					}
					if tc.name == "tight pool preempts" && got.st.Preemptions == 0 {
						t.Fatalf("a 30-block pool should force preemption (stats %+v)", got.st)
					}
				})
			}
		}
	}
}

// mixedGreedy is mixedRequests at temperature 0.
func mixedGreedy() []reqSpec {
	specs := mixedRequests()
	for i := range specs {
		specs[i].temperature = 0
	}
	return specs
}

// TestGoldenStories260KSpeculative: llama2.c's greedy stories260K
// sequence, token for token, with speculation on: alone and inside a
// batch of sampled prompts, on both paths, with a roomy pool and with
// one small enough to force preemption.
func TestGoldenStories260KSpeculative(t *testing.T) {
	m, tok := stories260K(t)
	want := testfixture.ReadIDs(t, filepath.Join(sharedDir(t), "models", "golden", "stories260K.greedy.ids"))
	for _, path := range []string{"fused", "naive"} {
		for _, tc := range []struct {
			name      string
			batched   bool
			numBlocks int
		}{{"alone", false, 0}, {"batched", true, 0}, {"batched, preempted", true, 24}} {
			reqs := []Request{{Prompt: []int{model.BOSID}, Steps: 256, Sampler: model.NewSampler(512, 0, 0.9, 1)}}
			if tc.batched {
				for i, p := range []string{"Once upon a time", "The cat sat", "Lily and Ben went to the park"} {
					ids, err := tok.Encode(p, true, false)
					if err != nil {
						t.Fatal(err)
					}
					reqs = append(reqs, Request{Prompt: ids, Steps: 150 + 50*i, Sampler: model.NewSampler(512, 1.0, 0.9, uint64(i+5))})
				}
			}
			e := newEngine(t, m, Options{Path: path, BlockSize: 16, NumBlocks: tc.numBlocks,
				Speculation: Speculation{Method: "ngram"}})
			res, st, err := e.Generate(reqs, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res[0].Tokens, want) {
				t.Fatalf("%s/%s: golden sequence changed with speculation:\n got %v\nwant %v", path, tc.name, res[0].Tokens, want)
			}
			if res[0].AcceptedTokens == 0 {
				t.Fatalf("%s/%s: no draft accepted on stories260K's loops (%+v)", path, tc.name, res[0])
			}
			if tc.numBlocks > 0 && st.Preemptions == 0 {
				t.Fatalf("%s/%s: no preemption with %d blocks", path, tc.name, tc.numBlocks)
			}
			t.Logf("%s/%s: %d verify steps, %d drafted, %d accepted, %d steps for %d tokens", path, tc.name,
				res[0].VerifySteps, res[0].DraftTokens, res[0].AcceptedTokens, st.Steps, len(res[0].Tokens))
		}
	}
}

// TestSpeculativeSampledSameAsOff: a sampled sequence with speculation
// produces the tokens, and the logits, that it produces with speculation
// off and alone, with the same seed: Sampler.Verify spends one coin per
// token kept, as plain decoding does, and every logit is the same bits.
// That holds whatever is drafted (the adaptive rule, or every match
// drafted at full length), batched, preempted or prefix-shared, and the
// drafts were really tested: some accepted, some rejected.
func TestSpeculativeSampledSameAsOff(t *testing.T) {
	m := tinyGQA(t)
	specs := append(repetitiveRequests(), mixedRequests()...)
	for i := range specs {
		specs[i].temperature, specs[i].seed = 0.8, uint64(50+i)
	}
	for _, path := range []string{"fused", "naive"} {
		want := alone(t, m, Options{Path: path}, specs)
		for _, spec := range []Speculation{cheapRows, {Method: "ngram", always: true}} {
			got := generate(t, m, Options{Path: path, BlockSize: 4, NumBlocks: 30, Speculation: spec}, specs)
			sameAsAlone(t, got, want)
			if got.st.Preemptions == 0 || got.st.AcceptedTokens == 0 || got.st.AcceptedTokens == got.st.DraftTokens {
				t.Fatalf("%s %+v: %+v: preemption, acceptance or rejection went untested", path, spec, got.st)
			}
			alone := alone(t, m, Options{Path: path, Speculation: spec}, specs)
			sameAsAlone(t, alone, want)
		}
	}
}

// TestSpeculativeGreedyMHA: the same on a multi-head (not grouped) model,
// whose prefixes are shared in two-block multiples: greedy tokens with
// speculation are those without, alone and batched with preemption, both
// paths.
func TestSpeculativeGreedyMHA(t *testing.T) {
	c := model.Config{Dim: 32, HiddenDim: 48, NLayers: 2, NHeads: 4, NKVHeads: 4, VocabSize: 64, SeqLen: 96,
		RopeTheta: 10000, NormEps: 1e-5, SharedClassifier: true}
	m := mustSynth(t, c, 21)
	reqs := append(repetitiveRequests(), mixedGreedy()...)
	for _, path := range []string{"fused", "naive"} {
		want := alone(t, m, Options{Path: path}, reqs)
		got := generate(t, m, Options{Path: path, BlockSize: 4, NumBlocks: 30, Speculation: cheapRows}, reqs)
		sameAsAlone(t, got, want)
		if got.st.Preemptions == 0 || got.st.AcceptedTokens == 0 {
			t.Fatalf("%s: %+v: preemption or acceptance went untested", path, got.st)
		}
	}
}
