package model

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/stride-lm/stride/tensor"
)

// The accuracy report: how far the reduced-precision weights (BF16, F16,
// Q8_0) and KV caches (F16, BF16) move the logits from float32, on
// stories260K and on synthetic MHA and GQA models. Run
//
//	go test ./model -run TestAccuracy -v
//
// to print the table (docs/readme/weights.md holds a copy).
//
// The comparison is teacher-forced: the float32 model generates a greedy
// run (greedyRun, which keeps the logits of every position), and every
// variant is then fed exactly those tokens, position by position, so
// one early disagreement does not derail the rest of the run. At each
// position we compare the whole logit vector (max |Δlogit|) and the argmax
// (agreement = the fraction of positions whose greedy token is the same).

func argmaxOf(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

// accuracy is one variant's distance from the float32 logits.
type accuracy struct {
	maxAbs, meanAbs float64
	agree, n        int
}

func (a accuracy) frac() float64 { return float64(a.agree) / float64(a.n) }

func compareLogits(ref, got [][]float32) accuracy {
	var a accuracy
	var sum float64
	var cnt int
	for p := range ref {
		for i, r := range ref[p] {
			d := math.Abs(float64(got[p][i]) - float64(r))
			a.maxAbs = max(a.maxAbs, d)
			sum += d
			cnt++
		}
		if argmaxOf(ref[p]) == argmaxOf(got[p]) {
			a.agree++
		}
		a.n++
	}
	a.meanAbs = sum / float64(cnt)
	return a
}

// accuracyModel is a model under test and how to make its reduced-weight
// variants.
type accuracyModel struct {
	name string
	f32  *Model
	// withWeights returns the same model with its matrices stored in dt.
	withWeights func(t *testing.T, dt tensor.DType) *Model
}

// bounds are the limits a variant must meet on a model: they are about
// 3× the measured values (see docs/readme/weights.md), so they catch a
// regression of the conversion or the kernels, not noise.
type bounds struct {
	maxAbs   float64
	minAgree float64
}

func TestAccuracy(t *testing.T) {
	steps := 256
	if testing.Short() {
		steps = 64
		t.Logf("-short: %d teacher-forced positions instead of 256", steps)
	}
	synth := func(name string, c Config, seed uint64) accuracyModel {
		return accuracyModel{name: name, f32: mustSynth(t, c, seed), withWeights: func(t *testing.T, dt tensor.DType) *Model {
			c := c
			c.WeightDType = dt
			return mustSynth(t, c, seed)
		}}
	}
	base := Config{Dim: 64, HiddenDim: 172, NLayers: 4, NHeads: 8, VocabSize: 512, SeqLen: 256,
		RopeTheta: 10000, NormEps: 1e-5, SharedClassifier: true}
	mha, gqa := base, base
	mha.NKVHeads, gqa.NKVHeads = 8, 2
	models := []accuracyModel{synth("synthetic MHA", mha, 34), synth("synthetic GQA", gqa, 32)}
	if dir, reason := findShared(); dir == "" {
		t.Logf("stories260K skipped: %s", reason)
	} else if p := filepath.Join(dir, "models", "stories260K.bin"); !fileExists(p) {
		t.Logf("stories260K skipped: %s not found", p)
	} else {
		models = append([]accuracyModel{{name: "stories260K", f32: mustLoad(t, p, LoadOptions{}),
			withWeights: func(t *testing.T, dt tensor.DType) *Model { return mustLoad(t, p, LoadOptions{WeightDType: dt}) }}}, models...)
	}
	// About 3× the values measured (the table in docs/readme/weights.md;
	// each model's largest |logit| is printed for scale). Agreement: at
	// most 1 position in 20 may flip its argmax (measured: at most 7 of
	// 256, on the synthetic models, whose random weights leave near-ties).
	limits := map[string]map[string]bounds{
		"stories260K": {"weights bf16": {0.35, 0.95}, "weights f16": {0.035, 0.95}, "weights q8_0": {0.6, 0.95},
			"kv f16": {0.07, 0.95}, "kv bf16": {0.6, 0.95}},
		"synthetic MHA": {"weights bf16": {0.09, 0.95}, "weights f16": {0.011, 0.95}, "weights q8_0": {0.19, 0.95},
			"kv f16": {0.0045, 0.95}, "kv bf16": {0.035, 0.95}},
		"synthetic GQA": {"weights bf16": {0.09, 0.95}, "weights f16": {0.011, 0.95}, "weights q8_0": {0.19, 0.95},
			"kv f16": {0.0045, 0.95}, "kv bf16": {0.035, 0.95}},
	}
	opts := stepOpts{blockSize: 16, numBlocks: (steps + 15) / 16}
	t.Logf("%-14s %-13s %14s %15s %12s", "model", "variant", "max |Δlogit|", "mean |Δlogit|", "agreement")
	for _, am := range models {
		c := am.f32.Config
		n := min(steps, c.SeqLen)
		// The float32 greedy run, capturing its logits.
		ids, ref := greedyRun(t, am.f32, opts, n)
		if len(ref) < n/2 {
			t.Fatalf("%s: the float32 greedy run stopped at BOS after %d of %d positions: too few to compare", am.name, len(ref), n)
		}
		fed := append([]int{BOSID}, ids...)[:len(ref)]
		var scale float64
		for _, lg := range ref {
			for _, v := range lg {
				scale = max(scale, math.Abs(float64(v)))
			}
		}
		t.Logf("%-14s %-13s largest |logit| %.3g over %d positions", am.name, "f32", scale, len(ref))
		// Teacher forcing reproduces the free-running logits bit for bit.
		if got := forcedLogits(t, am.f32, opts, fed); compareLogits(ref, got).maxAbs != 0 {
			t.Fatalf("%s: the teacher-forced run differs from the greedy run", am.name)
		}
		variants := []struct {
			name string
			m    *Model
			opts stepOpts
		}{
			{"weights bf16", am.withWeights(t, tensor.BF16), opts},
			{"weights f16", am.withWeights(t, tensor.F16), opts},
			{"weights q8_0", quantizedCopy(t, am.f32, Q8GroupSize(c, 64)), opts},
		}
		for _, kv := range []tensor.DType{tensor.F16, tensor.BF16} {
			o := opts
			o.kvDType = kv
			variants = append(variants, struct {
				name string
				m    *Model
				opts stepOpts
			}{map[tensor.DType]string{tensor.F16: "kv f16", tensor.BF16: "kv bf16"}[kv], am.f32, o})
		}
		got := map[string]accuracy{}
		for _, v := range variants {
			a := compareLogits(ref, forcedLogits(t, v.m, v.opts, fed))
			got[v.name] = a
			t.Logf("%-14s %-13s %14.4g %15.3g %7d/%d (%.1f%%)", am.name, v.name, a.maxAbs, a.meanAbs, a.agree, a.n, 100*a.frac())
			b := limits[am.name][v.name]
			if a.maxAbs > b.maxAbs || a.frac() < b.minAgree {
				t.Errorf("%s %s: max |Δlogit| %.4g (limit %g), agreement %.3f (limit %g)", am.name, v.name, a.maxAbs, b.maxAbs, a.frac(), b.minAgree)
			}
			if a.maxAbs == 0 {
				t.Errorf("%s %s: identical to float32 — the variant did not take effect", am.name, v.name)
			}
		}
		// F16 keeps 3 more mantissa bits than BF16 (11 vs 8): its rounding
		// error is 8× smaller, for weights and for the cache alike.
		for _, pair := range [][2]string{{"weights f16", "weights bf16"}, {"kv f16", "kv bf16"}} {
			if got[pair[0]].maxAbs >= got[pair[1]].maxAbs {
				t.Errorf("%s: %s (max |Δ| %.4g) should be closer to float32 than %s (%.4g)", am.name,
					pair[0], got[pair[0]].maxAbs, pair[1], got[pair[1]].maxAbs)
			}
		}
	}
}
