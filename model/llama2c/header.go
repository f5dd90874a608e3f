package llama2c

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/stride-lm/stride/model"
)

// Format is the on-disk layout of a llama2.c checkpoint.
type Format int

const (
	// FormatLegacy is the format run.c reads: a 28-byte header of seven
	// little-endian int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads,
	// vocab_size, seq_len), then float32 tensors grouped by kind across
	// layers, two unused RoPE tables, and the classifier only when
	// vocab_size is negative.
	FormatLegacy Format = iota
	// FormatV1 is llama2.c export.py's "version 1": a 256-byte header
	// (magic, version, the same seven int32, a shared-classifier byte, zero
	// padding), then float32 tensors with the norms first and no RoPE tables.
	FormatV1
	// FormatV2 is llama2.c export.py's "version 2" (what runq.c reads): the
	// version-1 header with version 2 and an int32 group size after the
	// shared-classifier byte, then the float32 norms, then every weight
	// matrix as int8 values followed by its float32 group scales.
	FormatV2
)

// String names the format.
func (f Format) String() string {
	switch f {
	case FormatLegacy:
		return "llama2.c legacy"
	case FormatV1:
		return "llama2.c version 1"
	case FormatV2:
		return "llama2.c version 2"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

const (
	// v1Magic is "ak42" read as a little-endian uint32. A legacy file
	// starts with dim instead, and dim = 0x616b3432 is far beyond the
	// largest dim a Config accepts, so the two formats cannot be confused.
	v1Magic          = 0x616b3432
	v1HeaderSize     = 256
	legacyHeaderSize = 7 * 4
	// v2GroupSizeAt is the byte offset of a version-2 header's group size:
	// magic(4) version(4) seven int32 (28) shared(1). It is unaligned, as
	// export.py's struct.pack writes it.
	v2GroupSizeAt = 8 + legacyHeaderSize + 1
)

// Header is the validated header of a checkpoint: its format, the model
// configuration it declares and the exact size in bytes the file must have.
type Header struct {
	Format Format
	Config model.Config
	Size   int64
	// GroupSize is the Q8 group size of a version-2 file (0 otherwise).
	GroupSize int
}

// ReadHeader reads and validates the header of a checkpoint of size bytes,
// without reading or allocating any weights: the configuration must pass
// Config.Validate, the byte size it implies (computed in int64 with
// overflow checks) must equal size exactly, and seq_len must be plausible
// for the file (see checkSeqLen). A header claiming terabytes of weights
// is therefore rejected in O(1) memory, whatever it says. The returned
// Config has llama2.c's RopeTheta (10000) and NormEps (1e-5) and F32
// dtypes. Errors are *Error values naming name.
func ReadHeader(r io.ReaderAt, size int64, name string) (Header, error) {
	h, err := parseHeader(r, size)
	if err == nil {
		err = validate(&h, size)
	}
	if err != nil {
		return Header{}, checkpointError(name, err)
	}
	return h, nil
}

// parseHeader decodes the header fields of a file of size bytes: which
// format (the "ak42" magic, else legacy), the seven ints, the shared
// classifier and the group size. It checks only what the bytes themselves
// can get wrong (lengths, version, flag byte, padding); validate checks
// what they mean.
func parseHeader(r io.ReaderAt, size int64) (Header, error) {
	if size < legacyHeaderSize {
		return Header{}, fmt.Errorf("file is %d bytes, too short for a header (at least %d)", size, legacyHeaderSize)
	}
	var hdr [v1HeaderSize]byte
	n := min(int64(len(hdr)), size)
	if got, err := r.ReadAt(hdr[:n], 0); int64(got) != n {
		return Header{}, fmt.Errorf("cannot read the header: %v", err)
	}
	le := binary.LittleEndian
	h := Header{Format: FormatLegacy}
	ints := hdr[0:legacyHeaderSize]
	var sharedByte byte = 1
	if le.Uint32(hdr[0:]) == v1Magic {
		if size < v1HeaderSize {
			return Header{}, fmt.Errorf("file is %d bytes, too short for a version-1/2 header (%d)", size, v1HeaderSize)
		}
		padFrom := v2GroupSizeAt
		switch v := int32(le.Uint32(hdr[4:])); v {
		case 1:
			h.Format = FormatV1
		case 2:
			h.Format = FormatV2
			h.GroupSize = int(int32(le.Uint32(hdr[v2GroupSizeAt:])))
			padFrom += 4
		default:
			return Header{}, fmt.Errorf("unsupported export version %d (supported: 1, float32; 2, Q8_0)", v)
		}
		ints = hdr[8 : 8+legacyHeaderSize]
		sharedByte = hdr[8+legacyHeaderSize]
		if sharedByte > 1 {
			return Header{}, fmt.Errorf("%s header: shared_classifier byte is %d, want 0 or 1", h.Format, sharedByte)
		}
		for i := padFrom; i < v1HeaderSize; i++ {
			if hdr[i] != 0 {
				return Header{}, fmt.Errorf("%s header: padding byte %d is %#x, want 0", h.Format, i, hdr[i])
			}
		}
	}
	var v [7]int64
	for i := range v {
		v[i] = int64(int32(le.Uint32(ints[4*i:])))
	}
	shared := sharedByte == 1
	vocab := v[5]
	if h.Format == FormatLegacy {
		// llama2.c's legacy export negates vocab_size to say that an
		// unshared classifier follows the RoPE tables.
		shared = vocab > 0
		if vocab < 0 {
			vocab = -vocab // int64, so -MinInt32 does not overflow
		}
	}
	h.Config = model.Config{
		Dim: int(v[0]), HiddenDim: int(v[1]), NLayers: int(v[2]),
		NHeads: int(v[3]), NKVHeads: int(v[4]), VocabSize: int(vocab), SeqLen: int(v[6]),
		RopeTheta: 10000, NormEps: 1e-5, SharedClassifier: shared,
	}
	return h, nil
}

// describe is the header's configuration in one line, for errors.
func describe(c model.Config) string {
	return fmt.Sprintf("dim %d, hidden_dim %d, n_layers %d, n_heads %d, n_kv_heads %d, vocab_size %d, seq_len %d, %s classifier",
		c.Dim, c.HiddenDim, c.NLayers, c.NHeads, c.NKVHeads, c.VocabSize, c.SeqLen, sharedWord(c.SharedClassifier))
}

func sharedWord(shared bool) string {
	if shared {
		return "shared"
	}
	return "unshared"
}
