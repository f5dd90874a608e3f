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

// --addr must name a host, and only a loopback one without --public.
func TestExploreAddr(t *testing.T) {
	for addr, want := range map[string]string{
		"":               "want HOST:PORT",
		":8080":          "names no host",
		"8080":           "want HOST:PORT",
		"0.0.0.0:8080":   "add --public",
		"[::]:8080":      "add --public",
		"192.0.2.1:8080": "add --public",
		"example.com:80": "add --public",
	} {
		err := checkListenAddr(addr, false)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--addr %q: %v, want %q", addr, err, want)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:8080", "[::1]:0", "127.1.2.3:80"} {
		if err := checkListenAddr(addr, false); err != nil {
			t.Errorf("--addr %q: %v", addr, err)
		}
	}
	if err := checkListenAddr("0.0.0.0:8080", true); err != nil {
		t.Errorf("--addr 0.0.0.0:8080 --public: %v", err)
	}
	if err := checkListenAddr(":8080", true); err == nil {
		t.Error("--public must not make a missing host acceptable")
	}
	_, stderr, code := runCLI(t, "explore", "--addr", "", "--dir", t.TempDir())
	if code != exitFailed || !strings.Contains(stderr, "want HOST:PORT") {
		t.Errorf("explore --addr '': exit %d, stderr %q", code, stderr)
	}
}
