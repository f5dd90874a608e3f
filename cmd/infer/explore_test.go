package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeSite writes the files a built page has, each holding its name.
func fakeSite(t *testing.T, dir string) {
	t.Helper()
	for _, f := range siteFiles {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("content of "+f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// The page only loads when layout.wasm is served as application/wasm
// (instantiateStreaming checks it), whatever /etc/mime.types says.
func TestExploreServesMIMETypes(t *testing.T) {
	dir := t.TempDir()
	fakeSite(t, dir)
	srv := httptest.NewServer(siteHandler(dir))
	defer srv.Close()
	for path, want := range map[string]string{
		"/layout.wasm":  "application/wasm",
		"/app.js":       "text/javascript; charset=utf-8",
		"/wasm_exec.js": "text/javascript; charset=utf-8",
		"/style.css":    "text/css; charset=utf-8",
		"/":             "text/html; charset=utf-8",
	} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != want {
			t.Errorf("GET %s: %d %q, want 200 %q", path, resp.StatusCode, resp.Header.Get("Content-Type"), want)
		}
		name := strings.TrimPrefix(path, "/")
		if name == "" {
			name = "index.html"
		}
		if string(body) != "content of "+name {
			t.Errorf("GET %s: body %q", path, body)
		}
	}
	resp, err := http.Get(srv.URL + "/missing.js")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /missing.js: %d, want 404", resp.StatusCode)
	}
	resp, err = http.Post(srv.URL+"/index.html", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", resp.StatusCode)
	}
}

func TestExploreSiteBuilt(t *testing.T) {
	dir := t.TempDir()
	if siteBuilt(dir) {
		t.Fatal("an empty folder counts as built")
	}
	fakeSite(t, dir)
	if !siteBuilt(dir) {
		t.Fatal("a complete folder does not count as built")
	}
	os.Remove(filepath.Join(dir, "layout.wasm"))
	if siteBuilt(dir) {
		t.Fatal("a folder without layout.wasm counts as built")
	}
}

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

func TestExploreCheckoutRoot(t *testing.T) {
	root := checkoutRoot()
	want, _ := filepath.Abs(filepath.Join("..", ".."))
	if root != want {
		t.Errorf("checkoutRoot() = %q, want %q", root, want)
	}
}

// Ctrl-C (a cancelled context) stops the server and is the interrupt
// status, like every other command.
func TestExploreServeStopsOnInterrupt(t *testing.T) {
	dir := t.TempDir()
	fakeSite(t, dir)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveSite(ctx, ln, dir) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/layout.wasm")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel()
	select {
	case err := <-done:
		if err != context.Canceled {
			t.Errorf("serveSite returned %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("serveSite did not stop after the interrupt")
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
	if _, err := os.Stat(filepath.Join(dir, buildMarker)); err == nil {
		t.Error("the refused folder got a marker")
	}

	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "notes.txt"), []byte("x"), 0o644)
	if err := claimBuildDir(other); err == nil || !strings.Contains(err.Error(), "notes.txt") {
		t.Errorf("a folder with notes.txt: %v", err)
	}
	// A new folder, and then one explore built before, are claimed; the
	// same folder with a file of the user's added is refused again.
	fresh := filepath.Join(t.TempDir(), "new", "dist")
	if err := claimBuildDir(fresh); err != nil {
		t.Fatalf("a new folder: %v", err)
	}
	fakeSite(t, fresh)
	if err := claimBuildDir(fresh); err != nil {
		t.Errorf("a folder explore built: %v", err)
	}
	os.WriteFile(filepath.Join(fresh, "keep.md"), []byte("x"), 0o644)
	if err := claimBuildDir(fresh); err == nil || !strings.Contains(err.Error(), "keep.md") {
		t.Errorf("a built folder with keep.md added: %v", err)
	}
}

// Only the page's own files are served: not another file in the folder,
// not a listing, not a symlink (even to a page file's name).
func TestExploreServesOnlyPageFiles(t *testing.T) {
	dir := t.TempDir()
	fakeSite(t, dir)
	outside := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(outside, []byte("secret"), 0o644)
	os.WriteFile(filepath.Join(dir, "private.txt"), []byte("secret"), 0o644)
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "sub", "index.html"), []byte("secret"), 0o644)
	os.Remove(filepath.Join(dir, "app.js"))
	if err := os.Symlink(outside, filepath.Join(dir, "app.js")); err != nil {
		t.Fatal(err)
	}
	os.Symlink(outside, filepath.Join(dir, "link"))
	srv := httptest.NewServer(siteHandler(dir))
	defer srv.Close()
	for _, path := range []string{"/private.txt", "/sub/", "/sub/index.html", "/sub", "/app.js", "/link", "/..%2fsecret", "/.stride-explore", "/./"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || strings.Contains(string(body), "secret") {
			t.Errorf("GET %s: %d %.60q, want 404", path, resp.StatusCode, body)
		}
	}
	resp, err := http.Get(srv.URL + "/style.css")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("GET /style.css: %d, want 200", resp.StatusCode)
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
