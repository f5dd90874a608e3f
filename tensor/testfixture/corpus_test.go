package testfixture

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The format is Go's own: a file written by `go test -fuzz` for a
// func(*testing.T, []byte, string, uint16) target reads like this.
func TestCorpusEntryFormat(t *testing.T) {
	got := string(CorpusEntry([]byte("GGUF\x03\x00"), "a \"b\"\n", uint16(5), true))
	want := "go test fuzz v1\n[]byte(\"GGUF\\x03\\x00\")\nstring(\"a \\\"b\\\"\\n\")\nuint16(5)\nbool(true)\n"
	if got != want {
		t.Fatalf("CorpusEntry =\n%s\nwant\n%s", got, want)
	}
}

// errRecorder records Errorf instead of failing the test.
type errRecorder struct {
	testing.TB
	errs []string
}

func (r *errRecorder) Helper() {}
func (r *errRecorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, format)
}

func TestCheckCorpusWritesThenMatches(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "FuzzX")
	want := map[string][]byte{"a": CorpusEntry([]byte("x")), "b": CorpusEntry([]byte("y"))}

	t.Setenv(EnvWriteCorpus, "")
	r := &errRecorder{TB: t}
	CheckCorpus(r, dir, want, "TestX")
	if len(r.errs) != 2 {
		t.Fatalf("missing corpus: %d errors, want 2", len(r.errs))
	}

	t.Setenv(EnvWriteCorpus, "1")
	r = &errRecorder{TB: t}
	CheckCorpus(r, dir, want, "TestX")
	if len(r.errs) != 0 {
		t.Fatalf("after writing: %v", r.errs)
	}

	t.Setenv(EnvWriteCorpus, "")
	if err := os.WriteFile(filepath.Join(dir, "b"), CorpusEntry([]byte("z")), 0o644); err != nil {
		t.Fatal(err)
	}
	r = &errRecorder{TB: t}
	CheckCorpus(r, dir, want, "TestX")
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "missing or stale") {
		t.Fatalf("stale seed: %v", r.errs)
	}
}
