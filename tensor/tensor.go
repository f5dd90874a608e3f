package tensor

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Tensor is a strided view of a Storage: the element at index
// (i0, …, in-1) is storage[offset + Σ ik·strides[k]]. Tensors are
// immutable as metadata: every shape op returns a new Tensor.
type Tensor struct {
	st      *Storage
	shape   []int
	strides []int
	offset  int
}

// maxNumel caps the element count of one tensor so that products of sizes
// cannot overflow int, whatever a caller or a file asks for: 2^53 with a
// 64-bit int, 2^30 with a 32-bit one (where 2^53 does not fit).
const maxNumel = 1<<30 + (1<<53-1<<30)*(intBits/64)

// intBits is the width of int: 32 or 64.
const intBits = 32 << (^uint(0) >> 63)

// ContiguousStrides returns the row-major strides of shape: the
// right-to-left running product of the sizes, so [2,3,4] → [12,4,1].
// A size-0 dim counts as 1 in the product, as PyTorch does, so (0,10) has
// strides (10,1).
func ContiguousStrides(shape []int) []int {
	st := make([]int, len(shape))
	acc := 1
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = acc
		acc *= max(shape[i], 1)
	}
	return st
}

// numelOf returns the product of shape, or an error for negative sizes or
// products beyond maxNumel.
func numelOf(op string, shape []int) (int, error) {
	n := 1
	for _, s := range shape {
		if s < 0 {
			return 0, errorf(op, "negative dimension %d in shape %v", s, shape)
		}
		if s != 0 && n > maxNumel/s {
			return 0, errorf(op, "shape %v has more than 2^53 elements", shape)
		}
		n *= s
	}
	return n, nil
}

func newTensor(led *Ledger, dt DType, shape []int, meta bool, op string) (*Tensor, error) {
	if !dt.Valid() {
		return nil, errorf(op, "unknown dtype %d", dt)
	}
	if !meta && !dt.HasData() {
		return nil, errorf(op, "dtype %v exists on meta tensors only (tensors with data are float32, float16, bfloat16 or int32)", dt)
	}
	n, err := numelOf(op, shape)
	if err != nil {
		return nil, err
	}
	return &Tensor{
		st:      newStorage(led, dt, n, meta),
		shape:   append([]int(nil), shape...),
		strides: ContiguousStrides(shape),
	}, nil
}

// Empty allocates a contiguous tensor. Go zeroes memory, so its elements
// are 0, but code should not rely on that (use Zeros).
func Empty(led *Ledger, dt DType, shape ...int) (*Tensor, error) {
	return newTensor(led, dt, shape, false, "empty")
}

// Zeros allocates a contiguous tensor of zeros.
func Zeros(led *Ledger, dt DType, shape ...int) (*Tensor, error) {
	return newTensor(led, dt, shape, false, "zeros")
}

// FromFloat32 allocates a contiguous tensor of the given shape holding data
// (converted to dt). len(data) must equal the product of shape.
func FromFloat32(led *Ledger, dt DType, data []float32, shape ...int) (*Tensor, error) {
	n, err := numelOf("from_float32", shape)
	if err != nil {
		return nil, err
	}
	if n != len(data) {
		return nil, errorf("from_float32", "shape %v needs %d elements, got %d", shape, n, len(data))
	}
	t, err := newTensor(led, dt, shape, false, "from_float32")
	if err != nil {
		return nil, err
	}
	for i, v := range data {
		t.st.store(i, v)
	}
	return t, nil
}

// WrapFloat32 makes a contiguous F32 tensor that uses data as its storage
// without copying it (a memory-mapped weight, a kernel's output buffer).
// No allocation is recorded: the caller owns the memory.
func WrapFloat32(led *Ledger, data []float32, shape ...int) (*Tensor, error) {
	return wrap(&Storage{dtype: F32, f32: data, led: led}, len(data), shape)
}

// wrap is the Wrap constructors' common part: st holds the caller's data
// of n elements, which shape must hold exactly; the result is contiguous
// over it.
func wrap(st *Storage, n int, shape []int) (*Tensor, error) {
	need, err := numelOf("wrap", shape)
	if err != nil {
		return nil, err
	}
	if need != n {
		return nil, errorf("wrap", "shape %v needs %d elements, got %d", shape, need, n)
	}
	st.n = n
	return &Tensor{st: st, shape: append([]int(nil), shape...), strides: ContiguousStrides(shape)}, nil
}

// WrapUint16 is WrapFloat32 for F16 or BF16 bit patterns.
func WrapUint16(led *Ledger, dt DType, data []uint16, shape ...int) (*Tensor, error) {
	if dt != F16 && dt != BF16 {
		return nil, errorf("wrap", "dtype %v is not a 16-bit type", dt)
	}
	return wrap(&Storage{dtype: dt, half: data, led: led}, len(data), shape)
}

// WrapInt32 makes a contiguous I32 tensor that uses data as its storage
// without copying it; no allocation is recorded (the caller owns data).
func WrapInt32(led *Ledger, data []int32, shape ...int) (*Tensor, error) {
	return wrap(&Storage{dtype: I32, i32: data, led: led}, len(data), shape)
}

// Int32s returns the elements of an I32 tensor in row-major logical order
// as a new slice (exact, unlike the float32 of At).
func (t *Tensor) Int32s() ([]int32, error) {
	if t.st.meta {
		return nil, fmt.Errorf("int32s: %w", ErrMeta)
	}
	if t.st.dtype != I32 {
		return nil, errorf("int32s", "tensor is %v, not int32", t.st.dtype)
	}
	out := make([]int32, 0, t.Numel())
	forEachOffset(t.shape, t.strides, t.offset, func(o int) { out = append(out, t.st.i32[o]) })
	return out, nil
}

// Randn allocates a contiguous tensor of standard-normal samples drawn from
// a PCG generator seeded with seed, so the same seed gives the same tensor
// on every machine.
func Randn(led *Ledger, dt DType, seed uint64, shape ...int) (*Tensor, error) {
	t, err := newTensor(led, dt, shape, false, "randn")
	if err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for i := 0; i < t.st.n; i++ {
		t.st.store(i, float32(r.NormFloat64()))
	}
	return t, nil
}

// Meta returns a contiguous meta tensor: metadata without data. Its layout
// can be transformed and traced at any size; element access fails with
// ErrMeta.
func Meta(dt DType, shape ...int) (*Tensor, error) {
	return newTensor(nil, dt, shape, true, "meta")
}

// Must returns t, or panics if err is non-nil. It is meant for tests,
// examples and shapes known to be valid, like regexp.MustCompile.
func Must(t *Tensor, err error) *Tensor {
	if err != nil {
		panic(err)
	}
	return t
}

// Shape returns a copy of the sizes.
func (t *Tensor) Shape() []int { return append([]int(nil), t.shape...) }

// Strides returns a copy of the strides, in elements.
func (t *Tensor) Strides() []int { return append([]int(nil), t.strides...) }

// AppendShape appends the sizes to dst and returns the extended slice.
// It is Shape without the copy's allocation: a hot path passes a stack
// array (var buf [4]int; sh := t.AppendShape(buf[:0])), so reading the
// layout of a step's tensors costs nothing per token.
func (t *Tensor) AppendShape(dst []int) []int { return append(dst, t.shape...) }

// AppendStrides appends the strides (in elements) to dst and returns the
// extended slice; see AppendShape.
func (t *Tensor) AppendStrides(dst []int) []int { return append(dst, t.strides...) }

// Offset returns the storage offset, in elements.
func (t *Tensor) Offset() int { return t.offset }

// Dim returns the number of dimensions.
func (t *Tensor) Dim() int { return len(t.shape) }

// Size returns the size of dim d (negative d counts from the end).
func (t *Tensor) Size(d int) (int, error) {
	d, err := wrapDimOf("size", d, t.shape)
	if err != nil {
		return 0, err
	}
	return t.shape[d], nil
}

// Stride returns the stride of dim d (negative d counts from the end).
func (t *Tensor) Stride(d int) (int, error) {
	d, err := wrapDimOf("stride", d, t.shape)
	if err != nil {
		return 0, err
	}
	return t.strides[d], nil
}

// Numel returns the number of elements.
func (t *Tensor) Numel() int {
	n := 1
	for _, s := range t.shape {
		n *= s
	}
	return n
}

// DType returns the element type.
func (t *Tensor) DType() DType { return t.st.dtype }

// Nbytes returns numel × element size: the bytes a contiguous copy of t
// occupies.
func (t *Tensor) Nbytes() int { return t.Numel() * t.st.dtype.Size() }

// Storage returns the underlying storage.
func (t *Tensor) Storage() *Storage { return t.st }

// Ledger returns the Ledger of t's storage (may be nil).
func (t *Tensor) Ledger() *Ledger { return t.st.led }

// IsMeta reports whether t has no data.
func (t *Tensor) IsMeta() bool { return t.st.meta }

// SharesStorage reports whether a and b are views of the same Storage.
func SharesStorage(a, b *Tensor) bool { return a != nil && b != nil && a.st == b.st }

// IsContiguous reports PyTorch's is_contiguous(): walking dims right to
// left, every dim of size != 1 has stride equal to the product of the sizes
// to its right. Tensors with 0 or 1 elements are contiguous.
func (t *Tensor) IsContiguous() bool { return isContiguous(t.shape, t.strides) }

func isContiguous(shape, strides []int) bool {
	// An empty tensor is contiguous whatever its strides (PyTorch checks
	// numel == 0 before the walk, so a size-0 dim left of a mismatched
	// stride still counts).
	for _, s := range shape {
		if s == 0 {
			return true
		}
	}
	expected := 1
	for i := len(shape) - 1; i >= 0; i-- {
		if shape[i] == 1 {
			continue
		}
		if strides[i] != expected {
			return false
		}
		expected *= shape[i]
	}
	return true
}

// index returns the storage index of element idx, checking bounds.
func (t *Tensor) index(op string, idx []int) (int, error) {
	if t.st.meta {
		return 0, fmt.Errorf("%s: %w", op, ErrMeta)
	}
	if len(idx) != len(t.shape) {
		return 0, errorf(op, "got %d indices for a %d-dim tensor of shape %v", len(idx), len(t.shape), t.shape)
	}
	off := t.offset
	for k, i := range idx {
		if i < 0 || i >= t.shape[k] {
			return 0, errorf(op, "index %d is out of bounds for dimension %d with size %d", i, k, t.shape[k])
		}
		off += i * t.strides[k]
	}
	return off, nil
}

// At returns the element at idx as float32.
func (t *Tensor) At(idx ...int) (float32, error) {
	off, err := t.index("at", idx)
	if err != nil {
		return 0, err
	}
	return t.st.load(off), nil
}

// Set writes v at idx. The write goes to the shared storage, so every view
// of that storage sees it: setting e[0,0] of bias.Expand(4,3) changes
// bias[0] and e[3,0] too, as in PyTorch. (Whole-tensor in-place ops on an
// overlapping tensor are refused instead; see CheckNoOverlap.)
func (t *Tensor) Set(v float32, idx ...int) error {
	off, err := t.index("set", idx)
	if err != nil {
		return err
	}
	t.st.store(off, v)
	return nil
}

// Float32s returns the elements in row-major logical order as a new slice.
func (t *Tensor) Float32s() ([]float32, error) {
	if t.st.meta {
		return nil, fmt.Errorf("float32s: %w", ErrMeta)
	}
	out := make([]float32, 0, t.Numel())
	forEachOffset(t.shape, t.strides, t.offset, func(o int) { out = append(out, t.st.load(o)) })
	return out, nil
}

// forEachOffset calls f with the storage offset of every element of a
// (shape, strides, offset) layout in row-major logical order.
func forEachOffset(shape, strides []int, offset int, f func(int)) {
	for _, s := range shape {
		if s == 0 {
			return
		}
	}
	nd := len(shape)
	if nd == 0 {
		f(offset)
		return
	}
	idx := make([]int, nd)
	inner, innerStride := shape[nd-1], strides[nd-1]
	off := offset
	for {
		o := off
		for j := 0; j < inner; j++ {
			f(o)
			o += innerStride
		}
		d := nd - 2
		for ; d >= 0; d-- {
			idx[d]++
			off += strides[d]
			if idx[d] < shape[d] {
				break
			}
			off -= strides[d] * shape[d]
			idx[d] = 0
		}
		if d < 0 {
			return
		}
	}
}

// String formats the metadata: shape, strides, offset, dtype, contiguity.
func (t *Tensor) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Tensor(shape=%s, strides=%s, offset=%d, dtype=%v, contiguous=%v",
		FormatInts(t.shape), FormatInts(t.strides), t.offset, t.st.dtype, t.IsContiguous())
	if t.st.meta {
		b.WriteString(", meta")
	}
	b.WriteString(")")
	return b.String()
}

// FormatInts formats ints the way PyTorch prints a size: [2, 3, 4].
func FormatInts(v []int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, x := range v {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, x)
	}
	b.WriteByte(']')
	return b.String()
}
