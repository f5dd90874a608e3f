package llama2c

import (
	"github.com/stride-lm/stride/tensor/testfixture"
	"testing"
)

// findShared locates the shared fixtures (tensor/testfixture.Locate): the
// directory, or "" and why not.
func findShared() (dir, reason string) { return testfixture.Locate() }

// sharedFile returns one shared fixture's path (rel in slash form),
// skipping the test when it is absent, or failing it under CI=true.
func sharedFile(t testing.TB, rel string) string {
	t.Helper()
	return testfixture.File(t, rel)
}
