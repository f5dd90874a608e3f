package engine

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// pieceCodec is a tokenizer.Codec whose token i is pieces[i], whatever
// came before: the tests choose how text and stop strings split.
type pieceCodec []string

func (c pieceCodec) Encode(string, bool, bool) ([]int, error) { return nil, nil }
func (c pieceCodec) Decode(_, tok int) string                 { return c[tok%len(c)] }
func (c pieceCodec) VocabSize() int                           { return len(c) }

// BOS, EOS and AddBOS complete tokenizer.Codec: the test vocabulary has
// no BOS and no EOS.
func (c pieceCodec) BOS() int     { return -1 }
func (c pieceCodec) EOS() int     { return -1 }
func (c pieceCodec) AddBOS() bool { return false }

// cutAtStop is the brute-force reference: after each piece, decode
// everything so far and cut at the leftmost stop string; the first piece
// whose text contains one ends the sequence there.
func cutAtStop(pieces, stops []string) (text string, stoppedAt int) {
	for k := range pieces {
		text = strings.Join(pieces[:k+1], "")
		cut := -1
		for _, s := range stops {
			if i := strings.Index(text, s); s != "" && i >= 0 && (cut < 0 || i < cut) {
				cut = i
			}
		}
		if cut >= 0 {
			return text[:cut], k
		}
	}
	return text, -1
}

// runDetok feeds pieces as the engine does and returns the deltas,
// the final text and the index of the piece that matched (-1 none).
func runDetok(pieces, stops []string) (deltas []string, text string, stoppedAt int) {
	d := newDetokenizer(pieceCodec(pieces), stops)
	stoppedAt = -1
	for k := range pieces {
		delta, matched := d.add(0, k)
		deltas = append(deltas, delta)
		if matched {
			stoppedAt = k
			break
		}
	}
	if stoppedAt < 0 {
		deltas = append(deltas, d.flush())
	}
	return deltas, string(d.text), stoppedAt
}

// checkDetok compares runDetok with the reference: the same final text
// and stopping piece, the deltas concatenating to it, and every
// released prefix a prefix of it (nothing that a later stop string cuts
// is ever released) that, for valid UTF-8 input, is valid UTF-8.
func checkDetok(t *testing.T, pieces, stops []string) {
	t.Helper()
	want, wantAt := cutAtStop(pieces, stops)
	deltas, text, at := runDetok(pieces, stops)
	if text != want || at != wantAt || strings.Join(deltas, "") != want {
		t.Fatalf("pieces %q stops %q: text %q (stop at %d), deltas %q; want %q (stop at %d)", pieces, stops, text, at, deltas, want, wantAt)
	}
	// A stop string may itself cut a character; the test then has no
	// character boundaries to check.
	valid := utf8.ValidString(strings.Join(pieces, "")) && utf8.ValidString(want)
	var sent string
	for _, d := range deltas {
		sent += d
		if !strings.HasPrefix(want, sent) {
			t.Fatalf("pieces %q stops %q: released %q, not a prefix of the final %q", pieces, stops, sent, want)
		}
		if valid && !utf8.ValidString(sent) {
			t.Fatalf("pieces %q stops %q: released %q ends inside a character", pieces, stops, sent)
		}
	}
}

func TestDetokenizerHoldBack(t *testing.T) {
	for _, tc := range []struct{ pieces, stops []string }{
		{[]string{"Hello", " Li", "ly", " said"}, []string{"Lily"}},
		{[]string{"ab", "c<|im", "_end|>x"}, []string{"<|im_end|>"}},
		{[]string{"aXb", "Yc"}, []string{"bY", "X"}},
		{[]string{"no", " stop", " here"}, []string{"zzz"}},
		{[]string{"partial <|e"}, []string{"<|eot_id|>"}},
		{[]string{"caf", "\xc3", "\xa9 ", "\xe2\x82", "\xac!"}, []string{"zz"}},           // é and € split
		{[]string{"x\xf0\x9f", "\x98", "\x80y", "\xe2\x82", "\xacEND"}, []string{"€END"}}, // a stop after a split char
		{[]string{"\xe2", "\x82\xac", "\xe2\x82"}, []string{"\xe2\x82\xac\xe2\x82\xac"}},  // a stop made of split chars
	} {
		checkDetok(t, tc.pieces, tc.stops)
	}
}

// TestDetokenizerRandomSplits: valid text with multi-byte characters and
// stop strings, split into pieces at random byte offsets (so both
// characters and stop strings straddle tokens), agrees with the
// brute-force reference.
func TestDetokenizerRandomSplits(t *testing.T) {
	words := []string{"the", " ", "é", "€", "😀", "END", "<|im_end|>", "\n", "a", "ab"}
	stopSets := [][]string{{"END"}, {"<|im_end|>", "é€"}, {"😀\n"}, {"ab", "b€"}, {"zzz"}}
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		var b strings.Builder
		for range 1 + r.IntN(12) {
			b.WriteString(words[r.IntN(len(words))])
		}
		text := b.String()
		var pieces []string
		for len(text) > 0 {
			n := 1 + r.IntN(min(len(text), 5))
			pieces = append(pieces, text[:n])
			text = text[n:]
		}
		checkDetok(t, pieces, stopSets[r.IntN(len(stopSets))])
	}
}

// FuzzDetokenizer: for any pieces and stop strings the detokenizer
// agrees with the brute-force reference.
func FuzzDetokenizer(f *testing.F) {
	f.Add("Hello| Li|ly| said", "Lily")
	f.Add("ab|c<|im|_end|>x", "<|im_end|>")
	f.Add("aaa|aa|a", "aaaa")
	f.Add("caf\xc3|\xa9", "\xa9")
	f.Fuzz(func(t *testing.T, joined, stop string) {
		pieces := strings.Split(joined, "|")
		checkDetok(t, pieces, strings.Split(stop, "\x00"))
	})
}
