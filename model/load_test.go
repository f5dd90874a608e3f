package model

import (
	"errors"
	"testing"
)

// Package model's tests run llama2.c checkpoints (stories260K), but the
// format packages import model, so these internal tests cannot import
// them. The external test package installs the dispatcher here instead
// (load_ext_test.go: checkpoint.Open and Load), before any test runs.
var testLoad func(path string, opts LoadOptions) (*Model, error)

// SetTestLoad installs the checkpoint loader of the tests (exported for
// the model_test package only: this is a _test.go file).
func SetTestLoad(f func(path string, opts LoadOptions) (*Model, error)) { testLoad = f }

// Load loads a checkpoint through the installed loader.
func Load(path string, opts LoadOptions) (*Model, error) {
	if testLoad == nil {
		return nil, errors.New("no checkpoint loader installed (load_ext_test.go)")
	}
	return testLoad(path, opts)
}

func mustLoad(t testing.TB, path string, opts LoadOptions) *Model {
	t.Helper()
	m, err := Load(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}
