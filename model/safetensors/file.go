package safetensors

import (
	"fmt"
	"math"
	"os"

	"github.com/stride-lm/stride/model/mapfile"
)

// File is an opened safetensors file: its header and its bytes, a memory
// mapping unless the file was read.
type File struct {
	Header
	name   string
	data   []byte // the whole file
	mapped bool
	index  map[string]int
}

// Open opens the safetensors file at path, which must be a regular file.
// noMmap reads it into memory instead of mapping it.
func Open(path string, noMmap bool) (*File, error) {
	fd, _, err := mapfile.Open(path, false)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %s: %w", path, err)
	}
	defer fd.Close() // the mapping outlives the descriptor
	return OpenFile(fd, path, noMmap)
}

// OpenFile is Open on an opened file; name is how errors refer to it.
// The header is read and validated before the file is mapped or read,
// so a header that lies about the file allocates nothing beyond itself.
func OpenFile(fd *os.File, name string, noMmap bool) (*File, error) {
	st, err := fd.Stat()
	if err != nil {
		return nil, fmt.Errorf("safetensors: %s: %w", name, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("safetensors: %s: %w", name, mapfile.ErrNotRegular)
	}
	size := st.Size()
	h, err := ReadHeader(fd, size)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %s: %w", name, err)
	}
	f := &File{Header: *h, name: name, index: make(map[string]int, len(h.Tensors))}
	for i, ti := range h.Tensors {
		f.index[ti.Name] = i
	}
	if size > math.MaxInt { // 32-bit hosts
		return nil, fmt.Errorf("safetensors: %s: %d bytes do not fit in memory", name, size)
	}
	f.mapped = !noMmap && mapfile.Supported
	if f.mapped {
		if f.data, err = mapfile.Map(fd, size); err != nil {
			return nil, fmt.Errorf("safetensors: %s: %w", name, err)
		}
		return f, nil
	}
	f.data = make([]byte, size)
	if _, err := fd.ReadAt(f.data, 0); err != nil {
		return nil, fmt.Errorf("safetensors: %s: %w", name, err)
	}
	return f, nil
}

// Name is the file's path, as given to Open.
func (f *File) Name() string { return f.name }

// Size is the file's length in bytes.
func (f *File) Size() int64 { return int64(len(f.data)) }

// Mapped reports whether the file's bytes are a memory mapping rather
// than memory it read.
func (f *File) Mapped() bool { return f.mapped && f.data != nil }

// Tensor returns the header entry of the named tensor.
func (f *File) Tensor(name string) (TensorInfo, bool) {
	i, ok := f.index[name]
	if !ok {
		return TensorInfo{}, false
	}
	return f.Tensors[i], true
}

// Data returns ti's bytes: a view of the file (of the mapping), valid
// until Close. ti must come from f's header.
func (f *File) Data(ti TensorInfo) ([]byte, error) {
	if f.data == nil {
		return nil, fmt.Errorf("safetensors: %s: file is closed", f.name)
	}
	if ti.Begin < f.DataOffset || ti.End < ti.Begin || ti.End > int64(len(f.data)) {
		return nil, fmt.Errorf("safetensors: %s: tensor %q [%d, %d) is not in the file", f.name, ti.Name, ti.Begin, ti.End)
	}
	return f.data[ti.Begin:ti.End:ti.End], nil
}

// Close releases the mapping; every Data view is invalid afterwards.
func (f *File) Close() error {
	data := f.data
	f.data = nil
	if data == nil || !f.mapped {
		return nil
	}
	return mapfile.Unmap(data)
}
