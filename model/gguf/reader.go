package gguf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"unicode/utf8"

	"github.com/stride-lm/stride/model/mapfile"
)

// Magic is the first four bytes of every GGUF file.
const Magic = "GGUF"

// DefaultAlignment is the data alignment when general.alignment is absent.
const DefaultAlignment = 32

// KeyAlignment is the metadata key that sets the data alignment.
const KeyAlignment = "general.alignment"

// maxDims is ggml's GGML_MAX_DIMS: a tensor has at most 4 extents.
const maxDims = 4

// TensorInfo describes one tensor as the file's header lists it.
type TensorInfo struct {
	Name string
	Type GGMLType
	// Ne is the extents as stored, innermost (contiguous) first.
	Ne []uint64
	// Shape is Ne reversed: PyTorch order, outermost first. A weight
	// matrix is [out, in].
	Shape []int
	// Offset is the tensor's position relative to the start of the data
	// section (File.DataOffset), a multiple of the alignment.
	Offset int64
	// Size is the tensor's byte size (0 when the type is unknown).
	Size int64
}

// Elements is the tensor's element count.
func (t TensorInfo) Elements() int64 {
	n := int64(1)
	for _, d := range t.Ne {
		n *= int64(d)
	}
	return n
}

// File is an opened GGUF file.
type File struct {
	name string

	// Version is the format version (2 or 3).
	Version uint32
	// Metadata is every key/value pair, in file order.
	Metadata []KV
	// Tensors is every tensor info, in file order.
	Tensors []TensorInfo
	// Alignment is the data alignment (general.alignment, default 32).
	Alignment int
	// DataOffset is the file offset of the data section.
	DataOffset int64

	index   map[string]int // metadata key → index in Metadata
	tensors map[string]int // tensor name → index in Tensors
	data    []byte         // the whole file (mapped, or read by Parse's caller)
	unmap   func([]byte) error
}

// Name is the path the file was opened from (or the name given to Parse).
func (f *File) Name() string { return f.name }

// Size is the file's size in bytes.
func (f *File) Size() int64 { return int64(len(f.data)) }

// Open maps the GGUF file at path and parses its header. Tensor data stays
// in the mapping; Close releases it. The path must name a regular file: a
// FIFO or a device is refused at once (mapfile.Open).
func Open(path string) (*File, error) {
	fd, _, err := mapfile.Open(path, false)
	if err != nil {
		return nil, fmt.Errorf("gguf: %s: %w", path, err)
	}
	defer fd.Close()
	return OpenFile(fd, path, false)
}

// OpenFile parses the GGUF file fd, named name in errors: mapped, or read
// into memory when noMmap is set or the platform cannot map. fd may be
// closed afterwards. The header is parsed under mapfile.CatchFault, so a
// file truncated while it is read is an error, not a SIGBUS.
func OpenFile(fd *os.File, name string, noMmap bool) (*File, error) {
	st, err := fd.Stat()
	if err != nil {
		return nil, fmt.Errorf("gguf: %s: %w", name, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("gguf: %s: %w", name, mapfile.ErrNotRegular)
	}
	if st.Size() < headerSize {
		return nil, fmt.Errorf("gguf: %s: %d bytes is too short for a GGUF header", name, st.Size())
	}
	var data []byte
	mapped := !noMmap && mapfile.Supported
	if mapped {
		if data, err = mapfile.Map(fd, st.Size()); err != nil {
			return nil, fmt.Errorf("gguf: %s: %w", name, err)
		}
	} else {
		if st.Size() > math.MaxInt {
			return nil, fmt.Errorf("gguf: %s: %d bytes do not fit in memory", name, st.Size())
		}
		data = make([]byte, st.Size())
		if _, err := fd.ReadAt(data, 0); err != nil {
			return nil, fmt.Errorf("gguf: %s: %w", name, err)
		}
	}
	var f *File
	err = mapfile.CatchFault(func() (err error) {
		f, err = Parse(data, name)
		return err
	})
	if err != nil {
		if mapped {
			_ = mapfile.Unmap(data)
		}
		if _, ok := err.(*mapfile.FaultError); ok {
			err = fmt.Errorf("gguf: %s: %w", name, err)
		}
		return nil, err
	}
	if mapped {
		f.unmap = mapfile.Unmap
	}
	return f, nil
}

// Mapped reports whether the file's bytes are a memory mapping (rather
// than memory it read).
func (f *File) Mapped() bool { return f.unmap != nil }

// Close releases the mapping. Every tensor view the File returned is
// invalid afterwards; metadata values stay valid (they are copies).
func (f *File) Close() error {
	if f.unmap == nil || f.data == nil {
		f.data = nil
		return nil
	}
	err := f.unmap(f.data)
	f.data, f.unmap = nil, nil
	return err
}

// headerSize is magic + version + the two counts.
const headerSize = 4 + 4 + 8 + 8

// Parse parses a whole GGUF file held in data. name is used in errors.
// Tensor views alias data.
func Parse(data []byte, name string) (*File, error) {
	f := &File{name: name, data: data}
	if err := f.parse(); err != nil {
		return nil, fmt.Errorf("gguf: %s: %w", name, err)
	}
	return f, nil
}

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

// count reads a uint64 count of items at least minSize bytes each and
// rejects it unless that many could fit in what remains of the file.
func (c *cursor) count(what string, minSize int) (int, error) {
	n, err := c.u64()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	if minSize > 0 && n > uint64(c.left()/minSize) {
		return 0, fmt.Errorf("%s %d cannot fit in the %d bytes left in the file", what, n, c.left())
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

func (f *File) parse() error {
	c := &cursor{b: f.data}
	if len(f.data) < headerSize {
		return fmt.Errorf("%d bytes is too short for a GGUF header", len(f.data))
	}
	magic, _ := c.take(4)
	if string(magic) != Magic {
		return fmt.Errorf("not a GGUF file (magic %q, want %q)", magic, Magic)
	}
	f.Version, _ = c.u32()
	switch {
	case f.Version == 2 || f.Version == 3:
	case f.Version == 1:
		return fmt.Errorf("GGUF version 1 (32-bit counts) is not supported; convert the file with a current llama.cpp")
	case f.Version&0xFFFF == 0 && f.Version>>16 != 0:
		return fmt.Errorf("GGUF version %d reads as a big-endian file, which is not supported", binary.BigEndian.Uint32(f.data[4:8]))
	default:
		return fmt.Errorf("GGUF version %d is not supported (2 and 3 are)", f.Version)
	}
	// The smallest entries: a tensor info with a 1-byte name and one
	// extent (name length, name, n_dims, ne[0], type, offset), and a
	// key/value with a 1-byte key and a 1-byte value.
	const minTensorInfo = 8 + 1 + 4 + 8 + 4 + 8
	const minKV = 8 + 1 + 4 + 1
	nt, err := c.u64()
	if err != nil {
		return err
	}
	nkv, err := c.u64()
	if err != nil {
		return err
	}
	// Both lists follow the counts: they must fit together.
	if nkv > uint64(c.left()/minKV) {
		return fmt.Errorf("metadata count %d cannot fit in the %d bytes left in the file", nkv, c.left())
	}
	if nt > uint64(c.left()/minTensorInfo) {
		return fmt.Errorf("tensor count %d cannot fit in the %d bytes left in the file", nt, c.left())
	}
	f.Metadata = make([]KV, 0, nkv)
	f.index = make(map[string]int, nkv)
	for i := 0; i < int(nkv); i++ {
		key, err := c.str(fmt.Sprintf("metadata key %d", i))
		if err != nil {
			return err
		}
		if err := checkName(key); err != nil {
			return fmt.Errorf("metadata key %d: %w", i, err)
		}
		if _, dup := f.index[key]; dup {
			return fmt.Errorf("metadata key %q appears twice", key)
		}
		t, err := c.u32()
		if err != nil {
			return fmt.Errorf("metadata key %q: %w", key, err)
		}
		v, err := c.value(ValueType(t), 0)
		if err != nil {
			return fmt.Errorf("metadata key %q: %w", key, err)
		}
		f.index[key] = len(f.Metadata)
		f.Metadata = append(f.Metadata, KV{Key: key, Value: v})
	}

	f.Alignment = DefaultAlignment
	if v, ok := f.Lookup(KeyAlignment); ok {
		a, isU := v.v.(uint64)
		if !isU || v.Type != TypeUint32 {
			return fmt.Errorf("%s is %s, not uint32", KeyAlignment, v.typeName())
		}
		if a == 0 || a&(a-1) != 0 || a > 1<<20 {
			return fmt.Errorf("%s = %d is not a power of two up to 1 MiB", KeyAlignment, a)
		}
		f.Alignment = int(a)
	}

	f.Tensors = make([]TensorInfo, 0, nt)
	f.tensors = make(map[string]int, nt)
	for i := 0; i < int(nt); i++ {
		ti, err := c.tensorInfo(i)
		if err != nil {
			return err
		}
		if _, dup := f.tensors[ti.Name]; dup {
			return fmt.Errorf("tensor %q appears twice", ti.Name)
		}
		if ti.Offset%int64(f.Alignment) != 0 {
			return fmt.Errorf("tensor %q: offset %d is not a multiple of the alignment %d", ti.Name, ti.Offset, f.Alignment)
		}
		f.tensors[ti.Name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, ti)
	}

	// The data section starts at the next multiple of the alignment. A
	// file with no tensors (a vocab-only GGUF) may end before it.
	start := alignUp(int64(c.off), int64(f.Alignment))
	f.DataOffset = start
	size := int64(len(f.data))
	for _, t := range f.Tensors {
		if !t.Type.Known() {
			continue
		}
		// Offset and Size are each below 2^62 (checked in tensorInfo), so
		// the sum cannot overflow.
		if end := start + t.Offset + t.Size; end > size {
			return fmt.Errorf("tensor %q (%s, %d bytes at data offset %d) ends at byte %d, beyond the file's %d bytes",
				t.Name, t.Type, t.Size, t.Offset, end, size)
		}
	}
	return nil
}

func alignUp(n, a int64) int64 { return (n + a - 1) / a * a }

// checkName rejects the empty string and invalid UTF-8 in keys and
// tensor names (the spec requires UTF-8; an error beats mojibake).
func checkName(s string) error {
	if s == "" {
		return errors.New("empty name")
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("name %q is not valid UTF-8", s)
	}
	return nil
}

func (c *cursor) tensorInfo(i int) (TensorInfo, error) {
	name, err := c.str(fmt.Sprintf("tensor %d name", i))
	if err != nil {
		return TensorInfo{}, err
	}
	if err := checkName(name); err != nil {
		return TensorInfo{}, fmt.Errorf("tensor %d: %w", i, err)
	}
	nd, err := c.u32()
	if err != nil {
		return TensorInfo{}, fmt.Errorf("tensor %q: %w", name, err)
	}
	if nd == 0 || nd > maxDims {
		return TensorInfo{}, fmt.Errorf("tensor %q has %d dimensions (1 to %d are allowed)", name, nd, maxDims)
	}
	ti := TensorInfo{Name: name, Ne: make([]uint64, nd), Shape: make([]int, nd)}
	elems := uint64(1)
	for d := range ti.Ne {
		n, err := c.u64()
		if err != nil {
			return TensorInfo{}, fmt.Errorf("tensor %q: %w", name, err)
		}
		// ggml limits a tensor to INT64_MAX elements; here the product
		// is held under 2^62 so that offsets and sizes never overflow.
		if n > 1<<62 || (n != 0 && elems > (1<<62)/n) {
			return TensorInfo{}, fmt.Errorf("tensor %q: extents %v overflow", name, ti.Ne[:d+1])
		}
		elems *= n
		ti.Ne[d] = n
		ti.Shape[int(nd)-1-d] = int(n)
	}
	t, err := c.u32()
	if err != nil {
		return TensorInfo{}, fmt.Errorf("tensor %q: %w", name, err)
	}
	ti.Type = GGMLType(t)
	off, err := c.u64()
	if err != nil {
		return TensorInfo{}, fmt.Errorf("tensor %q: %w", name, err)
	}
	if off > 1<<62 {
		return TensorInfo{}, fmt.Errorf("tensor %q: offset %d is beyond any file", name, off)
	}
	ti.Offset = int64(off)
	if tr, ok := ggmlTraits[ti.Type]; ok {
		if ti.Ne[0]%uint64(tr.block) != 0 {
			return TensorInfo{}, fmt.Errorf("tensor %q (%s): row length %d is not a multiple of the block size %d", name, ti.Type, ti.Ne[0], tr.block)
		}
		blocks := elems / uint64(tr.block)
		if blocks > (1<<62)/uint64(tr.size) {
			return TensorInfo{}, fmt.Errorf("tensor %q: size overflows", name)
		}
		ti.Size = int64(blocks * uint64(tr.size))
	}
	return ti, nil
}

// maxNesting bounds arrays of arrays (each level costs stack).
const maxNesting = 8

// value reads one value of type t. Arrays are checked against the bytes
// left before their slice is allocated: each element takes at least its
// scalar size (8 bytes for a string's length, 12 for a nested array's
// header).
func (c *cursor) value(t ValueType, depth int) (Value, error) {
	switch t {
	case TypeUint8, TypeUint16, TypeUint32, TypeUint64:
		s, err := c.take(t.size())
		if err != nil {
			return Value{}, err
		}
		return Value{Type: t, v: readUint(s)}, nil
	case TypeInt8, TypeInt16, TypeInt32, TypeInt64:
		s, err := c.take(t.size())
		if err != nil {
			return Value{}, err
		}
		return Value{Type: t, v: signExtend(readUint(s), t.size())}, nil
	case TypeFloat32:
		s, err := c.take(4)
		if err != nil {
			return Value{}, err
		}
		return Value{Type: t, v: float64(math.Float32frombits(binary.LittleEndian.Uint32(s)))}, nil
	case TypeFloat64:
		s, err := c.take(8)
		if err != nil {
			return Value{}, err
		}
		return Value{Type: t, v: math.Float64frombits(binary.LittleEndian.Uint64(s))}, nil
	case TypeBool:
		s, err := c.take(1)
		if err != nil {
			return Value{}, err
		}
		if s[0] > 1 {
			return Value{}, fmt.Errorf("bool byte is %d, not 0 or 1", s[0])
		}
		return Value{Type: t, v: s[0] == 1}, nil
	case TypeString:
		s, err := c.str("string")
		if err != nil {
			return Value{}, err
		}
		return Value{Type: t, v: s}, nil
	case TypeArray:
		if depth >= maxNesting {
			return Value{}, fmt.Errorf("arrays nested deeper than %d", maxNesting)
		}
		et, err := c.u32()
		if err != nil {
			return Value{}, err
		}
		return c.array(ValueType(et), depth)
	}
	return Value{}, fmt.Errorf("unknown value type %d", uint32(t))
}

func (c *cursor) array(et ValueType, depth int) (Value, error) {
	minSize := et.size()
	switch et {
	case TypeString:
		minSize = 8
	case TypeArray:
		minSize = 4 + 8
	}
	if minSize == 0 {
		return Value{}, fmt.Errorf("array of unknown value type %d", uint32(et))
	}
	n, err := c.count("array length", minSize)
	if err != nil {
		return Value{}, err
	}
	v := Value{Type: TypeArray, Elem: et}
	if sz := et.size(); sz > 0 {
		raw, _ := c.take(n * sz) // fits: count checked n·sz ≤ left
		v.v, err = decodeScalars(et, raw, n)
		return v, err
	}
	switch et {
	case TypeString:
		a := make([]string, n)
		for i := range a {
			if a[i], err = c.str(fmt.Sprintf("array element %d", i)); err != nil {
				return Value{}, err
			}
		}
		v.v = a
	case TypeArray:
		a := make([]Value, n)
		for i := range a {
			if a[i], err = c.value(TypeArray, depth+1); err != nil {
				return Value{}, fmt.Errorf("array element %d: %w", i, err)
			}
			if i > 0 && a[i].Elem != a[0].Elem {
				return Value{}, fmt.Errorf("array element %d holds %s, element 0 %s", i, a[i].Elem, a[0].Elem)
			}
		}
		v.v = a
	}
	return v, nil
}

func readUint(s []byte) uint64 {
	switch len(s) {
	case 1:
		return uint64(s[0])
	case 2:
		return uint64(binary.LittleEndian.Uint16(s))
	case 4:
		return uint64(binary.LittleEndian.Uint32(s))
	}
	return binary.LittleEndian.Uint64(s)
}

func signExtend(u uint64, size int) int64 {
	shift := 64 - 8*uint(size)
	return int64(u<<shift) >> shift
}

// decodeScalars converts n packed scalars of type et into a typed slice.
func decodeScalars(et ValueType, raw []byte, n int) (any, error) {
	le := binary.LittleEndian
	switch et {
	case TypeUint8:
		return append([]uint8(nil), raw...), nil
	case TypeInt8:
		a := make([]int8, n)
		for i := range a {
			a[i] = int8(raw[i])
		}
		return a, nil
	case TypeBool:
		a := make([]bool, n)
		for i := range a {
			if raw[i] > 1 {
				return nil, fmt.Errorf("array element %d: bool byte is %d, not 0 or 1", i, raw[i])
			}
			a[i] = raw[i] == 1
		}
		return a, nil
	case TypeUint16:
		a := make([]uint16, n)
		for i := range a {
			a[i] = le.Uint16(raw[2*i:])
		}
		return a, nil
	case TypeInt16:
		a := make([]int16, n)
		for i := range a {
			a[i] = int16(le.Uint16(raw[2*i:]))
		}
		return a, nil
	case TypeUint32:
		a := make([]uint32, n)
		for i := range a {
			a[i] = le.Uint32(raw[4*i:])
		}
		return a, nil
	case TypeInt32:
		a := make([]int32, n)
		for i := range a {
			a[i] = int32(le.Uint32(raw[4*i:]))
		}
		return a, nil
	case TypeFloat32:
		a := make([]float32, n)
		for i := range a {
			a[i] = math.Float32frombits(le.Uint32(raw[4*i:]))
		}
		return a, nil
	case TypeUint64:
		a := make([]uint64, n)
		for i := range a {
			a[i] = le.Uint64(raw[8*i:])
		}
		return a, nil
	case TypeInt64:
		a := make([]int64, n)
		for i := range a {
			a[i] = int64(le.Uint64(raw[8*i:]))
		}
		return a, nil
	case TypeFloat64:
		a := make([]float64, n)
		for i := range a {
			a[i] = math.Float64frombits(le.Uint64(raw[8*i:]))
		}
		return a, nil
	}
	return nil, fmt.Errorf("array of unknown value type %d", uint32(et))
}

// Tensor returns the info of the named tensor.
func (f *File) Tensor(name string) (TensorInfo, bool) {
	i, ok := f.tensors[name]
	if !ok {
		return TensorInfo{}, false
	}
	return f.Tensors[i], true
}

// TensorData returns the named tensor's bytes: a zero-copy view of the
// mapping, valid until Close. Its capacity ends with the tensor, so an
// append cannot spill into the next one.
func (f *File) TensorData(name string) ([]byte, error) {
	t, ok := f.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("gguf: %s has no tensor %q", f.name, name)
	}
	return f.Data(t)
}

// Data returns the bytes of t (one of f.Tensors), as TensorData does.
func (f *File) Data(t TensorInfo) ([]byte, error) {
	if f.data == nil {
		return nil, fmt.Errorf("gguf: %s is closed", f.name)
	}
	if !t.Type.Known() {
		return nil, fmt.Errorf("gguf: %s: tensor %q has ggml type %d, which this reader does not know", f.name, t.Name, uint32(t.Type))
	}
	lo := f.DataOffset + t.Offset
	hi := lo + t.Size
	if lo < 0 || hi > int64(len(f.data)) { // guaranteed by parse, unless t is foreign
		return nil, fmt.Errorf("gguf: %s: tensor %q lies beyond the file", f.name, t.Name)
	}
	return f.data[lo:hi:hi], nil
}
