package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// sharedModels returns ../shared/models beside the checkout (or
// $STRIDE_SHARED/models), skipping the test with the reason printed when
// the fixtures are absent: they are never copied into the repository.
func sharedModels(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("STRIDE_SHARED")
	if dir == "" {
		root, err := filepath.Abs(filepath.Join("..", ".."))
		if err != nil {
			t.Skipf("cannot locate the repository root: %v", err)
		}
		dir = filepath.Join(filepath.Dir(root), "shared")
	}
	models := filepath.Join(dir, "models")
	if st, err := os.Stat(models); err != nil || !st.IsDir() {
		t.Skipf("shared fixtures not found at %s (set STRIDE_SHARED); skipping", models)
	}
	return models
}

// cli runs the CLI in-process and returns its exit code and output.
func cli(t testing.TB, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}
