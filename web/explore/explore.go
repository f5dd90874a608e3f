// Package explore serves the layout explorer (docs/explorer.md): the
// static page in web/ that runs tensor/layoutexpr compiled to
// WebAssembly. scripts/build-web.sh builds the page into a folder
// (web/dist/ by default); Handler serves that folder's five page files
// and nothing else, so `infer explore` and any other Go server can mount
// it. Build runs the script from a Stride checkout, and writes only into
// a folder that is new, empty, or one it built before (it leaves a
// marker file there). CheckAddr is the page's listening policy: a
// loopback host unless the user asks for the network.
package explore

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// siteFiles are the files scripts/build-web.sh writes; a folder missing
// any of them is not a built page.
var siteFiles = []string{"index.html", "app.js", "style.css", "wasm_exec.js", "layout.wasm"}

// Built reports whether dir holds a built page: every file
// scripts/build-web.sh writes, each a regular file.
func Built(dir string) bool {
	for _, f := range siteFiles {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || !st.Mode().IsRegular() {
			return false
		}
	}
	return true
}

// CheckoutRoot finds the Stride module root above the working directory
// (a go.mod naming the module, with scripts/build-web.sh beside it), or
// returns "".
func CheckoutRoot() string {
	d, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if isStrideRoot(d) {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			return ""
		}
		d = up
	}
}

func isStrideRoot(d string) bool {
	f, err := os.Open(filepath.Join(d, "go.mod"))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, 4096))
	if !sc.Scan() || strings.TrimSpace(sc.Text()) != "module github.com/stride-lm/stride" {
		return false
	}
	_, err = os.Stat(filepath.Join(d, "scripts", "build-web.sh"))
	return err == nil
}

// Build runs root's scripts/build-web.sh to build the page into dir, its
// output going to w; ctx's cancellation stops it. A dir that holds files
// the build did not write is refused first (claimBuildDir).
func Build(ctx context.Context, root, dir string, w io.Writer) error {
	if _, err := exec.LookPath("go"); err != nil {
		return errors.New("explore: building the page needs the Go toolchain (go on PATH), or run scripts/build-web.sh elsewhere and pass --dir")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := claimBuildDir(abs); err != nil {
		return err
	}
	fmt.Fprintf(w, "building the explorer into %s (scripts/build-web.sh)\n", dir)
	c := exec.CommandContext(ctx, "bash", filepath.Join(root, "scripts", "build-web.sh"), abs)
	c.Dir = root
	c.Stdout, c.Stderr = w, w
	if err := c.Run(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("explore: scripts/build-web.sh: %v", err)
	}
	return nil
}

// Handler serves dir's page files and nothing else: no listings, no
// other file the folder holds, no symlink (which could point out of it).
// The MIME types are set here: WebAssembly.instantiateStreaming refuses
// a .wasm that is not application/wasm, and the system's mime.types may
// lack it. no-cache makes a rebuilt page show at the next reload. Mount
// it under a prefix with http.StripPrefix; the page's paths are relative.
func Handler(dir string) http.Handler {
	types := map[string]string{
		".wasm": "application/wasm",
		".js":   "text/javascript; charset=utf-8",
		".css":  "text/css; charset=utf-8",
		".html": "text/html; charset=utf-8",
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		name := strings.TrimPrefix(r.URL.Path, "/")
		if name == "" {
			name = "index.html"
		}
		f, st, err := openSiteFile(dir, name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		defer f.Close()
		w.Header().Set("Content-Type", types[filepath.Ext(name)])
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		http.ServeContent(w, r, name, st.ModTime(), f)
	})
}

// Serve serves dir's page (Handler) on ln until ctx is cancelled, then
// shuts the server down and returns ctx.Err(); an error of the server
// itself is returned as it happens.
func Serve(ctx context.Context, ln net.Listener, dir string) error {
	srv := &http.Server{Handler: Handler(dir), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("explore: %v", err)
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx) // best effort: we are exiting anyway
		<-done
		return ctx.Err()
	}
}
