package tokenizer

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// findShared locates the shared read-only fixtures: the value of
// STRIDE_SHARED when set, else ../shared next to the directory that holds
// go.mod. On failure it returns "" and the reason.
func findShared() (dir, reason string) {
	if d := os.Getenv("STRIDE_SHARED"); d != "" {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d, ""
		}
		return "", fmt.Sprintf("STRIDE_SHARED=%q is not a directory", d)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Sprintf("cannot get the working directory: %v", err)
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			shared := filepath.Join(filepath.Dir(dir), "shared")
			if st, err := os.Stat(shared); err == nil && st.IsDir() {
				return shared, ""
			}
			return "", fmt.Sprintf("shared fixtures not found at %s (set STRIDE_SHARED)", shared)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Sprintf("no go.mod above %s, so ../shared cannot be located (set STRIDE_SHARED)", wd)
		}
		dir = parent
	}
}

// sharedFile returns the path of a fixture under the shared directory,
// skipping the test with the reason when it is absent, or failing it under
// CI=true, where the oracles must run.
func sharedFile(t testing.TB, rel string) string {
	t.Helper()
	dir, reason := findShared()
	p := ""
	if dir != "" {
		p = filepath.Join(dir, filepath.FromSlash(rel))
		if _, err := os.Stat(p); err != nil {
			reason = fmt.Sprintf("shared fixture %s not available (%v)", p, err)
		}
	}
	if reason != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but %s", reason)
		}
		t.Skipf("skipping: %s", reason)
	}
	return p
}

// readBin parses a llama2.c tokenizer.bin fixture. The real reader, with
// its validation, is llama2c.ReadTokenizer; this package cannot import it
// (llama2c imports tokenizer), and the fixtures are known good.
func readBin(t testing.TB, rel string, vocab int) *Tokenizer {
	t.Helper()
	b, err := os.ReadFile(sharedFile(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	maxLen := int(le.Uint32(b))
	off := 4
	var pieces []string
	var scores []float32
	for i := 0; i < vocab; i++ {
		scores = append(scores, math.Float32frombits(le.Uint32(b[off:])))
		n := int(le.Uint32(b[off+4:]))
		pieces = append(pieces, string(b[off+8:off+8+n]))
		off += 8 + n
	}
	if off != len(b) {
		t.Fatalf("%s: %d bytes left after %d pieces", rel, len(b)-off, vocab)
	}
	tk, err := NewLlama2c(pieces, scores, maxLen)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}
