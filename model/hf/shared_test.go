package hf

import (
	"os"
	"path/filepath"
	"testing"
)

// sharedFile returns the path of a fixture under the shared read-only
// directory (STRIDE_SHARED, else ../shared beside the module root),
// skipping the test with the reason when it is absent. Under CI=true an
// absent fixture fails the test instead: CI must run these oracles.
func sharedFile(t testing.TB, rel string) string {
	t.Helper()
	dir := os.Getenv("STRIDE_SHARED")
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		for d := wd; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				dir = filepath.Join(filepath.Dir(d), "shared")
				break
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("shared fixture %s is required under CI: %v", p, err)
		}
		t.Skipf("skipping: shared fixture %s not available (%v)", p, err)
	}
	return p
}
