package llama2c

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"

	"github.com/stride-lm/stride/model/mapfile"
	"github.com/stride-lm/stride/model/tokenizer"
)

// maxPieceLen bounds max_token_length in a tokenizer file (the Llama
// vocabulary needs 27), so a corrupt header cannot make us allocate much.
const maxPieceLen = 1 << 16

// maxTokenizerVocab bounds the vocab size a tokenizer.bin is read for.
const maxTokenizerVocab = 1 << 20

// LoadTokenizer reads a llama2.c tokenizer.bin. The file does not store its
// piece count, so vocabSize (the model's) says how many entries to read, and
// the file must end right after them: a tokenizer built for another model
// is rejected rather than silently mis-decoding.
func LoadTokenizer(path string, vocabSize int) (*tokenizer.Tokenizer, error) {
	f, err := openTokenizerFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadTokenizer(f, vocabSize, path)
}

// LoadTokenizerFile reads a llama2.c tokenizer.bin without a model to say
// its vocab size: every piece up to the end of the file (for infer
// tokenize). Use LoadTokenizer when a model is at hand, which also checks
// that the tokenizer belongs to it.
func LoadTokenizerFile(path string) (*tokenizer.Tokenizer, error) {
	f, err := openTokenizerFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readTokenizer(f, -1, path)
}

// openTokenizerFile opens a tokenizer.bin through mapfile.Open: only a
// regular file, and a FIFO or device is refused at once instead of
// blocking the open.
func openTokenizerFile(path string) (*os.File, error) {
	f, _, err := mapfile.Open(path, false)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("tokenizer: %w", err)
		}
		return nil, fmt.Errorf("tokenizer %s: %w", path, err)
	}
	return f, nil
}

// ReadTokenizer reads a tokenizer.bin from r (see LoadTokenizer); name is
// used in errors. The layout is: int32 max_token_length, then for each of
// vocabSize pieces a float32 score, an int32 byte length and the bytes, all
// little-endian. Every length is checked against max_token_length (itself
// bounded) before anything is allocated for it.
func ReadTokenizer(r io.Reader, vocabSize int, name string) (*tokenizer.Tokenizer, error) {
	if vocabSize <= 0 || vocabSize > maxTokenizerVocab {
		return nil, fmt.Errorf("tokenizer %s: vocab size %d out of range [1, %d]", name, vocabSize, maxTokenizerVocab)
	}
	return readTokenizer(r, vocabSize, name)
}

// readTokenizer reads vocabSize pieces, or with vocabSize < 0 every piece
// up to the end of r (at most maxTokenizerVocab).
func readTokenizer(r io.Reader, vocabSize int, name string) (*tokenizer.Tokenizer, error) {
	fail := func(format string, a ...any) error {
		return fmt.Errorf("tokenizer %s: %s", name, fmt.Sprintf(format, a...))
	}
	toEOF := vocabSize < 0
	if toEOF {
		vocabSize = maxTokenizerVocab
	}
	br := bufio.NewReader(r)
	var b4 [4]byte
	readI32 := func() (int32, error) {
		if _, err := io.ReadFull(br, b4[:]); err != nil {
			return 0, err
		}
		return int32(binary.LittleEndian.Uint32(b4[:])), nil
	}
	maxLen, err := readI32()
	if err != nil {
		return nil, fail("cannot read max_token_length: %v", err)
	}
	if maxLen <= 0 || maxLen > maxPieceLen {
		return nil, fail("max_token_length %d out of range [1, %d]", maxLen, maxPieceLen)
	}
	// Grow the tables as entries arrive instead of trusting vocabSize up
	// front: a short file then costs only what it holds.
	var pieces []string
	var scores []float32
	piece := make([]byte, maxLen)
	for i := 0; i < vocabSize; i++ {
		if toEOF {
			if _, err := br.Peek(1); err == io.EOF {
				if i == 0 {
					return nil, fail("no pieces after max_token_length")
				}
				vocabSize = i
				break
			}
		}
		sc, err := readI32()
		if err != nil {
			return nil, fail("file ends after %d pieces, but the model's vocab_size is %d (%v)", i, vocabSize, err)
		}
		n, err := readI32()
		if err != nil {
			return nil, fail("piece %d: cannot read its length: %v", i, err)
		}
		if n < 0 || n > maxLen {
			return nil, fail("piece %d: length %d out of range [0, max_token_length=%d]", i, n, maxLen)
		}
		if _, err := io.ReadFull(br, piece[:n]); err != nil {
			return nil, fail("piece %d: cannot read its %d bytes: %v", i, n, err)
		}
		pieces = append(pieces, string(piece[:n]))
		scores = append(scores, math.Float32frombits(uint32(sc)))
	}
	if _, err := br.ReadByte(); err != io.EOF {
		if toEOF {
			return nil, fail("more than %d pieces", maxTokenizerVocab)
		}
		if err != nil {
			return nil, fail("reading past piece %d: %v", vocabSize-1, err)
		}
		return nil, fail("file has data after %d pieces: it holds more pieces than the model's vocab_size %d", vocabSize, vocabSize)
	}
	t, err := tokenizer.NewLlama2c(pieces, scores, int(maxLen))
	if err != nil {
		return nil, fail("%v", err)
	}
	return t, nil
}
