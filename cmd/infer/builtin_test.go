package main

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stride-lm/stride/tensor/testfixture"
)

// With no checkpoint, generate runs the built-in stories260K: greedy from
// BOS it prints run.c's golden ids (llama2.c's `run stories260K.bin -z
// tok512.bin -t 0.0 -n 256`), and as text run.c's story.
func TestGenerateDefaultIsBuiltInStories260K(t *testing.T) {
	golden := testfixture.Ints(t, "models/golden/stories260K.greedy.ids")
	code, out, errs := cli(t, "generate", "--temperature", "0", "--output", "ids")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var got []int
	for _, f := range strings.Fields(out) {
		id, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("output %q: %v", out, err)
		}
		got = append(got, id)
	}
	if !slices.Equal(got, golden) {
		t.Fatalf("ids\n got %v\nwant %v", got, golden)
	}
	// --checkpoint synthetic is the synthetic model, whose byte codec
	// turns "hi" into ids 3+'h', 3+'i'.
	// Greedy: sampled with a fresh seed, the third position is sometimes
	// the synthetic vocabulary's stop id, and the run ends after "hi".
	code, out, errs = cli(t, "generate", "--checkpoint", "synthetic", "--prompt", "hi", "--steps", "3", "--temperature", "0", "--output", "ids")
	if code != 0 || !strings.HasPrefix(out, "107 108 ") {
		t.Fatalf("synthetic: exit %d, ids %q, %s", code, out, errs)
	}
	// Its vocabulary beyond the bytes is its own choice, not a checkpoint
	// missing its tokenizer: no hint.
	code, _, errs = cli(t, "generate", "--checkpoint", "synthetic", "--synthetic.vocab_size", "300", "--steps", "3")
	if code != 0 || strings.Contains(errs, "--tokenizer") {
		t.Fatalf("synthetic vocab 300: exit %d, stderr %q", code, errs)
	}
}
