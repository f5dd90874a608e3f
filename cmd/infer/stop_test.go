package main

import (
	"strings"
	"testing"
)

// stopOracle states the stop rule directly: after each piece, if the
// text so far contains a stop string, the output is the text before its
// leftmost occurrence and generation ends there.
func stopOracle(pieces []string, stops []string) (string, bool) {
	var text string
	for _, p := range pieces {
		text += p
		cut := -1
		for _, s := range stops {
			if i := strings.Index(text, s); s != "" && i >= 0 && (cut < 0 || i < cut) {
				cut = i
			}
		}
		if cut >= 0 {
			return text[:cut], true
		}
	}
	return text, false
}

// runMatcher feeds pieces as generate does and returns what was streamed.
func runMatcher(pieces, stops []string) (streamed, text string, matched bool) {
	m := newStopMatcher(stops)
	var out []byte
	for _, p := range pieces {
		done := m.feed([]byte(p))
		out = append(out, m.ready()...)
		if done {
			break
		}
	}
	if !m.matched {
		out = append(out, m.rest()...)
	}
	return string(out), string(m.text), m.matched
}

func TestStopMatcher(t *testing.T) {
	for _, tc := range []struct {
		pieces, stops []string
		want          string
	}{
		{[]string{"Hello", " Li", "ly", " said"}, []string{"Lily"}, "Hello "},
		{[]string{"ab", "c<|im", "_end|>x"}, []string{"<|im_end|>"}, "abc"},
		{[]string{"aXb", "Yc"}, []string{"bY", "X"}, "a"},
		{[]string{"no", " stop", " here"}, []string{"zzz"}, "no stop here"},
		{[]string{"partial <|e"}, []string{"<|eot_id|>"}, "partial <|e"},
	} {
		streamed, text, _ := runMatcher(tc.pieces, tc.stops)
		if streamed != tc.want || text != tc.want {
			t.Errorf("%q / %q: streamed %q, text %q, want %q", tc.pieces, tc.stops, streamed, text, tc.want)
		}
	}
}

// FuzzStopMatcher: for any pieces and stop strings, what the matcher
// streams and keeps is the oracle's text, and it stops when the oracle
// does.
func FuzzStopMatcher(f *testing.F) {
	f.Add("Hello| Li|ly| said", "Lily")
	f.Add("ab|c<|im|_end|>x", "<|im_end|>")
	f.Add("aaa|aa|a", "aaaa")
	f.Fuzz(func(t *testing.T, joined, stop string) {
		pieces := strings.Split(joined, "|")
		stops := strings.Split(stop, "\x00")
		want, wantMatched := stopOracle(pieces, stops)
		streamed, text, matched := runMatcher(pieces, stops)
		if streamed != want || text != want || matched != wantMatched {
			t.Fatalf("pieces %q stops %q: streamed %q, text %q, matched %v; want %q, %v", pieces, stops, streamed, text, matched, want, wantMatched)
		}
	})
}
