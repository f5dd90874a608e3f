package safetensors

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"unicode/utf8"
)

// MaxHeaderSize bounds the JSON header, as the reference implementation
// does (100 MB): a header length beyond it is an error before anything
// is allocated. Real headers are a few hundred bytes per tensor.
const MaxHeaderSize = 100_000_000

// DType is a tensor's element type, as the header spells it.
type DType string

// The element types of the format.
const (
	BOOL   DType = "BOOL"
	U8     DType = "U8"
	I8     DType = "I8"
	F8E5M2 DType = "F8_E5M2"
	F8E4M3 DType = "F8_E4M3"
	I16    DType = "I16"
	U16    DType = "U16"
	F16    DType = "F16"
	BF16   DType = "BF16"
	I32    DType = "I32"
	U32    DType = "U32"
	F32    DType = "F32"
	F64    DType = "F64"
	I64    DType = "I64"
	U64    DType = "U64"
)

var dtypeSizes = map[DType]int{
	BOOL: 1, U8: 1, I8: 1, F8E5M2: 1, F8E4M3: 1,
	I16: 2, U16: 2, F16: 2, BF16: 2,
	I32: 4, U32: 4, F32: 4,
	F64: 8, I64: 8, U64: 8,
}

// Size is the bytes of one element, or 0 for a dtype the format does not
// define.
func (d DType) Size() int { return dtypeSizes[d] }

// TensorInfo is one header entry. Begin and End are absolute offsets in
// the file (the header's data_offsets plus the buffer's start).
type TensorInfo struct {
	Name       string
	DType      DType
	Shape      []int
	Begin, End int64
}

// Elements is the product of the shape (1 for a scalar).
func (ti TensorInfo) Elements() int64 {
	n := int64(1)
	for _, d := range ti.Shape {
		n *= int64(d)
	}
	return n
}

// Header is a parsed, validated safetensors header.
type Header struct {
	// Tensors in the order the JSON lists them.
	Tensors []TensorInfo
	// Metadata is the "__metadata__" map (string to string), or nil.
	Metadata map[string]string
	// DataOffset is where the byte buffer starts: 8 + the header length.
	DataOffset int64
}

// maxDimension bounds each dimension of a shape, so that the product of
// a shape never overflows before it is compared with the file size.
const maxDimension = 1 << 40

// ReadHeader reads and validates the header of a safetensors file of
// size bytes from r. Errors say what is wrong, without the file's name
// (callers prefix it).
func ReadHeader(r io.ReaderAt, size int64) (*Header, error) {
	if size < 8 {
		return nil, fmt.Errorf("%d bytes is too short for a safetensors file (8-byte header length first)", size)
	}
	var lenBuf [8]byte
	if _, err := r.ReadAt(lenBuf[:], 0); err != nil {
		return nil, fmt.Errorf("reading the header length: %w", err)
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > MaxHeaderSize {
		return nil, fmt.Errorf("header length %d exceeds the limit of %d bytes", n, MaxHeaderSize)
	}
	if int64(n) > size-8 {
		return nil, fmt.Errorf("header length %d exceeds the %d bytes after the length field", n, size-8)
	}
	if n < 2 {
		return nil, fmt.Errorf("header length %d is too short for a JSON object", n)
	}
	buf := make([]byte, n) // n <= MaxHeaderSize and within the file
	if _, err := r.ReadAt(buf, 8); err != nil {
		return nil, fmt.Errorf("reading the %d-byte header: %w", n, err)
	}
	return parseHeader(buf, size)
}

// tensorEntry is a header entry as JSON. Unknown fields are ignored, as
// the reference implementation ignores them.
type tensorEntry struct {
	DType       *string   `json:"dtype"`
	Shape       *[]int64  `json:"shape"`
	DataOffsets *[]uint64 `json:"data_offsets"`
}

// parseHeader parses the JSON header buf of a file of size bytes.
func parseHeader(buf []byte, size int64) (*Header, error) {
	if buf[0] != '{' {
		return nil, fmt.Errorf("header does not start with '{' (byte %#x)", buf[0])
	}
	if !utf8.Valid(buf) {
		return nil, errors.New("header is not valid UTF-8")
	}
	h := &Header{DataOffset: 8 + int64(len(buf))}
	bufLen := size - h.DataOffset
	dec := json.NewDecoder(bytes.NewReader(buf))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("header is not a JSON object: %v", err)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("header JSON: %w", err)
		}
		name, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("header JSON: key %v is not a string", tok)
		}
		if seen[name] {
			return nil, fmt.Errorf("header names %q twice", name)
		}
		seen[name] = true
		if name == "__metadata__" {
			if err := dec.Decode(&h.Metadata); err != nil {
				return nil, fmt.Errorf("header __metadata__ must map strings to strings: %v", err)
			}
			continue
		}
		var e tensorEntry
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("tensor %q: %v", name, err)
		}
		ti, err := checkEntry(name, e, h.DataOffset, bufLen)
		if err != nil {
			return nil, err
		}
		h.Tensors = append(h.Tensors, ti)
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, fmt.Errorf("header JSON object is not closed: %v", err)
	}
	// After the object only padding may follow: writers pad with spaces;
	// like the reference's JSON parser, any JSON whitespace is accepted.
	rest := buf[dec.InputOffset():]
	if len(bytes.TrimRight(rest, " \t\r\n")) != 0 {
		return nil, fmt.Errorf("header has %d bytes after its JSON object that are not padding", len(rest))
	}
	return h, checkTiling(h.Tensors, h.DataOffset, bufLen)
}

// checkEntry validates one tensor entry against the byte buffer of
// bufLen bytes starting at base.
func checkEntry(name string, e tensorEntry, base, bufLen int64) (TensorInfo, error) {
	fail := func(format string, a ...any) (TensorInfo, error) {
		return TensorInfo{}, fmt.Errorf("tensor %q: "+format, append([]any{name}, a...)...)
	}
	if name == "" {
		return fail("empty tensor name")
	}
	if e.DType == nil || e.Shape == nil || e.DataOffsets == nil {
		return fail("needs dtype, shape and data_offsets")
	}
	dt := DType(*e.DType)
	if dt.Size() == 0 {
		return fail("unknown dtype %q", *e.DType)
	}
	shape := make([]int, len(*e.Shape))
	empty := false
	for i, d := range *e.Shape {
		if d < 0 || d > maxDimension {
			return fail("dimension %d of shape %v is out of range", i, *e.Shape)
		}
		shape[i] = int(d)
		empty = empty || d == 0
	}
	n := int64(0)
	if !empty {
		// Multiply up with the bound checked first: the product never
		// exceeds the buffer's length, so it cannot overflow.
		n = 1
		for _, d := range *e.Shape {
			if n > bufLen/d {
				return fail("shape %v holds more elements than the file has bytes", *e.Shape)
			}
			n *= d
		}
	}
	offs := *e.DataOffsets
	if len(offs) != 2 {
		return fail("data_offsets has %d values, want [begin, end]", len(offs))
	}
	begin, end := offs[0], offs[1]
	if begin > end || end > uint64(bufLen) {
		return fail("data_offsets [%d, %d] lie outside the %d-byte data buffer", begin, end, bufLen)
	}
	want := n * int64(dt.Size()) // n <= bufLen, so no overflow
	if int64(end-begin) != want {
		return fail("data_offsets [%d, %d] span %d bytes; %s of shape %v needs %d", begin, end, end-begin, dt, *e.Shape, want)
	}
	return TensorInfo{Name: name, DType: dt, Shape: shape, Begin: base + int64(begin), End: base + int64(end)}, nil
}

// checkTiling checks that the tensors cover the byte buffer exactly:
// sorted by offset, each starts where the previous ended, and the last
// ends at the end of the file.
func checkTiling(ts []TensorInfo, base, bufLen int64) error {
	order := make([]int, len(ts))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(ts[a].Begin, ts[b].Begin), cmp.Compare(ts[a].End, ts[b].End))
	})
	at := base
	for _, i := range order {
		if ts[i].Begin != at {
			if ts[i].Begin < at {
				return fmt.Errorf("tensor %q overlaps the tensor before it (starts at buffer offset %d, before %d)", ts[i].Name, ts[i].Begin-base, at-base)
			}
			return fmt.Errorf("the data buffer has a hole at offset %d before tensor %q", at-base, ts[i].Name)
		}
		at = ts[i].End
	}
	if at != base+bufLen {
		return fmt.Errorf("the tensors cover %d of the %d bytes of the data buffer", at-base, bufLen)
	}
	return nil
}
