package engine

import (
	"bytes"
	"unicode/utf8"

	"github.com/stride-lm/stride/model/tokenizer"
)

// detokenizer turns one sequence's generated tokens into text as they
// come, in the manner of vLLM's IncrementalDetokenizer: it matches the
// request's stop strings on the decoded text and releases only text that
// is final. A stop string may span several tokens and a token may end
// inside a UTF-8 character, so a tail that could still begin a stop
// string, or that is an incomplete character, is held back until the
// next token decides it.
type detokenizer struct {
	codec   tokenizer.Codec
	stops   [][]byte
	longest int
	text    []byte // generated text so far, cut before the stop string once matched
	sent    int    // bytes of text already released
	matched bool
}

// newDetokenizer returns a detokenizer for codec matching stops; nil
// when codec is nil (the engine then produces no text).
func newDetokenizer(codec tokenizer.Codec, stops []string) *detokenizer {
	if codec == nil {
		return nil
	}
	d := &detokenizer{codec: codec}
	for _, s := range stops {
		if s != "" {
			d.stops = append(d.stops, []byte(s))
			d.longest = max(d.longest, len(s))
		}
	}
	return d
}

// piece is the text token tok stands for after prev, as run.c prints it
// for run.c's codecs (tokenizer.Printable).
func piece(codec tokenizer.Codec, prev, tok int) string {
	return tokenizer.Printable(codec, codec.Decode(prev, tok))
}

// add appends generated token tok (after prev) and returns the text it
// releases, and whether a stop string now matches. Only the new piece can
// complete a match, so the search starts longest−1 bytes before it; the
// leftmost match wins.
func (d *detokenizer) add(prev, tok int) (string, bool) {
	if d.matched {
		return "", true
	}
	from := max(0, len(d.text)-d.longest+1)
	d.text = append(d.text, piece(d.codec, prev, tok)...)
	cut := -1
	for _, s := range d.stops {
		if i := bytes.Index(d.text[from:], s); i >= 0 && (cut < 0 || from+i < cut) {
			cut = from + i
		}
	}
	end := len(d.text)
	if cut >= 0 {
		d.text, d.matched, end = d.text[:cut], true, cut
	} else {
		end = completeUTF8(d.text, d.sent, end-d.heldBack())
	}
	if end <= d.sent {
		return "", d.matched
	}
	out := string(d.text[d.sent:end])
	d.sent = end
	return out, d.matched
}

// flush returns the text not yet released: the sequence has ended.
func (d *detokenizer) flush() string {
	out := string(d.text[d.sent:])
	d.sent = len(d.text)
	return out
}

// heldBack is the length of the longest suffix of the text that is a
// proper prefix of a stop string.
func (d *detokenizer) heldBack() int {
	best := 0
	for _, s := range d.stops {
		for n := min(len(s)-1, len(d.text)); n > best; n-- {
			if bytes.HasSuffix(d.text, s[:n]) {
				best = n
				break
			}
		}
	}
	return best
}

// completeUTF8 moves end back, not below from, to before a UTF-8
// character that b[:end] ends inside of. Invalid bytes are not held:
// only a lead byte whose continuation bytes are still missing is.
func completeUTF8(b []byte, from, end int) int {
	for i := end - 1; i >= max(from, end-utf8.UTFMax+1); i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:end]) {
				return i
			}
			break
		}
	}
	return max(end, from)
}
