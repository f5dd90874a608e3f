// Package formattest holds the test helpers the checkpoint format packages
// (model/gguf, model/hf, ...) share to check a loaded model end to end: a
// generation through model/engine, the code path `infer generate` runs,
// to compare with run.c's golden ids or with the same model loaded from
// another format. It is imported by tests only.
package formattest

import (
	"testing"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/engine"
)

// Generate runs one request through a fresh engine: steps tokens after
// prompt, sampled at temperature temp with top-p topp and seed (temp 0 is
// greedy), stopping early at any of stops. It returns the tokens
// generated and fails t on any error.
func Generate(t testing.TB, m *model.Model, prompt []int, steps int, temp, topp float32, seed uint64, stops []int) []int {
	t.Helper()
	e, err := engine.New(m, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	res, _, err := e.Generate([]engine.Request{{Prompt: prompt, Steps: steps,
		Sampler: model.NewSampler(m.Config.VocabSize, temp, topp, seed), StopTokens: stops}}, nil)
	if err != nil || res[0].Err != nil {
		t.Fatal(err, res[0].Err)
	}
	return res[0].Tokens
}
