package gguf

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/llama2c"
)

func goldenIDs(t *testing.T) []int {
	raw, err := os.ReadFile(sharedFile(t, "models/golden/stories260K.greedy.ids"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []int
	for _, f := range strings.Fields(string(raw)) {
		v, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, v)
	}
	return ids
}

// generate runs one request through the engine.
func generate(t *testing.T, m *model.Model, prompt []int, steps int, temp, topp float32, seed uint64, stops []int) []int {
	t.Helper()
	e, err := model.NewEngine(m, model.EngineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	res, _, err := e.Generate([]model.Request{{Prompt: prompt, Steps: steps,
		Sampler: model.NewSampler(m.Config.VocabSize, temp, topp, seed), StopTokens: stops}}, nil)
	if err != nil || res[0].Err != nil {
		t.Fatal(err, res[0].Err)
	}
	return res[0].Tokens
}

// The F32 GGUF generates run.c's golden ids, and the same ids as the
// llama2.c file with a prompt and with run.c's sampler (temperature,
// top-p, seed).
func TestGGUFGeneratesLikeLlama2c(t *testing.T) {
	golden := goldenIDs(t)
	s, err := OpenSource(sharedFile(t, "models/gguf/stories260K-f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	stops := s.StopTokens()
	gm, err := model.FromSource(s, model.LoadOptions{AsStored: true})
	if err != nil {
		t.Fatal(err)
	}
	defer gm.Close()
	bsrc, err := llama2c.Open(sharedFile(t, "models/stories260K.bin"), model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bm, err := model.FromSource(bsrc, model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer bm.Close()
	tok, err := llama2c.LoadTokenizer(sharedFile(t, "models/tok512.bin"), 512)
	if err != nil {
		t.Fatal(err)
	}
	if got := generate(t, gm, []int{model.BOSID}, 256, 0, 0.9, 1, stops); !slices.Equal(got, golden) {
		t.Errorf("greedy from BOS:\n got %v\nwant %v", got[:min(len(got), 20)], golden[:20])
	}
	prompt, err := tok.Encode("Once upon a time, a little girl", true, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name       string
		temp, topp float32
		seed       uint64
	}{{"greedy with prompt", 0, 0.9, 1}, {"sampled", 1.0, 0.9, 42}, {"sampled hot", 1.3, 0.8, 7}} {
		want := generate(t, bm, prompt, 200, c.temp, c.topp, c.seed, nil)
		got := generate(t, gm, prompt, 200, c.temp, c.topp, c.seed, stops)
		// The .bin stops at BOS only; the GGUF also at EOS (2). Up to the
		// first stop they must agree id for id.
		cut := len(want)
		if i := slices.Index(want, 2); i >= 0 {
			cut = i
		}
		if len(got) != cut || !slices.Equal(got, want[:cut]) {
			t.Errorf("%s: GGUF %d ids, .bin %d (cut %d); first difference at %d", c.name, len(got), len(want), cut, firstDiff(got, want))
		}
	}
}

func firstDiff(a, b []int) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
