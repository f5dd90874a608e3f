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
