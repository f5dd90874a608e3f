package gguf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// cursor reads little-endian values from the file, checking every read
// against what remains so nothing is read, or allocated, past the end.
type cursor struct {
	b   []byte
	off int
}

var errShort = errors.New("unexpected end of file")

func (c *cursor) left() int { return len(c.b) - c.off }

func (c *cursor) take(n int) ([]byte, error) {
	if n < 0 || n > c.left() {
		return nil, errShort
	}
	s := c.b[c.off : c.off+n]
	c.off += n
	return s, nil
}

func (c *cursor) u32() (uint32, error) {
	s, err := c.take(4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(s), nil
}

func (c *cursor) u64() (uint64, error) {
	s, err := c.take(8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(s), nil
}

// fits rejects a count of n items of at least minSize (≥ 1) bytes each
// unless that many could fit in what remains of the file, so no list is
// allocated that the file cannot fill.
func (c *cursor) fits(what string, n uint64, minSize int) error {
	if n > uint64(c.left()/minSize) {
		return fmt.Errorf("%s %d cannot fit in the %d bytes left in the file", what, n, c.left())
	}
	return nil
}

// count reads a uint64 count of items at least minSize (≥ 1) bytes each
// and checks it with fits.
func (c *cursor) count(what string, minSize int) (int, error) {
	n, err := c.u64()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	if err := c.fits(what, n, minSize); err != nil {
		return 0, err
	}
	if n > math.MaxInt32 {
		return 0, fmt.Errorf("%s %d is beyond the supported maximum", what, n)
	}
	return int(n), nil
}

// str reads a length-prefixed string (copied, so it outlives the mapping).
func (c *cursor) str(what string) (string, error) {
	n, err := c.u64()
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	if n > uint64(c.left()) {
		return "", fmt.Errorf("%s length %d is beyond the %d bytes left in the file", what, n, c.left())
	}
	s, _ := c.take(int(n))
	return string(s), nil
}
