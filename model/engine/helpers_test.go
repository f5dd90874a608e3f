package engine

import (
	"path/filepath"
	"testing"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/checkpoint"
	"github.com/stride-lm/stride/model/llama2c"
	"github.com/stride-lm/stride/model/tokenizer"
	"github.com/stride-lm/stride/tensor/testfixture"
)

// findShared locates the shared fixtures (tensor/testfixture.Locate): the
// directory, or "" and why not.
func findShared() (dir, reason string) { return testfixture.Locate() }

// sharedDir returns the shared fixture directory, skipping the test with
// the reason when it is absent, or failing it under CI=true.
func sharedDir(t testing.TB) string {
	t.Helper()
	return testfixture.Dir(t)
}

// mustSynth is model.Synthesize(c, seed), failing t on error.
func mustSynth(t testing.TB, c model.Config, seed uint64) *model.Model {
	t.Helper()
	m, err := model.Synthesize(c, seed)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// loadCheckpoint opens the checkpoint at path and builds its model.
func loadCheckpoint(path string, opts model.LoadOptions) (*model.Model, error) {
	ck, err := checkpoint.Open(path, checkpoint.Options{Load: opts})
	if err != nil {
		return nil, err
	}
	m, err := ck.Load()
	if err != nil {
		ck.Close()
	}
	return m, err
}

// stories260K loads the shared stories260K checkpoint and its tokenizer.
func stories260K(t testing.TB) (*model.Model, *tokenizer.Tokenizer) {
	t.Helper()
	dir := sharedDir(t)
	m, err := loadCheckpoint(filepath.Join(dir, "models", "stories260K.bin"), model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	tok, err := llama2c.LoadTokenizer(filepath.Join(dir, "models", "tok512.bin"), m.Config.VocabSize)
	if err != nil {
		t.Fatal(err)
	}
	return m, tok
}

// benchModel is stories260K (shared) or a synthetic model of stories15M's
// shape.
func benchModel(b *testing.B, name string) *model.Model {
	b.Helper()
	switch name {
	case "stories260K":
		m, _ := stories260K(b)
		return m
	case "stories15M-shape":
		c := model.Config{Dim: 288, HiddenDim: 768, NLayers: 6, NHeads: 6, NKVHeads: 6, VocabSize: 32000, SeqLen: 256,
			RopeTheta: 10000, NormEps: 1e-5, SharedClassifier: true}
		return mustSynth(b, c, 15)
	}
	b.Fatalf("unknown bench model %s", name)
	return nil
}
