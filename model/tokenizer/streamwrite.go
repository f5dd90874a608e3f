package tokenizer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
)

// This file writes a Stream's ids as llama-tokenize prints them (`infer
// tokenize`): space-separated on one line, or as JSON with their pieces,
// in memory bounded however long the text. A failed write to w (a closed
// or full output) stops the tokenizing at the next part.

// WriteIDs writes the rest of the stream's ids to w, space-separated on
// one line and ended by a newline.
func (s *Stream) WriteIDs(w *bufio.Writer) error {
	n := 0
	err := s.eachPart(func(ids []int) error {
		for _, id := range ids {
			if n > 0 {
				w.WriteByte(' ')
			}
			w.WriteString(strconv.Itoa(id))
			n++
		}
		return outputErr(w)
	})
	if err != nil {
		return err
	}
	return w.WriteByte('\n')
}

// WriteJSON writes {"ids": [...], "pieces": [...]} for the rest of the
// stream's ids, their pieces as t's vocabulary stores them (Piece), byte
// for byte what encoding/json writes for the whole lists (no HTML
// escaping), and a newline. The ids are written as they come and the
// pieces spooled to a temporary file meanwhile, so memory stays bounded
// however long the text.
func (s *Stream) WriteJSON(w *bufio.Writer, t *Tokenizer) error {
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
	err = s.eachPart(func(ids []int) error {
		for _, id := range ids {
			if n > 0 {
				w.WriteByte(',')
				pieces.WriteByte(',')
			}
			n++
			w.WriteString(strconv.Itoa(id))
			buf.Reset()
			if err := enc.Encode(t.Piece(id)); err != nil {
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

// outputErr is the error of an earlier write to w, if any.
func outputErr(w *bufio.Writer) error {
	if _, err := w.Write(nil); err != nil {
		return fmt.Errorf("writing the output: %w", err)
	}
	return nil
}

// eachPart calls f with each part of the stream's ids.
func (s *Stream) eachPart(f func([]int) error) error {
	for {
		ids, err := s.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := f(ids); err != nil {
			return err
		}
	}
}
