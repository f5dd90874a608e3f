//go:build linux || darwin

package main

import (
	"errors"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
)

// faultOf recognises the panic a fault on a truncated mapping raises under
// SetPanicOnFault, and nothing else: runContext reports the first as one
// "memory fault ... mapped file" line with exit status 1, any other panic
// as an internal error.
func TestFaultOfTruncatedMapping(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m")
	size := 2 * os.Getpagesize()
	if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	f.Close()
	if err != nil {
		t.Skipf("skipping: mmap: %v", err)
	}
	defer syscall.Munmap(data)
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	var r any
	func() {
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() { r = recover() }()
		faultSink += data[size-1]
	}()
	fe := faultOf(r)
	if fe == nil || !strings.Contains(fe.Error(), "mapped file") || strings.Contains(fe.Error(), "\n") {
		t.Fatalf("faultOf(%v) = %v, want a one-line mapped-file fault", r, fe)
	}
	for _, other := range []any{"boom", errors.New("boom"), nil} {
		if fe := faultOf(other); fe != nil {
			t.Errorf("faultOf(%v) = %v, want nil", other, fe)
		}
	}
}

// faultSink keeps the test's read of the mapping from being optimised away.
var faultSink byte
