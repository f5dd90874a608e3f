// Package outfiletest holds the checks that the tests of package outfile
// and of the commands writing through it share: what a directory holds
// after a write (the target, and no temporary file left beside it) and
// the mode a file ended up with.
package outfiletest

import (
	"io/fs"
	"os"
	"testing"
)

// Entries lists the names in dir, in directory order (sorted by
// filename), failing the test when dir cannot be read.
func Entries(t testing.TB, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// Mode is the mode of the file path names (following a symlink),
// failing the test when it cannot be stat'ed.
func Mode(t testing.TB, path string) fs.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode()
}
