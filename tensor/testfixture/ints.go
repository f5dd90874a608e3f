package testfixture

import "testing"

// Ints reads a shared fixture that holds whitespace-separated decimal
// integers (a recorded token-id sequence such as
// "models/golden/stories260K.greedy.ids") with ReadIDs. A missing file
// skips or fails t as File does; a malformed one fails it.
func Ints(t testing.TB, rel string) []int {
	t.Helper()
	return ReadIDs(t, File(t, rel))
}
