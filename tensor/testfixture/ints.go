package testfixture

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// Ints reads a shared fixture that holds whitespace-separated decimal
// integers (a recorded token-id sequence such as
// "models/golden/stories260K.greedy.ids"). A missing file skips or fails
// t as File does; a malformed one fails it.
func Ints(t testing.TB, rel string) []int {
	t.Helper()
	raw, err := os.ReadFile(File(t, rel))
	if err != nil {
		t.Fatalf("%v", err)
	}
	var ids []int
	for _, f := range strings.Fields(string(raw)) {
		v, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		ids = append(ids, v)
	}
	return ids
}
