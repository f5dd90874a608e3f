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
