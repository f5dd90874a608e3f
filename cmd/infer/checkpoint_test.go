package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCheckpointNotAFile: --checkpoint naming a FIFO or a directory exits
// 1 at once with one line, instead of blocking in open(2) for a writer.
func TestCheckpointNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.bin")
	cases := map[string]string{dir: "is a directory"}
	if err := syscall.Mkfifo(fifo, 0o600); err == nil {
		cases[fifo] = "not a regular file (a named pipe)"
	} else {
		t.Logf("no FIFO case: %v", err)
	}
	junk := filepath.Join(dir, "junk.bin")
	if err := os.WriteFile(junk, []byte("not a checkpoint, whatever its name"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases[junk] = "invalid llama2.c legacy header"
	for path, want := range cases {
		done := make(chan struct{})
		var errOut string
		var code int
		go func() {
			defer close(done)
			_, errOut, code = runCLI(t, "generate", "--checkpoint", path, "--steps", "2")
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: generate still blocked after 20s", path)
		}
		line := strings.TrimSuffix(errOut, "\n")
		if code != 1 || !strings.HasPrefix(line, "infer: checkpoint "+path+": ") || !strings.Contains(line, want) ||
			strings.Contains(line, "\n") {
			t.Fatalf("%s: exit %d, stderr %q; want one line saying %q", path, code, errOut, want)
		}
	}
}
