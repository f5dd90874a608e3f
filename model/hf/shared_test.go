package hf

import (
	"testing"

	"github.com/stride-lm/stride/tensor/testfixture"
)

// sharedFile returns one shared fixture's path (rel in slash form),
// skipping the test when it is absent, or failing it under CI=true.
func sharedFile(t testing.TB, rel string) string {
	t.Helper()
	return testfixture.File(t, rel)
}
