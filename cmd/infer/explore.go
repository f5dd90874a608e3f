package main

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/stride-lm/stride/web/explore"
)

// `infer explore` serves the layout explorer (web/, docs/explorer.md)
// through package web/explore, which builds the page (scripts/build-web.sh)
// and serves its files, and whose CheckAddr refuses an --addr that would
// expose the page by accident; this file only reads the flags.

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
			if err := explore.CheckAddr(addr, public); err != nil {
				return err
			}
			root := explore.CheckoutRoot()
			if dir == "" {
				if root == "" {
					return errors.New("explore: not inside a Stride checkout; give --dir with a folder built by scripts/build-web.sh")
				}
				dir = filepath.Join(root, "web", "dist")
			}
			if rebuild || !explore.Built(dir) {
				if root == "" {
					return fmt.Errorf("explore: %s has no built page and there is no Stride checkout here to build it from (run scripts/build-web.sh in one)", dir)
				}
				if err := explore.Build(ctx, root, dir, cmd.ErrOrStderr()); err != nil {
					return err
				}
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("explore: %v", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "serving %s at http://%s/ (Ctrl-C stops)\n", dir, ln.Addr())
			return explore.Serve(ctx, ln, dir)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "listen on `HOST:PORT`")
	cmd.Flags().StringVar(&dir, "dir", "", "serve `DIR` instead of the checkout's web/dist")
	cmd.Flags().BoolVar(&rebuild, "rebuild", false, "rebuild the page before serving")
	cmd.Flags().BoolVar(&public, "public", false, "allow an --addr that is not a loopback address (serves the page to the network)")
	return cmd
}
