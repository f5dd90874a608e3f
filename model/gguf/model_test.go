package gguf

import (
	"slices"
	"testing"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/internal/formattest"
	"github.com/stride-lm/stride/model/llama2c"
	"github.com/stride-lm/stride/tensor/testfixture"
)

// goldenIDs are run.c's greedy ids for stories260K from BOS.
func goldenIDs(t *testing.T) []int {
	return testfixture.Ints(t, "models/golden/stories260K.greedy.ids")
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
	if got := formattest.Generate(t, gm, []int{model.BOSID}, 256, 0, 0.9, 1, stops); !slices.Equal(got, golden) {
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
		want := formattest.Generate(t, bm, prompt, 200, c.temp, c.topp, c.seed, nil)
		got := formattest.Generate(t, gm, prompt, 200, c.temp, c.topp, c.seed, stops)
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
