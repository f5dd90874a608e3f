package tensor

import (
	"slices"
	"strings"
	"testing"
)

// Helpers shared by the tensor-core tests. They carry a "core" prefix so
// they cannot collide with helpers of other test files in this package.

// coreMust returns a function that fails tb on a non-nil error and
// otherwise returns the tensor: coreMust(t)(x.View(3, 4)).
func coreMust(tb testing.TB) func(*Tensor, error) *Tensor {
	return func(t *Tensor, err error) *Tensor {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
		return t
	}
}

// coreLayout checks shape, strides, offset and contiguity in one go.
func coreLayout(tb testing.TB, name string, t *Tensor, shape, strides []int, offset int, contiguous bool) {
	tb.Helper()
	if !slices.Equal(t.Shape(), shape) || !slices.Equal(t.Strides(), strides) || t.Offset() != offset || t.IsContiguous() != contiguous {
		tb.Errorf("%s: got shape %v strides %v offset %d contiguous %v; want %v %v %d %v",
			name, t.Shape(), t.Strides(), t.Offset(), t.IsContiguous(), shape, strides, offset, contiguous)
	}
}

// coreValues checks the elements of t in row-major logical order.
func coreValues(tb testing.TB, name string, t *Tensor, want []float32) {
	tb.Helper()
	got, err := t.Float32s()
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	if !slices.Equal(got, want) {
		tb.Errorf("%s: values %v, want %v", name, got, want)
	}
}

// coreErrContains checks that err is a *ShapeError of op whose text
// contains every fragment.
func coreErrContains(tb testing.TB, name string, err error, op string, frags ...string) {
	tb.Helper()
	if err == nil {
		tb.Errorf("%s: no error, want a %s error", name, op)
		return
	}
	se, ok := err.(*ShapeError)
	if !ok {
		tb.Errorf("%s: error %T %q is not a *ShapeError", name, err, err)
		return
	}
	if se.Op != op || !strings.HasPrefix(err.Error(), op+": ") {
		tb.Errorf("%s: error %q names op %q, want %q", name, err, se.Op, op)
	}
	for _, f := range frags {
		if !strings.Contains(err.Error(), f) {
			tb.Errorf("%s: error %q does not mention %q", name, err, f)
		}
	}
}

// coreArange returns arange(n) (F32) viewed as shape, in led.
func coreArange(tb testing.TB, led *Ledger, shape ...int) *Tensor {
	tb.Helper()
	n := 1
	for _, s := range shape {
		n *= s
	}
	return coreMust(tb)(coreMust(tb)(arange(led, F32, n)).View(shape...))
}

// arange allocates the 1-D tensor [0, 1, …, n-1] of dtype dt in led
// (PyTorch's torch.arange(n)): the fixture whose element k is k, so a
// test can read off which memory slot a view reaches.
func arange(led *Ledger, dt DType, n int) (*Tensor, error) {
	t, err := newTensor(led, dt, []int{n}, false, "arange")
	if err != nil {
		return nil, err
	}
	for i := range n {
		t.st.store(i, float32(i))
	}
	return t, nil
}

// fromInt32 allocates an I32 tensor of shape holding a copy of data,
// recorded in led like any allocation.
func fromInt32(tb testing.TB, led *Ledger, data []int32, shape ...int) *Tensor {
	tb.Helper()
	t := coreMust(tb)(Empty(led, I32, shape...))
	if len(data) != t.Numel() {
		tb.Fatalf("fromInt32: shape %v needs %d elements, got %d", shape, t.Numel(), len(data))
	}
	copy(t.st.i32, data)
	return t
}

// Full allocates a contiguous tensor with every element v (torch.full;
// the package's tests build their fixtures with it).
func Full(led *Ledger, dt DType, v float32, shape ...int) (*Tensor, error) {
	t, err := newTensor(led, dt, shape, false, "full")
	if err != nil {
		return nil, err
	}
	for i := 0; i < t.st.n; i++ {
		t.st.store(i, v)
	}
	return t, nil
}
