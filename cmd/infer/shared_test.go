package main

import (
	"bytes"
	"testing"

	"github.com/stride-lm/stride/tensor/testfixture"
)

// sharedModels returns the shared models directory (../shared/models, or
// $STRIDE_SHARED/models): skipped with the reason when absent, a failure
// under CI=true (see package testfixture).
func sharedModels(t testing.TB) string {
	t.Helper()
	return testfixture.File(t, "models")
}

// cli runs the CLI in-process and returns its exit code and output.
func cli(t testing.TB, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}
