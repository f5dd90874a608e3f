package gguf

import (
	"fmt"
	"math"
	"os"

	"github.com/stride-lm/stride/model/mapfile"
)

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

// Parse parses a whole GGUF file held in data. name is used in errors.
// Tensor views alias data.
func Parse(data []byte, name string) (*File, error) {
	f := &File{name: name, data: data}
	if err := f.parse(); err != nil {
		return nil, fmt.Errorf("gguf: %s: %w", name, err)
	}
	return f, nil
}
