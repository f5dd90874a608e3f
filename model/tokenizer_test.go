package model

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"

	"github.com/stride-lm/stride/model/tokenizer"
)

// LoadTokenizer reads a llama2.c tokenizer.bin fixture for this package's
// tests. The real reader, which validates every field, is
// llama2c.LoadTokenizer; these internal tests cannot import package
// llama2c (it imports model), and the fixtures are known good.
func LoadTokenizer(path string, vocab int) (*tokenizer.Tokenizer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	if len(b) < 4 {
		return nil, fmt.Errorf("%s: too short", path)
	}
	maxLen, off := int(le.Uint32(b)), 4
	var pieces []string
	var scores []float32
	for i := 0; i < vocab; i++ {
		if off+8 > len(b) || off+8+int(le.Uint32(b[off+4:])) > len(b) {
			return nil, fmt.Errorf("%s: ends at piece %d", path, i)
		}
		n := int(le.Uint32(b[off+4:]))
		scores = append(scores, math.Float32frombits(le.Uint32(b[off:])))
		pieces = append(pieces, string(b[off+8:off+8+n]))
		off += 8 + n
	}
	return tokenizer.NewLlama2c(pieces, scores, maxLen)
}
