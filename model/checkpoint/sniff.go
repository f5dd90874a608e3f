package checkpoint

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/stride-lm/stride/model/gguf"
	"github.com/stride-lm/stride/model/mapfile"
)

// Kind is what a path holds, told by what it is, never by its name.
type Kind int

// The kinds Sniff tells apart.
const (
	// Llama2c is any other file: a llama2.c checkpoint or tokenizer.bin,
	// the formats with no magic (their header's validation says what is
	// wrong with a file that is neither).
	Llama2c Kind = iota
	// GGUF is a file that starts with the GGUF magic.
	GGUF
	// JSON is a file whose first non-blank byte is '{' (a tokenizer.json).
	JSON
	// Dir is a directory: a Hugging Face checkpoint.
	Dir
)

// String names the kind.
func (k Kind) String() string {
	switch k {
	case GGUF:
		return "gguf"
	case JSON:
		return "json"
	case Dir:
		return "dir"
	}
	return "llama2c"
}

// Sniff tells what path holds from its first bytes, for every command
// that opens a model or a tokenizer file. Only a regular file or a
// directory is read: path is opened non-blocking and fstat'ed, so a FIFO
// or a device is an error at once instead of a hang.
func Sniff(path string) (Kind, error) {
	f, st, err := mapfile.Open(path, true)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return 0, err
		}
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	defer f.Close()
	if st.IsDir() {
		return Dir, nil
	}
	var head [64]byte
	n, _ := io.ReadFull(f, head[:])
	return sniffBytes(head[:n]), nil
}

// sniffBytes is Sniff for a file's first bytes.
func sniffBytes(b []byte) Kind {
	if bytes.HasPrefix(b, []byte(gguf.Magic)) {
		return GGUF
	}
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		return JSON
	}
	return Llama2c
}
