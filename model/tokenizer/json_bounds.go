package tokenizer

import (
	"errors"
	"fmt"
)

// Bounds on a tokenizer.json's text pipeline, so that normalizing and
// pre-tokenizing take memory proportional to the input. Real files use
// patterns of at most a few hundred bytes and grow text at most 3× (a
// space becomes "▁", 3 bytes); the caps leave a wide margin over both.
const (
	// maxJSONPattern caps every pattern, replacement and prefix (Replace,
	// Split, Prepend, Metaspace), in bytes.
	maxJSONPattern = 4096
	// maxJSONGrowth caps how many times longer the normalizers, applied
	// in turn, can make a text (beyond a constant for prefixes).
	maxJSONGrowth = 64
	// maxJSONSteps caps the normalizer steps and the pre-tokenizer splits,
	// each a pass over the whole text.
	maxJSONSteps = 256
)

// checkPattern refuses an empty or over-long pattern of a step.
func checkPattern(what, s string) error {
	if s == "" {
		return fmt.Errorf("%s is empty", what)
	}
	if len(s) > maxJSONPattern {
		return fmt.Errorf("%s is %d bytes, more than the %d allowed", what, len(s), maxJSONPattern)
	}
	return nil
}

// normalizerGrowth bounds the factor by which the steps, applied in
// turn, can lengthen a text: a Replace of a by b at most ⌈len(b)/len(a)⌉
// (each match of a becomes b), NFC 3× (Unicode's bound on composition),
// lowercasing 2× (no rune's lowercase needs more than 1.5× its bytes).
// Prefixes add a constant and do not count.
func normalizerGrowth(steps []normalizer) (int, error) {
	if len(steps) > maxJSONSteps {
		return 0, fmt.Errorf("%d normalizer steps, more than the %d allowed", len(steps), maxJSONSteps)
	}
	g := 1
	for _, n := range steps {
		f := 1
		switch n.op {
		case "replace":
			if n.a == "" {
				return 0, errors.New("a Replace with an empty pattern would insert its content between every character")
			}
			if len(n.a) > maxJSONPattern || len(n.b) > maxJSONPattern {
				return 0, fmt.Errorf("a Replace pattern or content is longer than %d bytes", maxJSONPattern)
			}
			f = (len(n.b) + len(n.a) - 1) / len(n.a)
		case "nfc":
			f = 3
		case "lowercase":
			f = 2
		case "prepend":
			if len(n.a) > maxJSONPattern {
				return 0, fmt.Errorf("a Prepend of %d bytes is longer than %d", len(n.a), maxJSONPattern)
			}
		}
		g *= max(f, 1)
		if g > maxJSONGrowth {
			return 0, fmt.Errorf("the normalizers can make a text more than %d times longer (a Replace chain that grows it at each step?)", maxJSONGrowth)
		}
	}
	return g, nil
}
