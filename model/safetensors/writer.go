package safetensors

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// WriterTensor is one tensor to write: its bytes, little-endian,
// row-major, exactly Elements·DType.Size() of them.
type WriterTensor struct {
	Name  string
	DType DType
	Shape []int
	Data  []byte
}

// Write writes a safetensors file holding ts, in that order, with the
// optional metadata. The header is padded with spaces so that the byte
// buffer starts at a multiple of 8, as the reference writer does, which
// keeps every F32 tensor of a file aligned for zero-copy views.
func Write(w io.Writer, ts []WriterTensor, metadata map[string]string) error {
	var hdr strings.Builder
	hdr.WriteByte('{')
	sep := ""
	if metadata != nil {
		m, err := json.Marshal(metadata)
		if err != nil {
			return err
		}
		fmt.Fprintf(&hdr, `"__metadata__":%s`, m)
		sep = ","
	}
	var off int64
	for _, t := range ts {
		n := int64(1)
		for _, d := range t.Shape {
			n *= int64(d)
		}
		if t.DType.Size() == 0 {
			return fmt.Errorf("safetensors: tensor %q: unknown dtype %q", t.Name, t.DType)
		}
		if int64(len(t.Data)) != n*int64(t.DType.Size()) {
			return fmt.Errorf("safetensors: tensor %q: %d bytes for %s of shape %v, want %d", t.Name, len(t.Data), t.DType, t.Shape, n*int64(t.DType.Size()))
		}
		name, _ := json.Marshal(t.Name)
		shape, _ := json.Marshal(t.Shape)
		if t.Shape == nil {
			shape = []byte("[]")
		}
		fmt.Fprintf(&hdr, `%s%s:{"dtype":"%s","shape":%s,"data_offsets":[%d,%d]}`, sep, name, t.DType, shape, off, off+int64(len(t.Data)))
		sep = ","
		off += int64(len(t.Data))
	}
	hdr.WriteByte('}')
	for (8+hdr.Len())%8 != 0 {
		hdr.WriteByte(' ')
	}
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(hdr.Len()))
	if _, err := w.Write(lenBuf[:]); err != nil {
		return err
	}
	if _, err := io.WriteString(w, hdr.String()); err != nil {
		return err
	}
	for _, t := range ts {
		if _, err := w.Write(t.Data); err != nil {
			return err
		}
	}
	return nil
}
