package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// A hidden command that panics, registered only in the test binary, to
// check that run recovers instead of crashing with a stack trace.
func init() {
	register(func(a *app) *cobra.Command {
		return &cobra.Command{Use: "test-panic", Hidden: true, RunE: func(*cobra.Command, []string) error {
			var m map[string]int
			m["boom"]++ // a nil-map write: a real runtime panic
			return nil
		}}
	})
}

// runCLI runs the CLI in-process as the infer binary would.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return out.String(), errb.String(), code
}

func TestRunRecoversPanics(t *testing.T) {
	out, errOut, code := runCLI(t, "test-panic")
	if code == 0 || out != "" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	if !strings.HasPrefix(errOut, "infer: internal error: ") || !strings.Contains(errOut, "nil map") {
		t.Fatalf("stderr %q", errOut)
	}
}

func TestRunReportsErrors(t *testing.T) {
	_, errOut, code := runCLI(t, "no-such-command")
	if code != 1 || !strings.HasPrefix(errOut, `infer: unknown command "no-such-command"`) {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	_, errOut, code = runCLI(t, "layout", "--no-such-flag", "empty(1)")
	if code != 1 || !strings.Contains(errOut, "unknown flag: --no-such-flag") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

func TestHelpListsLayout(t *testing.T) {
	out, errOut, code := runCLI(t, "--help")
	if code != 0 || errOut != "" || !strings.Contains(out, "layout") || strings.Contains(out, "test-panic") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	out, _, code = runCLI(t, "layout", "--help")
	if code != 0 || !strings.Contains(out, "INFER_LAYOUT_OUTPUT") || !strings.Contains(out, "table|json") {
		t.Fatalf("layout --help: exit %d\n%s", code, out)
	}
}
