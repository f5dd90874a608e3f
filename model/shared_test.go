package model

import (
	"testing"

	"github.com/stride-lm/stride/tensor/testfixture"
)

// sharedDir returns the shared fixture directory (../shared, or
// $STRIDE_SHARED): skipped with the reason when absent, a failure under
// CI=true (see package testfixture).
func sharedDir(t testing.TB) string {
	t.Helper()
	return testfixture.Dir(t)
}

// sharedFile returns the path of a fixture under the shared directory
// (e.g. "models/stories260K.bin"), skipped or failed as sharedDir.
func sharedFile(t testing.TB, rel string) string {
	t.Helper()
	return testfixture.File(t, rel)
}

// findShared locates the fixtures for a test that runs with or without
// them (it adds a stories260K case when they are present). It does not
// fail under CI: the golden tests that need the fixtures outright
// (sharedDir, sharedFile) already do.
func findShared() (dir, reason string) { return testfixture.Locate() }
