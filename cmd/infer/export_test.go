package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExportRoundTrip: the synthetic model exported and loaded back as a
// checkpoint generates exactly the same ids as the synthetic model itself.
func TestExportRoundTrip(t *testing.T) {
	out := filepath.Join(t.TempDir(), "tiny.bin")
	code, stdout, errs := cli(t, "export", "--out", out, "--synthetic.seq_len", "128")
	if code != 0 || !strings.Contains(stdout, "wrote") {
		t.Fatalf("export: exit %d %s %s", code, stdout, errs)
	}
	gen := []string{"generate", "--prompt", "abc", "--steps", "40", "--temperature", "0.9", "--seed", "3", "--output", "ids"}
	_, direct, _ := cli(t, append(gen, "--synthetic.seq_len", "128")...)
	code, loaded, errs := cli(t, append(gen, "--checkpoint", out)...)
	if code != 0 {
		t.Fatalf("generate from export: exit %d %s", code, errs)
	}
	if direct == "" || direct != loaded {
		t.Fatalf("exported model generates differently:\n synthetic %s\n exported  %s", direct, loaded)
	}
	// A second export of the loaded checkpoint is byte-identical.
	out2 := filepath.Join(t.TempDir(), "again.bin")
	if code, _, errs := cli(t, "export", "--checkpoint", out, "--out", out2); code != 0 {
		t.Fatalf("re-export: %s", errs)
	}
	a, _ := os.ReadFile(out)
	b, _ := os.ReadFile(out2)
	if len(a) == 0 || string(a) != string(b) {
		t.Fatalf("re-export differs (%d vs %d bytes)", len(a), len(b))
	}
}

func TestExportNeedsOut(t *testing.T) {
	code, _, errs := cli(t, "export")
	if code != 1 || !strings.Contains(errs, "--out") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	// An unwritable destination fails cleanly and leaves nothing behind.
	dir := filepath.Join(t.TempDir(), "missing", "x.bin")
	code, _, errs = cli(t, "export", "--out", dir)
	if code != 1 || !strings.Contains(errs, "export") {
		t.Fatalf("exit %d: %s", code, errs)
	}
}
