package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
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

// writeTokensJSON writes {"ids": [...], "pieces": [...]} for the
// stream's ids, byte for byte what encoding/json writes for the whole
// lists (pieces as stored: no HTML escaping). The ids are written as they
// come and the pieces spooled to a temporary file meanwhile, so memory
// stays bounded however long the text.
func writeTokensJSON(w *bufio.Writer, s *tokenizer.Stream, tk *tokenizer.Tokenizer) error {
	spool, err := os.CreateTemp("", "infer-tokenize-*.json")
	if err != nil {
		return fmt.Errorf("tokenize: %w", err)
	}
	defer os.Remove(spool.Name())
	defer spool.Close()
	pieces := bufio.NewWriterSize(spool, 64<<10)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	w.WriteString(`{"ids":[`)
	n := 0
	err = eachPart(s, func(ids []int) error {
		for _, id := range ids {
			if n > 0 {
				w.WriteByte(',')
				pieces.WriteByte(',')
			}
			n++
			w.WriteString(strconv.Itoa(id))
			buf.Reset()
			if err := enc.Encode(tk.Piece(id)); err != nil {
				return err
			}
			pieces.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
		}
		return outputErr(w)
	})
	if err != nil {
		return err
	}
	if err := pieces.Flush(); err != nil {
		return fmt.Errorf("tokenize: spooling the pieces: %w", err)
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("tokenize: %w", err)
	}
	w.WriteString(`],"pieces":[`)
	if _, err := io.Copy(w, spool); err != nil {
		return fmt.Errorf("tokenize: reading the spooled pieces: %w", err)
	}
	_, err = w.WriteString("]}\n")
	return err
}
