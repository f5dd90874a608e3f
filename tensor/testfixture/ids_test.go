package testfixture

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReadIDs: ids separated by any whitespace are read in order; a
// non-number or a missing file fails, naming the file or the error.
func TestReadIDs(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.ids")
	bad := filepath.Join(dir, "bad.ids")
	if err := os.WriteFile(good, []byte("1 259\n\t30  7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("1 x2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := ReadIDs(t, good), []int{1, 259, 30, 7}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if r := call(t, func(tb testing.TB) { ReadIDs(tb, bad) }); !r.failed || !strings.Contains(r.msg, bad) {
		t.Fatalf("a non-number: failed %v, %q", r.failed, r.msg)
	}
	if r := call(t, func(tb testing.TB) { ReadIDs(tb, filepath.Join(dir, "absent.ids")) }); !r.failed {
		t.Fatal("a missing file must fail the test")
	}
}
