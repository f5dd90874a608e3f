package main

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

	"github.com/spf13/cobra"
)

// `infer explore` serves the layout explorer (web/, docs/explorer.md): a
// static page that runs tensor/layoutexpr compiled to WebAssembly. The
// page is built by scripts/build-web.sh into web/dist/; explore builds it
// first when it is missing, which needs a Stride checkout and the Go
// toolchain. Everything it serves is a plain file, so the same folder
// works from any static host.

func init() { register(newExploreCmd) }

func newExploreCmd(a *app) *cobra.Command {
	var addr, dir string
	var rebuild, public bool
	cmd := &cobra.Command{
		Use:   "explore",
		Short: "Serve the layout explorer, a web page that runs infer layout in the browser",
		Long: `explore serves the layout explorer (docs/explorer.md) over HTTP: a static
page where you type a PyTorch layout program (the infer layout grammar) and
see each step's row and a picture of the storage and the view. The
evaluator is Stride's own, compiled to WebAssembly; the server only serves
files.

The page lives in web/dist/ of the Stride checkout, built by
scripts/build-web.sh. When it is missing (or with --rebuild) explore runs
that script first, which needs the checkout and the Go toolchain (go on
PATH). --dir serves another folder built by the script.

explore only ever writes into a folder that is new, empty, or one it built
before (it leaves a marker file there); it serves only the page's own five
files, never a listing or a symlink. --addr must name a host; a host other
than a loopback address needs --public.`,
		Example: `  infer explore
  infer explore --addr 127.0.0.1:9000 --rebuild`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if err := checkListenAddr(addr, public); err != nil {
				return err
			}
			root := checkoutRoot()
			if dir == "" {
				if root == "" {
					return errors.New("explore: not inside a Stride checkout; give --dir with a folder built by scripts/build-web.sh")
				}
				dir = filepath.Join(root, "web", "dist")
			}
			if rebuild || !siteBuilt(dir) {
				if root == "" {
					return fmt.Errorf("explore: %s has no built page and there is no Stride checkout here to build it from (run scripts/build-web.sh in one)", dir)
				}
				if err := buildSite(ctx, root, dir, cmd.ErrOrStderr()); err != nil {
					return err
				}
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("explore: %v", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "serving %s at http://%s/ (Ctrl-C stops)\n", dir, ln.Addr())
			return serveSite(ctx, ln, dir)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "listen on `HOST:PORT`")
	cmd.Flags().StringVar(&dir, "dir", "", "serve `DIR` instead of the checkout's web/dist")
	cmd.Flags().BoolVar(&rebuild, "rebuild", false, "rebuild the page before serving")
	cmd.Flags().BoolVar(&public, "public", false, "allow an --addr that is not a loopback address (serves the page to the network)")
	return cmd
}

// siteFiles are the files scripts/build-web.sh writes; a folder missing
// any of them is not a built page.
var siteFiles = []string{"index.html", "app.js", "style.css", "wasm_exec.js", "layout.wasm"}

func siteBuilt(dir string) bool {
	for _, f := range siteFiles {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || !st.Mode().IsRegular() {
			return false
		}
	}
	return true
}

// checkoutRoot finds the Stride module root above the working directory
// (a go.mod naming the module, with scripts/build-web.sh beside it), or
// returns "".
func checkoutRoot() string {
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

// buildSite runs scripts/build-web.sh to build the page into dir, its
// output going to w; ctx's cancellation stops it. A dir that holds files
// explore did not write is refused first (claimBuildDir).
func buildSite(ctx context.Context, root, dir string, w io.Writer) error {
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

// siteHandler serves dir's page files and nothing else: no listings,
// no other file the folder holds, no symlink (which could point out of
// it). The MIME types are set here: WebAssembly.instantiateStreaming
// refuses a .wasm that is not application/wasm, and the system's
// mime.types may lack it. no-cache makes a rebuilt page show at the next
// reload.
func siteHandler(dir string) http.Handler {
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

// serveSite serves dir on ln until ctx is cancelled (Ctrl-C), then shuts
// down and returns ctx.Err(), the interrupt exit status.
func serveSite(ctx context.Context, ln net.Listener, dir string) error {
	srv := &http.Server{Handler: siteHandler(dir), ReadHeaderTimeout: 10 * time.Second}
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
