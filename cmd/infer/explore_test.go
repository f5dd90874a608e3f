package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Outside a checkout, a --dir without a page is one clear error, not a
// build attempt or a server serving nothing.
func TestExploreMissingSiteOutsideCheckout(t *testing.T) {
	tmp := t.TempDir()
	t.Chdir(tmp)
	_, stderr, code := runCLI(t, "explore", "--dir", filepath.Join(tmp, "nothing"), "--addr", "127.0.0.1:0")
	if code != exitFailed || !strings.Contains(stderr, "no built page") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("exit %d, stderr %q; want 1 and one line naming the missing page", code, stderr)
	}
	_, stderr, code = runCLI(t, "explore", "--addr", "127.0.0.1:0")
	if code != exitFailed || !strings.Contains(stderr, "not inside a Stride checkout") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// A folder holding anything explore did not write is never built into:
// the user's own index.html survives, and the error names the file.
func TestExploreRefusesForeignFolder(t *testing.T) {
	dir := t.TempDir()
	mine := filepath.Join(dir, "index.html")
	if err := os.WriteFile(mine, []byte("the user's page"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI(t, "explore", "--dir", dir, "--rebuild", "--addr", "127.0.0.1:0")
	if code != exitFailed || !strings.Contains(stderr, "index.html, which explore did not write") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("exit %d, stderr %q; want 1 and one line naming index.html", code, stderr)
	}
	if b, _ := os.ReadFile(mine); string(b) != "the user's page" {
		t.Errorf("the user's index.html became %.40q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, ".stride-explore")); err == nil {
		t.Error("the refused folder got a marker")
	}

}

// An --addr without a host is refused before anything is built
// (web/explore's CheckAddr; its tests cover the policy).
func TestExploreAddr(t *testing.T) {
	_, stderr, code := runCLI(t, "explore", "--addr", "", "--dir", t.TempDir())
	if code != exitFailed || !strings.Contains(stderr, "want HOST:PORT") {
		t.Errorf("explore --addr '': exit %d, stderr %q", code, stderr)
	}
}
