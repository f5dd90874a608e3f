package gguf

import (
	"fmt"
	"math/bits"
)

// Magic is the first four bytes of every GGUF file.
const Magic = "GGUF"

// headerSize is magic + version + the two counts.
const headerSize = 4 + 4 + 8 + 8

// The smallest entries: a tensor info with a 1-byte name and one extent
// (name length, name, n_dims, ne[0], type, offset), and a key/value with a
// 1-byte key and a 1-byte value. They bound the counts before any list is
// allocated.
const (
	minTensorInfo = 8 + 1 + 4 + 8 + 4 + 8
	minKV         = 8 + 1 + 4 + 1
)

// parse reads the file in its order: header, metadata (which sets the
// alignment), tensor infos, and then checks that every tensor's data lies
// within the file. Each step validates its counts, lengths and offsets
// against the bytes left before it allocates.
func (f *File) parse() error {
	c := &cursor{b: f.data}
	nt, nkv, err := f.parseHeader(c)
	if err != nil {
		return err
	}
	if err := f.parseMetadata(c, nkv); err != nil {
		return err
	}
	if err := f.parseAlignment(); err != nil {
		return err
	}
	if err := f.parseTensorInfos(c, nt); err != nil {
		return err
	}
	return f.checkDataSection(int64(c.off))
}

// parseHeader reads magic, version and the two counts, and rejects counts
// whose lists could not fit in the rest of the file.
func (f *File) parseHeader(c *cursor) (nt, nkv int, err error) {
	if len(f.data) < headerSize {
		return 0, 0, fmt.Errorf("%d bytes is too short for a GGUF header", len(f.data))
	}
	magic, _ := c.take(4)
	if string(magic) != Magic {
		return 0, 0, fmt.Errorf("not a GGUF file (magic %q, want %q)", magic, Magic)
	}
	f.Version, _ = c.u32()
	if err := checkVersion(f.Version); err != nil {
		return 0, 0, err
	}
	nt64, err := c.u64()
	if err != nil {
		return 0, 0, err
	}
	nkv64, err := c.u64()
	if err != nil {
		return 0, 0, err
	}
	// Both lists follow the counts: they must fit together.
	if err := c.fits("metadata count", nkv64, minKV); err != nil {
		return 0, 0, err
	}
	if err := c.fits("tensor count", nt64, minTensorInfo); err != nil {
		return 0, 0, err
	}
	return int(nt64), int(nkv64), nil
}

// checkVersion accepts versions 2 and 3, and says why any other is
// refused: version 1 had 32-bit counts, and a version whose low half is
// zero is a small number stored big-endian.
func checkVersion(v uint32) error {
	switch {
	case v == 2 || v == 3:
		return nil
	case v == 1:
		return fmt.Errorf("GGUF version 1 (32-bit counts) is not supported; convert the file with a current llama.cpp")
	case v&0xFFFF == 0 && v>>16 != 0:
		return fmt.Errorf("GGUF version %d reads as a big-endian file, which is not supported", bits.ReverseBytes32(v))
	}
	return fmt.Errorf("GGUF version %d is not supported (2 and 3 are)", v)
}
