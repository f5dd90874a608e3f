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

// TestExportV2: --format v2 writes a Q8_0 checkpoint that generates
// exactly what quantizing at load (--weights q8_0) generates (the int8
// matrices are the same), and re-exports byte for byte.
func TestExportV2(t *testing.T) {
	dir := t.TempDir()
	shape := []string{"--synthetic.hidden_dim", "192", "--synthetic.seq_len", "128"}
	out := filepath.Join(dir, "q8.bin")
	code, stdout, errs := cli(t, append([]string{"export", "--format", "v2", "--out", out}, shape...)...)
	if code != 0 || !strings.Contains(stdout, "version 2, Q8_0 group size 64") {
		t.Fatalf("export: exit %d %s %s", code, stdout, errs)
	}
	gen := []string{"generate", "--prompt", "abc", "--steps", "40", "--temperature", "0.9", "--seed", "3", "--output", "ids"}
	_, atLoad, _ := cli(t, append(append(gen, "--weights", "q8_0"), shape...)...)
	code, fromFile, errs := cli(t, append(gen, "--checkpoint", out)...)
	if code != 0 {
		t.Fatalf("generate from v2: exit %d %s", code, errs)
	}
	if atLoad == "" || atLoad != fromFile {
		t.Fatalf("v2 checkpoint generates differently from --weights q8_0:\n q8_0 at load %s\n v2 file      %s", atLoad, fromFile)
	}
	again := filepath.Join(dir, "again.bin")
	if code, _, errs := cli(t, "export", "--checkpoint", out, "--format", "v2", "--out", again); code != 0 {
		t.Fatalf("re-export: %s", errs)
	}
	a, _ := os.ReadFile(out)
	b, _ := os.ReadFile(again)
	if len(a) == 0 || string(a) != string(b) {
		t.Fatalf("v2 re-export differs (%d vs %d bytes)", len(a), len(b))
	}
	// Bad group sizes fail cleanly and leave nothing behind.
	for _, args := range [][]string{{"--format", "v2", "--group-size", "48"}, {"--group-size", "8"}, {"--format", "v2", "--group-size", "-2"}} {
		bad := filepath.Join(dir, "bad.bin")
		code, _, errs := cli(t, append(append([]string{"export", "--out", bad}, args...), shape...)...)
		if code != 1 || !strings.Contains(errs, "group") {
			t.Fatalf("%v: exit %d %s", args, code, errs)
		}
		if _, err := os.Stat(bad); err == nil {
			t.Fatalf("%v: a failed export left %s behind", args, bad)
		}
	}
}
