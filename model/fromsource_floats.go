package model

import (
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/stride-lm/stride/tensor"
)

// This file turns stored floats (F32, F16, BF16) into weight tensors:
// zero-copy views of the stored bytes where the dtype, the alignment and
// the host's byte order allow, converted copies otherwise.

// floats returns the float tensor rt of dtype dt and shape: a view of
// rt.Data when it already is dt (and aligned), else a converted copy.
func (b *builder) floats(rt RawTensor, dt tensor.DType, shape ...int) (*tensor.Tensor, error) {
	if dtypeOf(rt.Type) == dt {
		if t := b.view(rt, dt, shape); t != nil {
			b.kept(rt)
			return t, nil
		}
	}
	t, err := tensor.Empty(b.led, dt, shape...)
	if err != nil {
		return nil, err
	}
	convert(t.Storage(), 0, rt)
	b.copiedOut(int64(t.Storage().Bytes()))
	return t, nil
}

// view wraps rt.Data as a tensor of dtype dt without copying, or returns
// nil when its alignment or the host's byte order forbid it.
func (b *builder) view(rt RawTensor, dt tensor.DType, shape []int) *tensor.Tensor {
	size := dt.Size()
	if !hostLittleEndian || len(rt.Data) == 0 || uintptr(unsafe.Pointer(&rt.Data[0]))%uintptr(size) != 0 {
		return nil
	}
	n := len(rt.Data) / size
	var t *tensor.Tensor
	var err error
	if dt == tensor.F32 {
		t, err = tensor.WrapFloat32(b.led, unsafe.Slice((*float32)(unsafe.Pointer(&rt.Data[0])), n), shape...)
	} else {
		t, err = tensor.WrapUint16(b.led, dt, unsafe.Slice((*uint16)(unsafe.Pointer(&rt.Data[0])), n), shape...)
	}
	if err != nil {
		return nil
	}
	return t
}

// convert writes the values of the float tensor rt into st from element
// off on, converting to st's dtype (a value already in st's dtype is
// copied bit for bit).
func convert(st *tensor.Storage, off int, rt RawTensor) {
	le := binary.LittleEndian
	d := rt.Data
	if hostLittleEndian && dtypeOf(rt.Type) == st.DType() {
		// Same dtype: the stored bytes are the host's, copy them as bytes
		// (whatever their alignment).
		var dst []byte
		if st.DType() == tensor.F32 {
			f := st.Float32s()[off:]
			dst = unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(f))), 4*len(f))
		} else {
			h := st.Uint16s()[off:]
			dst = unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(h))), 2*len(h))
		}
		copy(dst, d)
		return
	}
	switch {
	case rt.Type == StorageF32 && st.DType() == tensor.F32:
		dst := st.Float32s()[off:]
		for i := range len(d) / 4 {
			dst[i] = math.Float32frombits(le.Uint32(d[4*i:]))
		}
	case rt.Type == StorageF32:
		dst := st.Uint16s()[off:]
		round := tensor.F16Bits
		if st.DType() == tensor.BF16 {
			round = tensor.BF16Bits
		}
		for i := range len(d) / 4 {
			dst[i] = round(math.Float32frombits(le.Uint32(d[4*i:])))
		}
	case dtypeOf(rt.Type) == st.DType():
		dst := st.Uint16s()[off:]
		for i := range len(d) / 2 {
			dst[i] = le.Uint16(d[2*i:])
		}
	default:
		widen := tensor.F16Float
		if rt.Type == StorageBF16 {
			widen = tensor.BF16Float
		}
		for i := range len(d) / 2 {
			st.Store(off+i, widen(le.Uint16(d[2*i:])))
		}
	}
}
