package llama2c

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/mapfile"
)

// File is an opened llama2.c checkpoint (legacy, version 1 or version 2):
// a model.Source whose tensors are views of the memory-mapped file, or,
// when it is read instead, new memory read on each Tensor call.
type File struct {
	name   string
	header Header
	lay    layout
	data   []byte      // the mapped file, or nil
	r      io.ReaderAt // the file, when not mapped
	closer io.Closer   // what Close closes besides the mapping
}

// hostLittleEndian reports whether the host stores numbers as the files
// do; only then can a mapped float32 be used in place, so a big-endian
// host reads instead of mapping.
var hostLittleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// Open opens the llama2.c checkpoint at path. Only a regular file is
// opened (non-blocking, then fstat: a FIFO or a device is refused at
// once), and its header is validated (ReadHeader) before anything is
// mapped or allocated.
//
// Unless opts.NoMmap is set, the file is memory-mapped (mapfile.Map:
// private, copy-on-write, so the file is never modified) and every
// tensor's Data is a zero-copy view of the mapping: model.FromSource then
// wraps the float32 weights in place and copies only what it must (the
// fused WQKV, dtype conversions). Nothing is read at load but the header:
// the kernel pages the weights in on first use, from the page cache,
// shared with every other process that maps the same file. When mapping
// is unavailable (no mmap, a big-endian host) or fails, the file is read
// instead.
//
// As with any mapping, the file should not be truncated or rewritten in
// place while it is in use: FromSource recovers a fault on a vanished page
// into an error, but a fault during generation is recovered only on
// goroutines that run under mapfile.CatchFault. Replace checkpoints by
// writing a new file and renaming it, as infer export does; the mapping
// keeps the old file alive.
func Open(path string, opts model.LoadOptions) (*File, error) {
	f, _, err := mapfile.Open(path, false)
	if err != nil {
		return nil, checkpointError(path, err)
	}
	return OpenFile(f, path, opts)
}

// OpenFile is Open for a file the caller opened (a dispatcher that read
// its magic); name is what errors call it. It takes ownership of f: f is
// closed on error, once mapped, or by File.Close.
func OpenFile(f *os.File, name string, opts model.LoadOptions) (*File, error) {
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, checkpointError(name, err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, checkpointErrorf(name, "%v", mapfile.ErrNotRegular)
	}
	file, err := newFile(f, st.Size(), name)
	if err != nil {
		f.Close()
		return nil, err
	}
	if opts.NoMmap || !mapfile.Supported || !hostLittleEndian {
		file.closer = f
		return file, nil
	}
	data, err := mapfile.Map(f, st.Size())
	if err != nil {
		file.closer = f // no mmap here: read instead
		return file, nil
	}
	f.Close()
	file.data, file.r = data, nil
	return file, nil
}

// NewReader opens a checkpoint of size bytes held by r (a file, a
// buffer); name is what errors call it. Its tensors are read from r on
// each Tensor call, so r must stay usable until the model is built. It
// checks that r really holds size bytes before anything is allocated.
func NewReader(r io.ReaderAt, size int64, name string) (*File, error) {
	return newFile(r, size, name)
}

func newFile(r io.ReaderAt, size int64, name string) (*File, error) {
	h, err := ReadHeader(r, size, name)
	if err != nil {
		return nil, err
	}
	// A ReaderAt may be shorter than the size its caller claims; find out
	// before anything is allocated for that size.
	var last [1]byte
	if n, err := r.ReadAt(last[:], size-1); n != 1 {
		return nil, checkpointErrorf(name, "truncated: cannot read byte %d of the %d the header requires (%v)", size-1, size, err)
	}
	lay, err := fileLayout(h.Format, h.Config, h.GroupSize)
	if err != nil {
		return nil, checkpointError(name, err) // validated by ReadHeader: unreachable
	}
	return &File{name: name, header: h, lay: lay, r: r}, nil
}

// Name is the path (or name) the file was opened as.
func (f *File) Name() string { return f.name }

// Config is the configuration the header declares.
func (f *File) Config() model.Config { return f.header.Config }

// Header is the file's validated header.
func (f *File) Header() Header { return f.header }

// MappedBytes is the size of the mapping the tensors view, 0 when the
// file is read instead (or closed).
func (f *File) MappedBytes() int64 { return int64(len(f.data)) }

// Tensor returns the named tensor (a canonical llama.cpp name, see the
// model.Tensor* constants). A llama2.c file has no output.weight when its
// classifier is shared, no biases and no rope_freqs (its RoPE tables are
// run.c's precomputed cos/sin, which are not frequency factors).
func (f *File) Tensor(name string) (model.RawTensor, error) {
	b, layer, ok := f.lay.resolve(name)
	if !ok {
		return model.RawTensor{}, fmt.Errorf("%w: %s", model.ErrTensorNotFound, name)
	}
	rt := model.RawTensor{Name: name, Type: b.typ, Shape: append([]int(nil), b.shape...), GroupSize: b.groupSize}
	off, n := b.at(layer), b.stride
	switch {
	case f.data != nil:
		rt.Data = f.data[off : off+n : off+n]
	case f.r != nil:
		rt.Data = make([]byte, n)
		if err := readFull(f.r, rt.Data, off); err != nil {
			return model.RawTensor{}, fmt.Errorf("truncated or unreadable %s at byte %d: %v", b.kind.label(layer), off, err)
		}
	default:
		return model.RawTensor{}, fmt.Errorf("tensor %s: the checkpoint is closed", name)
	}
	return rt, nil
}

// Close unmaps the file (every tensor's Data is invalid afterwards) or
// closes the file it reads. It is idempotent.
func (f *File) Close() error {
	var err error
	if f.data != nil {
		err = mapfile.Unmap(f.data)
		f.data = nil
	}
	if f.closer != nil {
		if cerr := f.closer.Close(); err == nil {
			err = cerr
		}
		f.closer = nil
	}
	f.r = nil
	return err
}

// readFull reads len(b) bytes at off, turning a short read into
// io.ErrUnexpectedEOF.
func readFull(r io.ReaderAt, b []byte, off int64) error {
	n, err := r.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}
