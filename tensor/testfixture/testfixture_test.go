package testfixture

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that records Skip and Fatal instead of ending
// the goroutine, so the decision itself can be checked.
type recorder struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (r *recorder) Helper() {}
func (r *recorder) Skipf(format string, args ...any) {
	r.skipped, r.msg = true, format
	panic(r)
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
	panic(r)
}
func (r *recorder) Fatal(args ...any) {
	r.failed, r.msg = true, fmt.Sprint(args...)
	panic(r)
}

func call(t *testing.T, f func(testing.TB)) *recorder {
	r := &recorder{TB: t}
	func() {
		defer func() {
			if p := recover(); p != nil && p != any(r) {
				panic(p)
			}
		}()
		f(r)
	}()
	return r
}

func TestMissingSkipsOutsideCIAndFailsUnderCI(t *testing.T) {
	t.Setenv(EnvDir, filepath.Join(t.TempDir(), "absent"))
	t.Setenv("CI", "")
	if r := call(t, func(tb testing.TB) { Dir(tb) }); !r.skipped || r.failed {
		t.Fatalf("outside CI: skipped %v failed %v", r.skipped, r.failed)
	}
	t.Setenv("CI", "true")
	if r := call(t, func(tb testing.TB) { Dir(tb) }); r.skipped || !r.failed {
		t.Fatalf("CI=true: skipped %v failed %v", r.skipped, r.failed)
	}
}

func TestFileFindsAndMisses(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "models"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "models", "m.bin"), []byte{1}, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvDir, dir)
	t.Setenv("CI", "true")
	var got string
	if r := call(t, func(tb testing.TB) { got = File(tb, "models/m.bin") }); r.failed || r.skipped {
		t.Fatalf("present fixture: %+v", r)
	}
	if got != filepath.Join(dir, "models", "m.bin") {
		t.Fatalf("File = %q", got)
	}
	if r := call(t, func(tb testing.TB) { File(tb, "models/none.bin") }); !r.failed {
		t.Fatalf("missing fixture under CI did not fail: %+v", r)
	}
}

func TestLocateWalksUpToGoMod(t *testing.T) {
	t.Setenv(EnvDir, "")
	dir, reason := Locate()
	// From tensor/testfixture the checkout root is two levels up; the
	// answer is ../shared beside it, or a reason naming that path.
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	want := filepath.Join(filepath.Dir(root), "shared")
	if dir != want && (dir != "" || !contains(reason, want)) {
		t.Fatalf("Locate = %q, %q; want %s", dir, reason, want)
	}
}

func contains(s, sub string) bool { return sub != "" && strings.Contains(s, sub) }
