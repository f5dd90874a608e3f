package explore

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
func TestHandlerMIMETypes(t *testing.T) {
	dir := t.TempDir()
	fakeSite(t, dir)
	srv := httptest.NewServer(Handler(dir))
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

func TestBuilt(t *testing.T) {
	dir := t.TempDir()
	if Built(dir) {
		t.Fatal("an empty folder counts as built")
	}
	fakeSite(t, dir)
	if !Built(dir) {
		t.Fatal("a complete folder does not count as built")
	}
	os.Remove(filepath.Join(dir, "layout.wasm"))
	if Built(dir) {
		t.Fatal("a folder without layout.wasm counts as built")
	}
}

func TestCheckoutRoot(t *testing.T) {
	root := CheckoutRoot()
	want, _ := filepath.Abs(filepath.Join("..", ".."))
	if root != want {
		t.Errorf("CheckoutRoot() = %q, want %q", root, want)
	}
}

// Ctrl-C (a cancelled context) stops the server and is the interrupt
// status, like every other command.
func TestServeStopsOnInterrupt(t *testing.T) {
	dir := t.TempDir()
	fakeSite(t, dir)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, dir) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/layout.wasm")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel()
	select {
	case err := <-done:
		if err != context.Canceled {
			t.Errorf("Serve returned %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not stop after the interrupt")
	}
}

// Only the page's own files are served: not another file in the folder,
// not a listing, not a symlink (even to a page file's name).
func TestHandlerServesOnlyPageFiles(t *testing.T) {
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
	srv := httptest.NewServer(Handler(dir))
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

// A folder holding anything explore did not write is never built into,
// and the error names the file; a new folder, and then one explore built
// before, are claimed.
func TestClaimBuildDir(t *testing.T) {
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

// Mounted under a prefix, as another server would mount it, the page's
// relative paths still reach its files.
func TestHandlerUnderPrefix(t *testing.T) {
	dir := t.TempDir()
	fakeSite(t, dir)
	mux := http.NewServeMux()
	mux.Handle("/explore/", http.StripPrefix("/explore/", Handler(dir)))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for path, want := range map[string]string{"/explore/": "content of index.html", "/explore/layout.wasm": "content of layout.wasm"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != want {
			t.Errorf("GET %s: %d %q, want %q", path, resp.StatusCode, body, want)
		}
	}
}
