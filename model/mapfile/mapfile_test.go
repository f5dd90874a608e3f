package mapfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "f")
	if err := os.WriteFile(reg, []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, st, err := Open(reg, false)
	if err != nil || st.Size() != 3 {
		t.Fatalf("regular file: %v", err)
	}
	// The descriptor reads like any opened file (blocking mode).
	var b [3]byte
	if n, err := f.ReadAt(b[:], 0); n != 3 || string(b[:]) != "abc" {
		t.Fatalf("read %q: %v", b[:n], err)
	}
	f.Close()
	if _, _, err := Open(dir, false); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "a directory") {
		t.Fatalf("directory without dirOK: %v", err)
	}
	f, st, err = Open(dir, true)
	if err != nil || !st.IsDir() {
		t.Fatalf("directory with dirOK: %v", err)
	}
	f.Close()
	if _, _, err := Open(filepath.Join(dir, "none"), false); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("skipping the FIFO case: %v", err)
	}
	// Without O_NONBLOCK this open would wait for a writer forever.
	if _, _, err := Open(fifo, true); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "a named pipe") {
		t.Fatalf("FIFO: %v", err)
	}
}

// TestCatchFault: a read of a mapped page the file no longer covers is an
// error; ordinary errors and panics pass through.
func TestCatchFault(t *testing.T) {
	if !Supported {
		t.Skip("skipping: no mmap")
	}
	if err := CatchFault(func() error { return os.ErrClosed }); err != os.ErrClosed {
		t.Fatalf("plain error: %v", err)
	}
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("recovered %v, want the original panic", r)
			}
		}()
		CatchFault(func() error { panic("boom") })
	}()
	path := filepath.Join(t.TempDir(), "m")
	if err := os.WriteFile(path, make([]byte, 3*os.Getpagesize()), 0o644); err != nil {
		t.Fatal(err)
	}
	f, st, err := Open(path, false)
	if err != nil {
		t.Fatal(err)
	}
	data, err := Map(f, st.Size())
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer Unmap(data)
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	var sum byte
	err = CatchFault(func() error {
		for _, b := range data {
			sum += b
		}
		return nil
	})
	var fe *FaultError
	if !errors.As(err, &fe) || fe.Addr == 0 {
		t.Fatalf("got %v (sum %d), want a FaultError", err, sum)
	}
	t.Log(err)
}
