package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/stride-lm/stride/tensor/kernels"
)

// WriterTensor is one tensor for Write: its name, ggml type, extents in
// PyTorch order (outermost first, as TensorInfo.Shape) and its encoded
// bytes.
type WriterTensor struct {
	Name  string
	Type  kernels.GGMLType
	Shape []int
	Data  []byte
}

// Write writes a GGUF version 3 file: the metadata in the order given,
// then the tensor infos, then the data, each tensor padded to the
// alignment (general.alignment when kvs sets it, else 32), as llama.cpp's
// gguf writer lays files out: a file the reader parsed is written back
// byte for byte. Every tensor's Data must be exactly the size
// its type and shape imply.
func Write(w io.Writer, kvs []KV, tensors []WriterTensor) error {
	align := DefaultAlignment
	seen := make(map[string]bool, len(kvs))
	for _, kv := range kvs {
		if err := checkName(kv.Key); err != nil {
			return fmt.Errorf("gguf: write: metadata key: %w", err)
		}
		if seen[kv.Key] {
			return fmt.Errorf("gguf: write: metadata key %q given twice", kv.Key)
		}
		seen[kv.Key] = true
		if kv.Key == KeyAlignment {
			a, ok := kv.Value.v.(uint64)
			if !ok || kv.Value.Type != TypeUint32 || a == 0 || a&(a-1) != 0 || a > 1<<20 {
				return fmt.Errorf("gguf: write: %s must be a uint32 power of two up to 1 MiB", KeyAlignment)
			}
			align = int(a)
		}
	}
	offsets := make([]int64, len(tensors))
	var off int64
	names := make(map[string]bool, len(tensors))
	for i, t := range tensors {
		if err := checkName(t.Name); err != nil {
			return fmt.Errorf("gguf: write: tensor %d: %w", i, err)
		}
		if names[t.Name] {
			return fmt.Errorf("gguf: write: tensor %q given twice", t.Name)
		}
		names[t.Name] = true
		size, err := encodedSize(t)
		if err != nil {
			return err
		}
		if int64(len(t.Data)) != size {
			return fmt.Errorf("gguf: write: tensor %q (%s %v) needs %d bytes, has %d", t.Name, t.Type, t.Shape, size, len(t.Data))
		}
		offsets[i] = off
		off = alignUp(off+size, int64(align))
	}

	bw := &binWriter{w: bufio.NewWriterSize(w, 1<<16)}
	bw.raw([]byte(Magic))
	bw.u32(3)
	bw.u64(uint64(len(tensors)))
	bw.u64(uint64(len(kvs)))
	for _, kv := range kvs {
		bw.str(kv.Key)
		bw.u32(uint32(kv.Value.Type))
		if err := bw.value(kv.Value); err != nil {
			return fmt.Errorf("gguf: write: metadata key %q: %w", kv.Key, err)
		}
	}
	for i, t := range tensors {
		bw.str(t.Name)
		bw.u32(uint32(len(t.Shape)))
		for d := len(t.Shape) - 1; d >= 0; d-- { // ne: innermost first
			bw.u64(uint64(t.Shape[d]))
		}
		bw.u32(uint32(t.Type))
		bw.u64(uint64(offsets[i]))
	}
	// gguf-py writes no padding after the infos of a file without tensors
	// (the vocab-only files); llama.cpp pads after every tensor's data.
	if len(tensors) > 0 {
		bw.pad(align)
	}
	for _, t := range tensors {
		bw.raw(t.Data)
		bw.pad(align)
	}
	if bw.err != nil {
		return fmt.Errorf("gguf: write: %w", bw.err)
	}
	if err := bw.w.Flush(); err != nil {
		return fmt.Errorf("gguf: write: %w", err)
	}
	return nil
}

// encodedSize is the byte size of t's data, from its type and shape.
func encodedSize(t WriterTensor) (int64, error) {
	tr := t.Type
	if !tr.Known() {
		return 0, fmt.Errorf("gguf: write: tensor %q: unknown ggml type %d", t.Name, uint32(t.Type))
	}
	if len(t.Shape) == 0 || len(t.Shape) > maxDims {
		return 0, fmt.Errorf("gguf: write: tensor %q has %d dimensions (1 to %d are allowed)", t.Name, len(t.Shape), maxDims)
	}
	n := int64(1)
	for _, d := range t.Shape {
		if d < 0 || (d > 0 && n > (1<<62)/int64(d)) {
			return 0, fmt.Errorf("gguf: write: tensor %q: bad shape %v", t.Name, t.Shape)
		}
		n *= int64(d)
	}
	if inner := t.Shape[len(t.Shape)-1]; inner%tr.BlockSize() != 0 {
		return 0, fmt.Errorf("gguf: write: tensor %q (%s): row length %d is not a multiple of the block size %d", t.Name, t.Type, inner, tr.BlockSize())
	}
	return n / int64(tr.BlockSize()) * int64(tr.BlockBytes()), nil
}

// binWriter writes little-endian values, keeping the first error and the
// byte count (for padding).
type binWriter struct {
	w   *bufio.Writer
	n   int64
	err error
	buf [8]byte
}

func (b *binWriter) raw(p []byte) {
	if b.err != nil {
		return
	}
	var k int
	k, b.err = b.w.Write(p)
	b.n += int64(k)
}

func (b *binWriter) u8(v uint8)   { b.raw([]byte{v}) }
func (b *binWriter) u16(v uint16) { binary.LittleEndian.PutUint16(b.buf[:], v); b.raw(b.buf[:2]) }
func (b *binWriter) u32(v uint32) { binary.LittleEndian.PutUint32(b.buf[:], v); b.raw(b.buf[:4]) }
func (b *binWriter) u64(v uint64) { binary.LittleEndian.PutUint64(b.buf[:], v); b.raw(b.buf[:8]) }
func (b *binWriter) str(s string) { b.u64(uint64(len(s))); b.raw([]byte(s)) }

func (b *binWriter) pad(align int) {
	if r := b.n % int64(align); r != 0 {
		b.raw(make([]byte, int64(align)-r))
	}
}

// scalar writes one scalar of type t from its widened Go value.
func (b *binWriter) scalar(t ValueType, x any) error {
	switch t {
	case TypeUint8, TypeUint16, TypeUint32, TypeUint64, TypeInt8, TypeInt16, TypeInt32, TypeInt64:
		var u uint64
		switch x := x.(type) {
		case uint64:
			u = x
		case int64:
			u = uint64(x)
		default:
			return fmt.Errorf("%s value holds a %T", t, x)
		}
		switch t.size() {
		case 1:
			b.u8(uint8(u))
		case 2:
			b.u16(uint16(u))
		case 4:
			b.u32(uint32(u))
		default:
			b.u64(u)
		}
	case TypeFloat32, TypeFloat64:
		f, ok := x.(float64)
		if !ok {
			return fmt.Errorf("%s value holds a %T", t, x)
		}
		if t == TypeFloat32 {
			b.u32(math.Float32bits(float32(f)))
		} else {
			b.u64(math.Float64bits(f))
		}
	case TypeBool:
		v, ok := x.(bool)
		if !ok {
			return fmt.Errorf("bool value holds a %T", x)
		}
		if v {
			b.u8(1)
		} else {
			b.u8(0)
		}
	case TypeString:
		s, ok := x.(string)
		if !ok {
			return fmt.Errorf("string value holds a %T", x)
		}
		b.str(s)
	default:
		return fmt.Errorf("unknown value type %d", uint32(t))
	}
	return nil
}

func (b *binWriter) value(v Value) error {
	if v.Type != TypeArray {
		return b.scalar(v.Type, v.v)
	}
	b.u32(uint32(v.Elem))
	b.u64(uint64(v.Len()))
	var err error
	each := func(n int, at func(int) any) {
		for i := 0; i < n && err == nil; i++ {
			err = b.scalar(v.Elem, at(i))
		}
	}
	switch a := v.v.(type) {
	case []uint8:
		b.raw(a)
	case []int8:
		each(len(a), func(i int) any { return int64(a[i]) })
	case []uint16:
		each(len(a), func(i int) any { return uint64(a[i]) })
	case []int16:
		each(len(a), func(i int) any { return int64(a[i]) })
	case []uint32:
		each(len(a), func(i int) any { return uint64(a[i]) })
	case []int32:
		each(len(a), func(i int) any { return int64(a[i]) })
	case []uint64:
		each(len(a), func(i int) any { return a[i] })
	case []int64:
		each(len(a), func(i int) any { return a[i] })
	case []float32:
		// float32 elements are written from their bits, not through
		// float64, so a NaN payload survives the round trip.
		for _, x := range a {
			b.u32(math.Float32bits(x))
		}
	case []float64:
		each(len(a), func(i int) any { return a[i] })
	case []bool:
		each(len(a), func(i int) any { return a[i] })
	case []string:
		each(len(a), func(i int) any { return a[i] })
	case []Value:
		for _, e := range a {
			if err = b.value(e); err != nil {
				break
			}
		}
	default:
		return fmt.Errorf("array holds a %T", v.v)
	}
	return err
}
