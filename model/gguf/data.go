package gguf

import (
	"cmp"
	"fmt"
	"slices"
)

// checkDataSection places the data section at the first multiple of the
// alignment at or after headerEnd, and checks that every tensor of a known
// type ends within the file. A file with no tensors (a vocab-only GGUF)
// may end before the data section starts.
func (f *File) checkDataSection(headerEnd int64) error {
	start := alignUp(headerEnd, int64(f.Alignment))
	f.DataOffset = start
	size := int64(len(f.data))
	for _, t := range f.Tensors {
		if !t.Type.Known() {
			continue
		}
		// Offset and Size are each below maxExtent (checked in
		// tensorInfo), so the sum cannot overflow.
		if end := start + t.Offset + t.Size; end > size {
			return fmt.Errorf("tensor %q (%s, %d bytes at data offset %d) ends at byte %d, beyond the file's %d bytes",
				t.Name, t.Type, t.Size, t.Offset, end, size)
		}
	}
	return f.checkOverlaps()
}

// checkOverlaps refuses two tensors whose byte ranges share a byte: each
// would read the other's weights (or, when one's type claims more bytes
// than were written for it, the next tensor's). llama.cpp goes further
// and requires every offset to follow the previous tensor's padded end
// (docs/formats.md); Stride accepts any order and gaps, not overlaps.
func (f *File) checkOverlaps() error {
	order := make([]int, 0, len(f.Tensors))
	for i, t := range f.Tensors {
		if t.Type.Known() && t.Size > 0 {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(f.Tensors[a].Offset, f.Tensors[b].Offset) })
	for k := 1; k < len(order); k++ {
		prev, cur := f.Tensors[order[k-1]], f.Tensors[order[k]]
		if prev.Offset+prev.Size > cur.Offset {
			return fmt.Errorf("tensor %q (%s, %d bytes at data offset %d) overlaps tensor %q at data offset %d",
				prev.Name, prev.Type, prev.Size, prev.Offset, cur.Name, cur.Offset)
		}
	}
	return nil
}

func alignUp(n, a int64) int64 { return (n + a - 1) / a * a }

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
