package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// keysMarkdown renders every config key as a Markdown table: the
// reference the README's Configuration section holds.
func keysMarkdown() string {
	var b strings.Builder
	b.WriteString("| key | environment | type | default | meaning |\n|---|---|---|---|---|\n")
	for _, name := range defaultRegistry.sortedKeys() {
		k := defaultRegistry.keys[name]
		def := fmt.Sprint(k.defaultValue())
		switch {
		case k.Kind == kindStrings:
			def = "(none)"
		case def == "":
			def = "(empty)"
		}
		typ := k.Kind.String()
		if len(k.Allowed) > 0 {
			typ = strings.Join(k.Allowed, " \\| ")
		}
		if k.Range != nil {
			typ += " " + strings.ReplaceAll(k.Range.String(), "|", "\\|")
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s | %s |\n", name, envName(name), typ, def, k.Help)
	}
	return b.String()
}

// TestReadmeDocumentsEveryKey fails when a config key is added without
// the README's key table being regenerated: run
// `go test ./cmd/infer -run TestReadmeDocumentsEveryKey -v` and paste the
// printed table under "All keys".
func TestReadmeDocumentsEveryKey(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	table := keysMarkdown()
	t.Log("\n" + table)
	readme := string(raw)
	for _, line := range strings.Split(strings.TrimSpace(table), "\n")[2:] {
		if !strings.Contains(readme, line) {
			t.Errorf("README.md lacks the key table row %q", line)
		}
	}
}
