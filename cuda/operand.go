package cuda

import (
	"fmt"

	"github.com/stride-lm/stride/tensor"
)

// Operand is a tensor as a kernel sees it: a layout (shape, strides and
// offset in elements, and a dtype, taken from Layout, which may be a meta
// tensor) plus the device address of element 0 of its storage. Element
// (i0, …, in-1) lives at
//
//	Base + (Offset + Σ ik·stride_k) · elemsize
//
// so two views of one storage (q, k and v cut out of a fused QKV buffer)
// share Base and differ in Offset. The traffic simulation needs real addresses
// because sectors are aligned to 32 bytes: a view whose offset is not a
// multiple of 32 bytes straddles one more sector per warp.
type Operand struct {
	Layout *tensor.Tensor
	Base   uint64
}

func (o Operand) es() int64               { return int64(o.Layout.DType().Size()) }
func (o Operand) dtype() tensor.DType     { return o.Layout.DType() }
func (o Operand) shape() []int            { return o.Layout.Shape() }
func (o Operand) strides() []int          { return o.Layout.Strides() }
func (o Operand) offset() int64           { return int64(o.Layout.Offset()) }
func (o Operand) elemAddr(e int64) uint64 { return o.Base + uint64(e*o.es()) }

// startAddr is the address of the first element (offset applied).
func (o Operand) startAddr() uint64 { return o.elemAddr(o.offset()) }

func (o Operand) check(name string) error {
	if o.Layout == nil {
		return fmt.Errorf("%s: no tensor", name)
	}
	return nil
}

// DeviceAlign is the alignment of every buffer cudaMalloc returns (it
// guarantees 256 bytes), which the simulation gives its buffers too.
const DeviceAlign = 256

// AddressSpace hands out simulated device addresses: each storage gets its own
// DeviceAlign-aligned range, as cudaMalloc would give it, and every view of
// a storage gets that storage's base. It is not safe for concurrent use.
type AddressSpace struct {
	next  uint64
	bases map[*tensor.Storage]uint64
}

// NewAddressSpace returns an empty address space. The first buffer starts
// at 1 GiB, so addresses look like device pointers and 0 stays invalid.
func NewAddressSpace() *AddressSpace {
	return &AddressSpace{next: 1 << 30, bases: map[*tensor.Storage]uint64{}}
}

// Alloc reserves n bytes and returns their aligned base address.
func (a *AddressSpace) Alloc(n int64) uint64 {
	base := a.next
	a.next += uint64(max(n, 1)+DeviceAlign-1) / DeviceAlign * DeviceAlign
	return base
}

// Operand returns t placed in the address space: its storage's base is
// allocated on first use.
func (a *AddressSpace) Operand(t *tensor.Tensor) Operand {
	st := t.Storage()
	base, ok := a.bases[st]
	if !ok {
		base = a.Alloc(int64(st.Bytes()))
		a.bases[st] = base
	}
	return Operand{Layout: t, Base: base}
}

// Ints places an int32 metadata array (slot mapping, block tables, …) of n
// entries and returns its base address.
func (a *AddressSpace) Ints(n int) uint64 { return a.Alloc(int64(n) * 4) }
