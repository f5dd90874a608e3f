package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/checkpoint"
	"github.com/stride-lm/stride/model/llama2c"
	"github.com/stride-lm/stride/model/tokenizer"
)

// findShared locates the shared read-only fixtures: the value of
// STRIDE_SHARED when set, else ../shared next to the directory that holds
// go.mod (found by walking up from the working directory). On failure it
// returns "" and the reason.
func findShared() (dir, reason string) {
	if d := os.Getenv("STRIDE_SHARED"); d != "" {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d, ""
		}
		return "", fmt.Sprintf("STRIDE_SHARED=%q is not a directory", d)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Sprintf("cannot get the working directory: %v", err)
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			shared := filepath.Join(filepath.Dir(dir), "shared")
			if st, err := os.Stat(shared); err == nil && st.IsDir() {
				return shared, ""
			}
			return "", fmt.Sprintf("shared fixtures not found at %s (set STRIDE_SHARED)", shared)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Sprintf("no go.mod above %s, so ../shared cannot be located (set STRIDE_SHARED)", wd)
		}
		dir = parent
	}
}

// sharedDir returns the shared fixture directory. Without it the test
// skips with the reason printed, except under CI=true, where an oracle
// that did not run is a failure.
func sharedDir(t testing.TB) string {
	t.Helper()
	dir, reason := findShared()
	if dir == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: %s", reason)
		}
		t.Skipf("skipping: %s", reason)
	}
	return dir
}

// readGoldenIDs reads a llama2.c golden file: whitespace-separated ids.
func readGoldenIDs(t *testing.T, path string) []int {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int
	for _, f := range strings.Fields(string(raw)) {
		v, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		ids = append(ids, v)
	}
	return ids
}

// stories260K loads the shared stories260K checkpoint and its tokenizer.
func stories260K(t testing.TB) (*model.Model, *tokenizer.Tokenizer) {
	t.Helper()
	dir := sharedDir(t)
	m, err := checkpoint.Load(filepath.Join(dir, "models", "stories260K.bin"), model.LoadOptions{})
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
		m, err := model.Synthesize(c, 15)
		if err != nil {
			b.Fatal(err)
		}
		return m
	}
	b.Fatalf("unknown bench model %s", name)
	return nil
}
