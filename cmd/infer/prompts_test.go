package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzReadPromptsFile: any file gives either an error or prompts that are
// non-blank lines of the file, each named by its true line number.
func FuzzReadPromptsFile(f *testing.F) {
	for _, s := range []string{"a\nb\n", "\n\n x\r\n", "", "\r\n\r\n", "one", "a\n\n\nb\r\nc"} {
		f.Add(s)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, text string) {
		p := filepath.Join(dir, "p.txt")
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		ps, err := readPromptsFile(p)
		if err != nil {
			if strings.TrimSpace(text) != "" {
				t.Fatalf("%q: %v", text, err)
			}
			return
		}
		lines := strings.Split(text, "\n")
		for _, pr := range ps {
			var n int
			if _, err := fmt.Sscanf(pr.where, "p.txt line %d", &n); err != nil || n < 1 || n > len(lines) {
				t.Fatalf("%q: prompt named %q", text, pr.where)
			}
			if want := strings.TrimSuffix(lines[n-1], "\r"); pr.text != want || strings.TrimSpace(pr.text) == "" {
				t.Fatalf("%q: %s is %q, want %q", text, pr.where, pr.text, want)
			}
		}
	})
}
