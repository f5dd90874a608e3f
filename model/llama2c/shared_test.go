package llama2c

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
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

// sharedDir returns the shared fixture directory or skips the test, with
// the reason printed: the fixtures are never copied into the repo.
func sharedDir(t testing.TB) string {
	t.Helper()
	dir, reason := findShared()
	if dir == "" {
		t.Skipf("skipping: %s", reason)
	}
	return dir
}

// sharedFile returns the path of a fixture under the shared directory
// (e.g. "models/stories260K.bin"), skipping the test when it is absent.
func sharedFile(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(sharedDir(t), filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		t.Skipf("skipping: shared fixture %s not available (%v)", p, err)
	}
	return p
}
