package tokenizer

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stride-lm/stride/tensor/testfixture"
)

// TestParseIDs: ids separated by spaces, commas, newlines or written as a
// JSON array read alike; a word or an id outside the vocabulary is one
// line naming its place.
func TestParseIDs(t *testing.T) {
	for _, in := range []string{"1 403 407", "[1, 403, 407]", "1,403\r\n407\n", "\t1 ,, 403 ] [ 407"} {
		if got, err := ParseIDs(in, 512); err != nil || !slices.Equal(got, []int{1, 403, 407}) {
			t.Errorf("ParseIDs(%q) = %v, %v", in, got, err)
		}
	}
	if got, err := ParseIDs(" [] ", 512); err != nil || len(got) != 0 {
		t.Errorf("no ids: %v, %v", got, err)
	}
	for in, want := range map[string]string{
		"1 x 3":   `id 2: "x" is not an integer`,
		"1 2 512": "id 3: 512 is outside the 512-token vocabulary",
		"-1":      "id 1: -1 is outside the 512-token vocabulary",
		"1.5":     `id 1: "1.5" is not an integer`,
	} {
		if _, err := ParseIDs(in, 512); err == nil || err.Error() != want {
			t.Errorf("ParseIDs(%q): %v, want %q", in, err, want)
		}
	}
}

// parseIDsSeeds are FuzzParseIDs' seeds.
var parseIDsSeeds = map[string]string{
	"plain":    "1 403 407 261 378",
	"json":     "[1, 15043, 3186, 2]",
	"newlines": "1\r\n2\n\t3",
	"word":     "1 two 3",
	"range":    "-1 99999999999999999999",
	"empty":    "",
}

// TestParseIDsFuzzCorpusCurrent keeps testdata/fuzz/FuzzParseIDs equal to
// parseIDsSeeds.
func TestParseIDsFuzzCorpusCurrent(t *testing.T) {
	want := map[string][]byte{}
	for name, s := range parseIDsSeeds {
		want[name] = testfixture.CorpusEntry(s)
	}
	testfixture.CheckCorpus(t, filepath.Join("testdata", "fuzz", "FuzzParseIDs"), want, "TestParseIDsFuzzCorpusCurrent")
}

// FuzzParseIDs: any text either fails with one line or gives ids inside
// the vocabulary that print back (space-separated) to the same ids.
func FuzzParseIDs(f *testing.F) {
	for _, s := range parseIDsSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		const vocab = 32000
		ids, err := ParseIDs(s, vocab)
		if err != nil {
			if strings.Contains(err.Error(), "\n") && !strings.Contains(s, "\n") {
				t.Fatalf("error of more than one line: %q", err)
			}
			return
		}
		words := make([]string, len(ids))
		for i, id := range ids {
			if id < 0 || id >= vocab {
				t.Fatalf("id %d outside the vocabulary", id)
			}
			words[i] = strconv.Itoa(id)
		}
		back, err := ParseIDs(strings.Join(words, " "), vocab)
		if err != nil || !slices.Equal(back, ids) {
			t.Fatalf("ids %v print back as %v (%v)", ids, back, err)
		}
	})
}
