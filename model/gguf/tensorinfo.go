package gguf

import (
	"fmt"

	"github.com/stride-lm/stride/tensor/kernels"
)

// maxDims is ggml's GGML_MAX_DIMS: a tensor has at most 4 extents.
const maxDims = 4

// maxExtent bounds a tensor's element count, offset and byte size. ggml
// allows INT64_MAX elements; holding each under 2^62 means an offset plus
// a size never overflows an int64.
const maxExtent = 1 << 62

// TensorInfo describes one tensor as the file's header lists it.
type TensorInfo struct {
	Name string
	Type kernels.GGMLType
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

// parseTensorInfos reads the nt tensor infos into f.Tensors and its index,
// each offset a multiple of the alignment. nt was checked against the
// bytes left (parseHeader).
func (f *File) parseTensorInfos(c *cursor, nt int) error {
	f.Tensors = make([]TensorInfo, 0, nt)
	f.tensors = make(map[string]int, nt)
	for i := 0; i < nt; i++ {
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
	return nil
}

// tensorInfo reads tensor info i: name, extents, ggml type, offset; and
// sizes it when the type is known.
func (c *cursor) tensorInfo(i int) (TensorInfo, error) {
	name, err := c.str(fmt.Sprintf("tensor %d name", i))
	if err != nil {
		return TensorInfo{}, err
	}
	if err := checkName(name); err != nil {
		return TensorInfo{}, fmt.Errorf("tensor %d: %w", i, err)
	}
	ne, elems, err := c.extents(name)
	if err != nil {
		return TensorInfo{}, err
	}
	ti := TensorInfo{Name: name, Ne: ne, Shape: shapeOf(ne)}
	t, err := c.u32()
	if err != nil {
		return TensorInfo{}, fmt.Errorf("tensor %q: %w", name, err)
	}
	ti.Type = kernels.GGMLType(t)
	off, err := c.u64()
	if err != nil {
		return TensorInfo{}, fmt.Errorf("tensor %q: %w", name, err)
	}
	if off > maxExtent {
		return TensorInfo{}, fmt.Errorf("tensor %q: offset %d is beyond any file", name, off)
	}
	ti.Offset = int64(off)
	if ti.Size, err = tensorSize(ti, elems); err != nil {
		return TensorInfo{}, err
	}
	return ti, nil
}

// extents reads n_dims and the ne list of the tensor called name, and
// returns them with their product, which is held under maxExtent.
func (c *cursor) extents(name string) (ne []uint64, elems uint64, err error) {
	nd, err := c.u32()
	if err != nil {
		return nil, 0, fmt.Errorf("tensor %q: %w", name, err)
	}
	if nd == 0 || nd > maxDims {
		return nil, 0, fmt.Errorf("tensor %q has %d dimensions (1 to %d are allowed)", name, nd, maxDims)
	}
	ne = make([]uint64, nd)
	elems = 1
	for d := range ne {
		n, err := c.u64()
		if err != nil {
			return nil, 0, fmt.Errorf("tensor %q: %w", name, err)
		}
		if n > maxExtent || (n != 0 && elems > maxExtent/n) {
			return nil, 0, fmt.Errorf("tensor %q: extents %v overflow", name, ne[:d+1])
		}
		elems *= n
		ne[d] = n
	}
	return ne, elems, nil
}

// shapeOf is ne reversed: PyTorch order, outermost first.
func shapeOf(ne []uint64) []int {
	shape := make([]int, len(ne))
	for d, n := range ne {
		shape[len(ne)-1-d] = int(n)
	}
	return shape
}

// tensorSize is the byte size of ti's elems elements: whole blocks of its
// ggml type, under maxExtent. It is 0 for a type this reader does not know
// (Data refuses such tensors).
func tensorSize(ti TensorInfo, elems uint64) (int64, error) {
	tr := ti.Type
	if !tr.Known() {
		return 0, nil
	}
	if ti.Ne[0]%uint64(tr.BlockSize()) != 0 {
		return 0, fmt.Errorf("tensor %q (%s): row length %d is not a multiple of the block size %d", ti.Name, ti.Type, ti.Ne[0], tr.BlockSize())
	}
	blocks := elems / uint64(tr.BlockSize())
	if blocks > maxExtent/uint64(tr.BlockBytes()) {
		return 0, fmt.Errorf("tensor %q: size overflows", ti.Name)
	}
	return int64(blocks * uint64(tr.BlockBytes())), nil
}

// Tensor returns the info of the named tensor.
func (f *File) Tensor(name string) (TensorInfo, bool) {
	i, ok := f.tensors[name]
	if !ok {
		return TensorInfo{}, false
	}
	return f.Tensors[i], true
}
