package tensor

import (
	"errors"
	"sync/atomic"
)

// Storage is one flat buffer of elements of a single dtype. Many tensors
// (views) may share one Storage; a Tensor adds shape, strides and an offset.
//
// F32 elements live in a []float32; F16 and BF16 elements as their 16-bit
// patterns in a []uint16; I32 elements in a []int32. A meta storage has a
// length and no data (the only kind the other dtypes have).
type Storage struct {
	dtype    DType
	n        int
	f32      []float32
	half     []uint16
	i32      []int32
	meta     bool
	led      *Ledger
	counted  bool // allocation was recorded in led (false for wrapped buffers)
	released atomic.Bool
}

// ErrMeta is returned by data access on a meta tensor.
var ErrMeta = errors.New("tensor is a meta tensor: it has no data")

func newStorage(led *Ledger, dt DType, n int, meta bool) *Storage {
	s := &Storage{dtype: dt, n: n, meta: meta, led: led}
	if meta {
		return s
	}
	switch dt {
	case F32:
		s.f32 = make([]float32, n)
	case I32:
		s.i32 = make([]int32, n)
	default:
		s.half = make([]uint16, n)
	}
	s.counted = true
	led.RecordAlloc(int64(n) * int64(dt.Size()))
	return s
}

// DType returns the element type.
func (s *Storage) DType() DType { return s.dtype }

// Len returns the number of elements.
func (s *Storage) Len() int { return s.n }

// Bytes returns the size of the buffer in bytes.
func (s *Storage) Bytes() int { return s.n * s.dtype.Size() }

// IsMeta reports whether the storage has no data.
func (s *Storage) IsMeta() bool { return s.meta }

// Float32s returns the raw buffer of an F32 storage (nil otherwise). Kernels
// index it with a tensor's offset and strides.
func (s *Storage) Float32s() []float32 { return s.f32 }

// Uint16s returns the raw 16-bit patterns of an F16 or BF16 storage (nil
// otherwise).
func (s *Storage) Uint16s() []uint16 { return s.half }

// Int32s returns the raw buffer of an I32 storage (nil otherwise).
func (s *Storage) Int32s() []int32 { return s.i32 }

// Ledger returns the Ledger the storage was allocated in (may be nil).
func (s *Storage) Ledger() *Ledger { return s.led }

// Release tells the storage's Ledger that the buffer is no longer live, so
// peak-memory figures reflect what a framework with eager frees would hold.
// The Go garbage collector still owns the memory. Release is idempotent.
func (s *Storage) Release() {
	if s == nil || !s.counted || s.released.Swap(true) {
		return
	}
	s.led.RecordFree(int64(s.Bytes()))
}

// Load returns element i as float32. It is the raw accessor kernels use
// on F16/BF16 storages; it has Go's bounds checks and no others.
func (s *Storage) Load(i int) float32 { return s.load(i) }

// Store writes element i, rounding to the storage dtype (see Load).
func (s *Storage) Store(i int, v float32) { s.store(i, v) }

func (s *Storage) load(i int) float32 {
	switch s.dtype {
	case F32:
		return s.f32[i]
	case I32:
		return float32(s.i32[i])
	}
	return s.dtype.fromBits(s.half[i])
}

// store rounds v to the storage dtype; for I32 it truncates toward zero,
// as PyTorch's float → int conversion does.
func (s *Storage) store(i int, v float32) {
	switch s.dtype {
	case F32:
		s.f32[i] = v
	case I32:
		s.i32[i] = int32(v)
	default:
		s.half[i] = s.dtype.toBits(v)
	}
}
