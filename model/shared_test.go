package model

import (
	"os"
	"path/filepath"
	"testing"
)

// sharedDir returns the directory of the shared read-only fixtures: the
// value of STRIDE_SHARED when set, else ../shared next to the directory
// that holds go.mod (found by walking up from the test's working
// directory). The test is skipped, with the reason printed, when the
// directory cannot be found: the fixtures are never copied into the repo.
func sharedDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("STRIDE_SHARED"); d != "" {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d
		}
		t.Skipf("STRIDE_SHARED=%q is not a directory; skipping test that needs the shared fixtures", d)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Skipf("cannot get working directory (%v); skipping test that needs the shared fixtures", err)
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			shared := filepath.Join(filepath.Dir(dir), "shared")
			if st, err := os.Stat(shared); err == nil && st.IsDir() {
				return shared
			}
			t.Skipf("shared fixtures not found at %s (set STRIDE_SHARED); skipping", shared)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skipf("no go.mod above %s, so ../shared cannot be located (set STRIDE_SHARED); skipping", wd)
		}
		dir = parent
	}
}

// sharedFile returns the path of a fixture under the shared directory
// (e.g. "models/stories260K.bin"), skipping the test when it is absent.
func sharedFile(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(sharedDir(t), filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared fixture %s not available (%v); skipping", p, err)
	}
	return p
}
