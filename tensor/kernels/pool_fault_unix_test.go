//go:build linux || darwin

package kernels

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"syscall"
	"testing"
	"unsafe"
)

// A matmul whose weights are a mapped file truncated under the mapping
// faults in the workers that read the lost pages. The workers turn the
// fault into a panic (SetPanicOnFault is per goroutine) and the pool
// re-raises it in the caller, which can recover it as an error; without
// that the runtime kills the process with a stack trace. The caller's own
// part of the rows stays on intact pages, so only workers fault.
func TestPoolWorkerFaultReachesCaller(t *testing.T) {
	const rows, cols = 256, 1024 // one 4 KiB page per row
	page := os.Getpagesize()
	if page != 4096 || runtime.NumCPU() < 2 {
		t.Skip("skipping: needs 4 KiB pages and two CPUs")
	}
	path := filepath.Join(t.TempDir(), "w")
	if err := os.WriteFile(path, make([]byte, rows*cols*4), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, rows*cols*4, syscall.PROT_READ, syscall.MAP_SHARED)
	f.Close()
	if err != nil {
		t.Skipf("skipping: mmap: %v", err)
	}
	defer syscall.Munmap(data)
	w, err := NewF32(rows, cols, unsafe.Slice((*float32)(unsafe.Pointer(&data[0])), rows*cols))
	if err != nil {
		t.Fatal(err)
	}
	p := NewPool(4)
	defer p.Close()
	x, out := make([]float32, cols), make([]float32, rows)
	if err := MatMul(p, out, x, w, 1); err != nil { // intact: runs
		t.Fatal(err)
	}
	// Keep the first quarter of the rows (the caller's part of four).
	if err := os.Truncate(path, int64(rows/4*cols*4)); err != nil {
		t.Fatal(err)
	}
	var recovered any
	func() {
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() { recovered = recover() }()
		_ = MatMul(p, out, x, w, 1)
	}()
	re, ok := recovered.(runtime.Error)
	if !ok {
		t.Fatalf("recovered %v, want the workers' memory fault as a runtime error", recovered)
	}
	if a, ok := re.(interface{ Addr() uintptr }); !ok || a.Addr() < uintptr(unsafe.Pointer(&data[rows/4*cols*4])) {
		t.Fatalf("recovered %v: not a fault past the truncation", re)
	}
	t.Log(re)
}
