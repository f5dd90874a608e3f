package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/stride-lm/stride/model/tokenizer"
)

// tokenStream tokenizes r a window at a time with codec (see
// tokenizer.Stream), so that perplexity and tokenize hold the window, not
// the input.
func tokenStream(codec tokenizer.Codec, r io.Reader, o tokenizer.EncodeOptions) (*tokenizer.Stream, error) {
	s, ok := codec.(interface {
		NewStream(io.Reader, tokenizer.EncodeOptions) *tokenizer.Stream
	})
	if !ok {
		return nil, fmt.Errorf("the %T tokenizer cannot read a text incrementally", codec)
	}
	return s.NewStream(closedIsEmpty{r}, o), nil
}

// closedIsEmpty reads a closed standard input as an empty text, as
// readStdin does.
type closedIsEmpty struct{ r io.Reader }

func (c closedIsEmpty) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if errors.Is(err, syscall.EBADF) || errors.Is(err, os.ErrClosed) {
		return n, io.EOF
	}
	return n, err
}

// tokenWindow holds the tokens of a stream not yet consumed.
type tokenWindow struct {
	s     *tokenizer.Stream
	toks  []int
	total int // tokens read from the stream so far
	eof   bool
}

// fill reads from the stream until the window holds n tokens or the
// stream ends.
func (w *tokenWindow) fill(n int) error {
	for !w.eof && len(w.toks) < n {
		ids, err := w.s.Next()
		if errors.Is(err, io.EOF) {
			w.eof = true
			break
		}
		if err != nil {
			return err
		}
		w.toks = append(w.toks, ids...)
		w.total += len(ids)
	}
	return nil
}

// drop removes the first n tokens, reusing the window's memory.
func (w *tokenWindow) drop(n int) {
	w.toks = w.toks[:copy(w.toks, w.toks[n:])]
}
