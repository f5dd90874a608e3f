package testfixture

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// EnvWriteCorpus is the environment variable that, set to 1, makes
// CheckCorpus write the seed files before it compares them.
const EnvWriteCorpus = "STRIDE_WRITE_FUZZ_CORPUS"

// CorpusEntry renders one fuzz input in the "go test fuzz v1" format of
// testdata/fuzz/<Target>/<name>: one Go literal per argument. It supports
// []byte, string, bool and the integer types, the arguments the fuzz
// targets here take.
func CorpusEntry(args ...any) []byte {
	var b strings.Builder
	b.WriteString("go test fuzz v1\n")
	for _, a := range args {
		switch v := a.(type) {
		case []byte:
			fmt.Fprintf(&b, "[]byte(%s)\n", strconv.Quote(string(v)))
		case string:
			fmt.Fprintf(&b, "string(%q)\n", v)
		default:
			fmt.Fprintf(&b, "%T(%v)\n", v, v)
		}
	}
	return []byte(b.String())
}

// CheckCorpus checks that the committed seed corpus dir
// (testdata/fuzz/<Target>) holds every file of want (name → contents, as
// CorpusEntry renders them) byte for byte, so the seeds a test generates
// and the ones `go test -fuzz` starts from cannot drift apart. With
// STRIDE_WRITE_FUZZ_CORPUS=1 it writes them first. test names the test to
// rerun in the message that says how to regenerate them.
func CheckCorpus(t testing.TB, dir string, want map[string][]byte, test string) {
	t.Helper()
	if os.Getenv(EnvWriteCorpus) == "1" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatalf("%v", err)
		}
		for name, b := range want {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatalf("%v", err)
			}
		}
	}
	for name, b := range want {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, b) {
			t.Errorf("seed %s in %s missing or stale (regenerate with %s=1 go test -run %s)", name, dir, EnvWriteCorpus, test)
		}
	}
}
