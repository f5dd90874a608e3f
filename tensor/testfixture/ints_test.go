package testfixture

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestIntsReadsAndRejects(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("ids", "1 365\n 2\t-4\n")
	write("bad", "1 x 2\n")
	t.Setenv(EnvDir, dir)
	t.Setenv("CI", "true")
	var got []int
	if r := call(t, func(tb testing.TB) { got = Ints(tb, "ids") }); r.failed || r.skipped {
		t.Fatalf("valid file: %+v", r)
	}
	if want := []int{1, 365, 2, -4}; !slices.Equal(got, want) {
		t.Fatalf("Ints = %v, want %v", got, want)
	}
	if r := call(t, func(tb testing.TB) { Ints(tb, "bad") }); !r.failed {
		t.Fatalf("a non-integer field did not fail: %+v", r)
	}
}
