// Package testfixture locates the read-only fixtures that sit beside every
// checkout in ../shared (checkpoints, tokenizers, recorded reference
// outputs) for the tests of any package. The fixtures are never copied
// into the repository, so a test that needs them cannot always run; this
// package decides what their absence means:
//
//   - outside CI the test is skipped, with the reason printed, so a fresh
//     clone's `go test ./...` passes;
//   - under CI (the environment variable CI set to true, as CI services
//     do) the test fails, so a green CI run proves that the oracles ran.
//
// It also holds what the tests of several packages check against those
// fixtures and against each other, so that each is written once: ReadIDs
// reads a recorded token-id file, SameTensor compares two tensors bit for
// bit, TopPDist is the float64 reference of run.c's sampling distribution,
// and CheckCorpus and CorpusEntry keep committed fuzz seed corpora
// (testdata/fuzz) equal to the seeds a test generates.
//
// It imports only the standard library, so every package's tests (tensor
// and everything above it) can import it without an import cycle; it
// sits under tensor/ because the top-level layout is fixed and tensor is
// the lowest package.
package testfixture

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// EnvDir is the environment variable that points at the shared fixture
// directory when it is not ../shared beside the checkout.
const EnvDir = "STRIDE_SHARED"

// InCI reports whether the tests run under CI: the environment variable
// CI parses as true ("true", "1", ...).
func InCI() bool {
	b, err := strconv.ParseBool(os.Getenv("CI"))
	return err == nil && b
}

// Locate finds the shared fixture directory: $STRIDE_SHARED when set,
// else ../shared beside the directory that holds go.mod (found by walking
// up from the working directory, which `go test` sets to the package's
// folder). When it is not there it returns "" and the reason.
func Locate() (dir, reason string) {
	if d := os.Getenv(EnvDir); d != "" {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d, ""
		}
		return "", fmt.Sprintf("%s=%q is not a directory", EnvDir, d)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Sprintf("cannot get the working directory: %v", err)
	}
	for d := wd; ; {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			shared := filepath.Join(filepath.Dir(d), "shared")
			if st, err := os.Stat(shared); err == nil && st.IsDir() {
				return shared, ""
			}
			return "", fmt.Sprintf("shared fixtures not found at %s (set %s)", shared, EnvDir)
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Sprintf("no go.mod above %s, so ../shared cannot be located (set %s)", wd, EnvDir)
		}
		d = parent
	}
}

// Dir returns the shared fixture directory. When it is missing the test
// is skipped with the reason, or fails when InCI.
func Dir(t testing.TB) string {
	t.Helper()
	dir, reason := Locate()
	if dir == "" {
		missing(t, reason)
	}
	return dir
}

// File returns the path of one fixture under the shared directory, rel
// in slash form ("models/stories260K.bin"). When it is missing the test
// is skipped with the reason, or fails when InCI.
func File(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(Dir(t), filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		missing(t, fmt.Sprintf("shared fixture %s is not available (%v)", p, err))
	}
	return p
}

// missing skips t, or fails it under CI, naming why.
func missing(t testing.TB, reason string) {
	t.Helper()
	if InCI() {
		t.Fatalf("CI=true but a fixture this test needs is missing: %s", reason)
	}
	t.Skipf("skipping: %s", reason)
}
