package testfixture

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// ReadIDs reads a recorded token-id fixture (a llama2.c golden output,
// such as models/golden/stories260K.greedy.ids): whitespace-separated
// decimal ids. A file that cannot be read or holds anything else fails t,
// naming the file.
func ReadIDs(t testing.TB, path string) []int {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int
	for _, f := range strings.Fields(string(raw)) {
		v, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		ids = append(ids, v)
	}
	return ids
}
