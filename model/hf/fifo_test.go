//go:build unix

package hf

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stride-lm/stride/model"
)

// A FIFO in place of a file of the directory is refused at once (no
// open(2) that waits for a writer).
func TestFIFOInDirectory(t *testing.T) {
	for _, name := range []string{WeightsFile, ConfigFile, GenerationConfigFile} {
		dir, _ := writeSynth(t, qwen2Spec)
		p := filepath.Join(dir, name)
		os.Remove(p)
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Skipf("no FIFOs here: %v", err)
		}
		_, err := Open(dir, model.LoadOptions{}, Options{})
		if err == nil || !strings.Contains(err.Error(), "not a regular file (a named pipe)") || !strings.Contains(err.Error(), name) {
			t.Errorf("%s as a FIFO: %v", name, err)
		}
	}
}
