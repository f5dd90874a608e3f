package engine

import (
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/tensor/testfixture"
)

// tinyVocab is a synthetic model over 8 tokens: small enough to
// enumerate every 3-token continuation (512 of them) and their exact
// probabilities.
func tinyVocab(t testing.TB) *model.Model {
	return mustSynth(t, model.Config{Dim: 16, HiddenDim: 32, NLayers: 2, NHeads: 2, NKVHeads: 1, VocabSize: 8, SeqLen: 32,
		RopeTheta: 10000, NormEps: 1e-5}, 5)
}

// nextDist is the distribution a sampler at (temperature, topp) draws
// the token after prefix from, in float64 from the model's logits
// (testfixture.TopPDist: the softmax of logits/temperature, cut to the
// top-p nucleus and renormalised as run.c's sample_topp does).
func nextDist(t *testing.T, e *Engine, prefix []int, temperature, topp float64) []float64 {
	t.Helper()
	var lg []float32
	e.opts.OnLogits = func(_, _ int, l []float32) { lg = append(lg[:0], l...) }
	defer func() { e.opts.OnLogits = nil }()
	if _, _, err := e.Generate([]Request{{Prompt: prefix, Steps: len(prefix), Sampler: model.NewSampler(e.m.Config.VocabSize, 0, 0, 1)}}, nil); err != nil {
		t.Fatal(err)
	}
	return testfixture.TopPDist(lg, temperature, topp)
}

// TestSpeculativeSamplingDistribution: at temperature > 0 the first three
// generated tokens of a prompt whose n-grams recur (so runs draft the
// second token and verify it, and sample the third from the verify
// step's bonus row when it is accepted) follow the model's own sampling distribution: over
// 12000 seeded runs per setting, batched, the counts of the 512 possible
// 3-token continuations pass a chi-square test at p = 0.001 against the
// exact probabilities, enumerated from the model's logits; and so do the
// counts of non-speculative runs with the same seeds, the control. The
// runs are seeded, so the test is deterministic.
func TestSpeculativeSamplingDistribution(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 48000 sampled runs")
	}
	m := tinyVocab(t)
	prompt := []int{model.BOSID, 2, 7, 2, 7, 2, 7, 2, 7, 2} // the model's own greedy loop
	const V, gen, runs = 8, 3, 12000
	for _, tc := range []struct{ temp, topp float64 }{{1, 0}, {0.8, 0.9}} {
		oracle := newEngine(t, m, Options{})
		exact := map[[gen]int]float64{}
		q0 := nextDist(t, oracle, prompt, tc.temp, tc.topp)
		for a := 0; a < V; a++ {
			if q0[a] == 0 {
				continue
			}
			q1 := nextDist(t, oracle, append(append([]int(nil), prompt...), a), tc.temp, tc.topp)
			for b := 0; b < V; b++ {
				if q1[b] == 0 {
					continue
				}
				q2 := nextDist(t, oracle, append(append([]int(nil), prompt...), a, b), tc.temp, tc.topp)
				for c := 0; c < V; c++ {
					if q2[c] > 0 {
						exact[[gen]int{a, b, c}] = q0[a] * q1[b] * q2[c]
					}
				}
			}
		}
		for _, spec := range []Speculation{{}, {Method: "ngram", always: true}} {
			e := newEngine(t, m, Options{BlockSize: 4, NumBlocks: 4096, Speculation: spec})
			reqs := make([]Request, runs)
			for i := range reqs {
				reqs[i] = Request{Prompt: prompt, Steps: len(prompt) + gen - 1,
					Sampler: model.NewSampler(V, float32(tc.temp), float32(tc.topp), uint64(7919*i+1))}
			}
			res, st, err := e.Generate(reqs, nil)
			if err != nil {
				t.Fatal(err)
			}
			counts := map[[gen]int]int{}
			short := 0
			for _, r := range res {
				g := r.Tokens[len(prompt)-1:]
				if len(g) < gen { // stopped at BOS (token 1)
					short++
					continue
				}
				counts[[gen]int{g[0], g[1], g[2]}]++
			}
			stat, df := chiSquareRuns(t, counts, short, exact, runs)
			crit := distuv.ChiSquared{K: float64(df)}.Quantile(0.999)
			t.Logf("T=%g topp=%g %s: drafted %d accepted %d; chi2 %.1f (df %d, critical %.1f)",
				tc.temp, tc.topp, spec.Method, st.DraftTokens, st.AcceptedTokens, stat, df, crit)
			if stat > crit {
				t.Errorf("T=%g topp=%g %s: chi-square %.1f > %.1f", tc.temp, tc.topp, spec.Method, stat, crit)
			}
			if spec.On() && (st.AcceptedTokens == 0 || st.AcceptedTokens == st.DraftTokens) {
				t.Fatalf("drafted %d, accepted %d: both outcomes must occur", st.DraftTokens, st.AcceptedTokens)
			}
		}
	}
}

// chiSquareRuns is the chi-square statistic of the observed 3-token
// continuations against the exact probabilities over n runs. A
// continuation through BOS ends the run early; those runs form one cell,
// whose probability is the mass of every exact sequence with BOS among
// its first two tokens (BOS third just makes a short run too). Cells
// expected below 5 are pooled.
func chiSquareRuns(t *testing.T, counts map[[3]int]int, short int, exact map[[3]int]float64, n int) (float64, int) {
	t.Helper()
	var shortP float64
	for k, p := range exact {
		if k[0] == model.BOSID || k[1] == model.BOSID || k[2] == model.BOSID {
			shortP += p
		}
	}
	var stat, poolE float64
	pooled, cells := 0, 0
	add := func(obs int, e float64) {
		if e < 5 {
			poolE += e
			pooled += obs
			return
		}
		stat += (float64(obs) - e) * (float64(obs) - e) / e
		cells++
	}
	for k, c := range counts {
		if _, ok := exact[k]; !ok {
			t.Fatalf("continuation %v has probability 0 but occurred %d times", k, c)
		}
	}
	for k, p := range exact {
		if k[0] == model.BOSID || k[1] == model.BOSID || k[2] == model.BOSID {
			continue
		}
		add(counts[k], p*float64(n))
	}
	add(short, shortP*float64(n))
	if poolE > 0 {
		stat += (float64(pooled) - poolE) * (float64(pooled) - poolE) / poolE
		cells++
	}
	return stat, cells - 1
}
