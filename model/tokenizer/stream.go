package tokenizer

import (
	"errors"
	"fmt"
	"io"
	"slices"
)

// Stream tokenizes a text read from an io.Reader a window at a time, so
// that a corpus of any size is tokenized in memory bounded by the window,
// and gives exactly the ids EncodeWith gives for the whole text.
//
// The text is cut only where the cut changes nothing: at the start of a
// line (after '\n', before a printable ASCII character) or, in a text
// without line breaks, before a space that follows an ASCII letter or
// digit and precedes an ASCII letter, with ASCII on both sides so that
// no UTF-8 character, normalization or byte fallback spans the cut. A
// candidate cut is then verified: the window is encoded whole, the text
// after the cut is encoded as a continuation (no dummy prefix), and the
// cut is taken only if the second is a suffix of the first, with at
// least 4 KiB of text after the cut, further than any
// pre-tokenizer or merge of the supported tokenizers looks. So the cut is
// a token boundary of the whole text's encoding, and the ids before it
// are final. The window keeps the text after the cut for the next call.
type Stream struct {
	enc    func(text string, o EncodeOptions, cont bool) ([]int, error)
	anyCut bool // every byte is its own token: cut anywhere
	r      io.Reader
	o      EncodeOptions
	buf    []byte // text not yet tokenized; starts at a verified cut
	cont   bool   // text before buf was tokenized: buf continues it
	eof    bool
	done   bool
	window int // bytes to have in buf before looking for a cut
}

// Stream window sizes: streamWindow bytes are read before a cut is
// sought, the cut keeps streamLookahead bytes after it, and a text in
// which no cut verifies within maxStreamSpan bytes (a single line of
// many megabytes without spaces) is refused rather than held whole.
const (
	streamWindow    = 64 << 10
	streamLookahead = 4 << 10
	maxStreamSpan   = 16 << 20
)

// NewStream returns a Stream over r with the options of EncodeWith: BOS
// before the first ids, EOS after the last.
func (t *Tokenizer) NewStream(r io.Reader, o EncodeOptions) *Stream {
	return &Stream{enc: t.encode, r: r, o: o, window: streamWindow}
}

// NewStream returns a Stream over r: one id per byte, with BOS and EOS
// as o asks (o.ParseSpecial does not apply).
func (b *Bytes) NewStream(r io.Reader, o EncodeOptions) *Stream {
	enc := func(text string, o EncodeOptions, _ bool) ([]int, error) { return b.Encode(text, o.BOS, o.EOS) }
	return &Stream{enc: enc, anyCut: true, r: r, o: o, window: streamWindow}
}

// Next returns the ids of the next part of the text, and io.EOF once all
// of it has been returned. Parts may be empty. Concatenated, the parts
// are EncodeWith's ids of the whole text. A read error is returned as
// is; a text with no cut in maxStreamSpan bytes is an error naming it.
func (s *Stream) Next() ([]int, error) {
	if s.done {
		return nil, io.EOF
	}
	for {
		if err := s.fill(); err != nil {
			return nil, err
		}
		if s.eof {
			return s.last()
		}
		ids, ok, err := s.cut()
		if err != nil || ok {
			return ids, err
		}
		if len(s.buf) >= maxStreamSpan {
			return nil, fmt.Errorf("tokenizer: no place to cut the text in %d MiB (a line that long, without spaces?): the limit is %d MiB",
				len(s.buf)>>20, maxStreamSpan>>20)
		}
		s.window = min(2*s.window, maxStreamSpan)
	}
}

// fill reads until buf holds the window or the text ends.
func (s *Stream) fill() error {
	for !s.eof && len(s.buf) < s.window {
		if cap(s.buf) < s.window {
			s.buf = slices.Grow(s.buf, s.window-len(s.buf))
		}
		n, err := s.r.Read(s.buf[len(s.buf):s.window])
		s.buf = s.buf[:len(s.buf)+n]
		if errors.Is(err, io.EOF) {
			s.eof = true
		} else if err != nil {
			return err
		}
	}
	return nil
}

// last encodes what is left of the text, with EOS.
func (s *Stream) last() ([]int, error) {
	s.done = true
	o := s.o
	o.BOS = o.BOS && !s.cont
	ids, err := s.enc(string(s.buf), o, s.cont)
	s.buf = nil
	return ids, err
}

// cut looks for a verified cut in buf, the latest first, and returns the
// ids before it; ok is false when no candidate verified.
func (s *Stream) cut() (ids []int, ok bool, err error) {
	o := s.o
	o.BOS, o.EOS = o.BOS && !s.cont, false
	if s.anyCut {
		return s.take(o, len(s.buf)-streamLookahead, nil)
	}
	var whole []int
	for _, newline := range []bool{true, false} {
		tries := 0
		for p := len(s.buf) - streamLookahead; p > 4 && tries < 4; p-- {
			if !cutCandidate(s.buf, p, newline) {
				continue
			}
			tries++
			if whole == nil {
				if whole, err = s.enc(string(s.buf), o, s.cont); err != nil {
					return nil, false, err
				}
			}
			tail, err := s.enc(string(s.buf[p:]), EncodeOptions{ParseSpecial: o.ParseSpecial}, true)
			if err != nil {
				return nil, false, err
			}
			if len(tail) < len(whole) && slices.Equal(whole[len(whole)-len(tail):], tail) {
				return s.take(o, p, whole[:len(whole)-len(tail)])
			}
		}
	}
	return nil, false, nil
}

// take cuts buf before p and returns the ids before the cut: ids when
// known, else encoded now.
func (s *Stream) take(o EncodeOptions, p int, ids []int) ([]int, bool, error) {
	if ids == nil {
		var err error
		if ids, err = s.enc(string(s.buf[:p]), o, s.cont); err != nil {
			return nil, false, err
		}
	}
	s.buf = s.buf[:copy(s.buf, s.buf[p:])]
	s.cont = true
	s.window = streamWindow
	return ids, true, nil
}

// cutCandidate reports whether b may be cut before b[p]: at a line start
// (newline) or before a space between words, with the four bytes before
// the cut ASCII, so that no UTF-8 sequence spans it.
func cutCandidate(b []byte, p int, newline bool) bool {
	for _, c := range b[p-4 : p] {
		if c >= 0x80 {
			return false
		}
	}
	if newline {
		return b[p-1] == '\n' && b[p] > ' ' && b[p] < 0x7f
	}
	return b[p] == ' ' && isASCIIWord(b[p-1]) && p+1 < len(b) && isASCIILetter(b[p+1])
}

func isASCIILetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

func isASCIIWord(c byte) bool { return isASCIILetter(c) || c >= '0' && c <= '9' }

// Streamer is a Codec that can tokenize a text incrementally (Tokenizer
// and Bytes are).
type Streamer interface {
	NewStream(r io.Reader, o EncodeOptions) *Stream
}

// NewStream returns a Stream of c's ids over r, or an error when c cannot
// read a text incrementally (it is not a Streamer).
func NewStream(c Codec, r io.Reader, o EncodeOptions) (*Stream, error) {
	s, ok := c.(Streamer)
	if !ok {
		return nil, fmt.Errorf("the %T tokenizer cannot read a text incrementally", c)
	}
	return s.NewStream(r, o), nil
}
