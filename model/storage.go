package model

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/stride-lm/stride/tensor"
	"github.com/stride-lm/stride/tensor/kernels"
)

// This file is the storage types a Source may hand to FromSource: their
// sizes, what each becomes at load, and the one switch where a block type
// plugs in (blockMatrix). A ggml type's name, block size and kernels come
// from tensor/kernels' traits table, so a new ggml block type, once that
// table and its kernels run it, needs nothing in package model.

// StorageType names how a tensor's elements are stored: a ggml type
// (kernels.GGMLType, numbered as ggml numbers it) or llama2.c's Q8, which
// is not one. String is ggml's type name, so an error or a bench row reads
// like llama.cpp's.
type StorageType uint32

// The storage types formats may hand to FromSource.
const (
	StorageF32  = StorageType(kernels.TypeF32)
	StorageF16  = StorageType(kernels.TypeF16)
	StorageBF16 = StorageType(kernels.TypeBF16)
	StorageQ8_0 = StorageType(kernels.TypeQ8_0) // ggml: blocks of 32 int8 with one fp16 scale
	StorageQ4_0 = StorageType(kernels.TypeQ4_0) // ggml: blocks of 32 4-bit values with one fp16 scale
	StorageQ4_1 = StorageType(kernels.TypeQ4_1) // ggml: blocks of 32 4-bit values with an fp16 scale and offset
	StorageQ5_0 = StorageType(kernels.TypeQ5_0) // ggml: blocks of 32 5-bit values with one fp16 scale
	StorageQ5_1 = StorageType(kernels.TypeQ5_1) // ggml: blocks of 32 5-bit values with an fp16 scale and offset
	StorageQ4_K = StorageType(kernels.TypeQ4_K) // ggml: super-blocks of 256, 6-bit sub-block scales and mins
	StorageQ5_K = StorageType(kernels.TypeQ5_K) // ggml: Q4_K's super-blocks with 5-bit values
	StorageQ6_K = StorageType(kernels.TypeQ6_K) // ggml: super-blocks of 256, 6-bit values, 8-bit sub-block scales

	// StorageLlama2cQ8 is llama2.c's version-2 (runq.c) quantization, not
	// a ggml type (its number is outside ggml's): all rows·cols int8
	// values of the matrix, then one little-endian float32 scale per
	// RawTensor.GroupSize consecutive values (weight k is
	// q[k]·s[k/GroupSize]). GroupSize divides the row length, so no group
	// straddles two rows. kernels.Q8_0 runs it as is.
	StorageLlama2cQ8 StorageType = 1 << 31
)

// GGML returns the ggml type t names, or false for StorageLlama2cQ8.
func (t StorageType) GGML() (kernels.GGMLType, bool) {
	return kernels.GGMLType(t), t != StorageLlama2cQ8
}

// String is ggml's name of the type ("Q4_K"), or "llama2c_Q8".
func (t StorageType) String() string {
	if g, ok := t.GGML(); ok {
		return g.String()
	}
	return "llama2c_Q8"
}

// Bytes returns how many bytes a tensor of type t with n elements
// occupies (groupSize is RawTensor.GroupSize), or false when t is not a
// type FromSource runs or n does not fill whole blocks. ggml types are
// sized by kernels' traits table.
func (t StorageType) Bytes(n int64, groupSize int) (int64, bool) {
	if n < 0 || n > math.MaxInt64/8 {
		return 0, false
	}
	if t == StorageLlama2cQ8 {
		if groupSize <= 0 || n%int64(groupSize) != 0 {
			return 0, false
		}
		return n + 4*(n/int64(groupSize)), true
	}
	g, _ := t.GGML()
	if !g.Supported() || n%int64(g.BlockSize()) != 0 {
		return 0, false
	}
	return n / int64(g.BlockSize()) * int64(g.BlockBytes()), true
}

// hostLittleEndian reports whether the host stores numbers as the
// checkpoint files do; only then can stored bytes be used in place as
// float32 or uint16 weights.
var hostLittleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// isFloat reports whether t stores plain floats (converted element by
// element) rather than blocks.
func isFloat(t StorageType) bool {
	return t == StorageF32 || t == StorageF16 || t == StorageBF16
}

// dtypeOf is the tensor dtype of a float storage type.
func dtypeOf(t StorageType) tensor.DType {
	switch t {
	case StorageF16:
		return tensor.F16
	case StorageBF16:
		return tensor.BF16
	}
	return tensor.F32
}

// unsupported is the error for a storage type FromSource cannot run.
func unsupported(rt RawTensor) error {
	return fmt.Errorf("unsupported storage type %s for tensor %s", rt.Type, rt.Name)
}

// floatDType is the dtype a float matrix stored as t becomes.
func (b *builder) floatDType(t StorageType) tensor.DType {
	if b.asStored {
		return dtypeOf(t)
	}
	return b.dt
}

// ggmlHalf reports whether a float matrix of type t runs as a ggml matrix:
// an F16 or BF16 matrix of a GGMLSource kept as stored (AsStored).
func (b *builder) ggmlHalf(t StorageType) bool {
	return b.ggml && b.asStored && (t == StorageF16 || t == StorageBF16)
}

// blockMatrix wraps a block-quantized tensor as a kernel matrix, without
// copying where alignment allows. This is where a block type plugs in:
// llama2.c's Q8, or any ggml block type kernels runs (its Matrix must
// implement Row, for dequantization and export).
func (b *builder) blockMatrix(rt RawTensor, rows, cols int) (*kernels.Matrix, error) {
	switch rt.Type {
	case StorageLlama2cQ8:
		n := int64(rows) * int64(cols)
		q := unsafe.Slice((*int8)(unsafe.Pointer(&rt.Data[0])), n)
		sb := rt.Data[n:]
		var s []float32
		if hostLittleEndian && uintptr(unsafe.Pointer(&sb[0]))%4 == 0 {
			s = unsafe.Slice((*float32)(unsafe.Pointer(&sb[0])), len(sb)/4)
		} else {
			// The scales follow rows·cols int8s: unaligned when that is
			// not a multiple of 4, so they are copied.
			s = make([]float32, len(sb)/4)
			for i := range s {
				s[i] = math.Float32frombits(binary.LittleEndian.Uint32(sb[4*i:]))
			}
			if b.dt == tensor.F32 {
				b.led.RecordAlloc(int64(len(sb)))
				b.copiedOut(int64(len(sb)))
			}
		}
		return kernels.NewQ8_0(rows, cols, q, s, rt.GroupSize)
	}
	if g, ok := rt.Type.GGML(); ok && g.Supported() && g.BlockSize() > 1 {
		// ggml's blocks, run in place: a decode token streams exactly
		// the file's bytes.
		return kernels.NewGGMLMatrix(g, rows, cols, rt.Data)
	}
	return nil, unsupported(rt)
}
