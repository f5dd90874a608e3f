package tokenizer

import (
	"encoding/binary"
	"github.com/stride-lm/stride/tensor/testfixture"
	"math"
	"os"
	"testing"
)

// findShared locates the shared fixtures (tensor/testfixture.Locate): the
// directory, or "" and why not.
func findShared() (dir, reason string) { return testfixture.Locate() }

// sharedFile returns one shared fixture's path (rel in slash form),
// skipping the test when it is absent, or failing it under CI=true.
func sharedFile(t testing.TB, rel string) string {
	t.Helper()
	return testfixture.File(t, rel)
}

// readBin parses a llama2.c tokenizer.bin fixture. The real reader, with
// its validation, is llama2c.ReadTokenizer; this package cannot import it
// (llama2c imports tokenizer), and the fixtures are known good.
func readBin(t testing.TB, rel string, vocab int) *Tokenizer {
	t.Helper()
	b, err := os.ReadFile(sharedFile(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	maxLen := int(le.Uint32(b))
	off := 4
	var pieces []string
	var scores []float32
	for i := 0; i < vocab; i++ {
		scores = append(scores, math.Float32frombits(le.Uint32(b[off:])))
		n := int(le.Uint32(b[off+4:]))
		pieces = append(pieces, string(b[off+8:off+8+n]))
		off += 8 + n
	}
	if off != len(b) {
		t.Fatalf("%s: %d bytes left after %d pieces", rel, len(b)-off, vocab)
	}
	tk, err := NewLlama2c(pieces, scores, maxLen)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}
