package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// flagsMarkdown lists every command's flags as Markdown: the reference
// docs/cli.md holds under "Every flag".
func flagsMarkdown() string {
	a := newApp(defaultRegistry)
	root := newRootCmd(a)
	var cmds []*cobra.Command
	for _, c := range root.Commands() {
		if !c.Hidden && c.Name() != "help" && c.Name() != "completion" {
			cmds = append(cmds, c)
			cmds = append(cmds, c.Commands()...) // bench serve
		}
	}
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].CommandPath() < cmds[j].CommandPath() })
	var b strings.Builder
	for _, c := range cmds {
		fmt.Fprintf(&b, "### %s\n\n| flag | meaning |\n|---|---|\n", c.CommandPath())
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Name == "help" {
				return
			}
			name := "`--" + f.Name + "`"
			if f.Shorthand != "" {
				name = "`-" + f.Shorthand + "`, " + name
			}
			usage := strings.ReplaceAll(f.Usage, "|", "\\|")
			fmt.Fprintf(&b, "| %s | %s |\n", name, usage)
		})
		b.WriteString("\n")
	}
	return b.String()
}

// TestCLIDocDocumentsEveryFlagAndKey fails when a flag or a key is added
// without docs/cli.md being regenerated: run
// `go test ./cmd/infer -run TestCLIDocDocumentsEveryFlagAndKey -v` and
// paste the printed sections under "Every flag" and "Every key".
func TestCLIDocDocumentsEveryFlagAndKey(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	flags, keys := flagsMarkdown(), keysMarkdown()
	t.Log("\n" + flags + "\n" + keys)
	for _, line := range strings.Split(flags+keys, "\n") {
		if strings.HasPrefix(line, "| `") && !strings.Contains(doc, line) {
			t.Errorf("docs/cli.md lacks %q", line)
		}
	}
}
