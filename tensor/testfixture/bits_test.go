package testfixture

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// fakeTensor has the methods SameTensor reads, so the comparison is
// checked without importing package tensor.
type fakeTensor struct {
	shape []int
	dtype string
	vals  []float32
	err   error
}

func (f fakeTensor) Shape() []int                 { return f.shape }
func (f fakeTensor) DType() string                { return f.dtype }
func (f fakeTensor) Float32s() ([]float32, error) { return f.vals, f.err }

// TestFloat32Bits: the IEEE-754 patterns, written out by hand.
func TestFloat32Bits(t *testing.T) {
	got := Float32Bits(t, fakeTensor{vals: []float32{1, -2, float32(math.Copysign(0, -1))}})
	if want := []uint32{0x3f800000, 0xc0000000, 0x80000000}; !slices.Equal(got, want) {
		t.Fatalf("got %#x, want %#x", got, want)
	}
	if r := call(t, func(tb testing.TB) { Float32Bits(tb, fakeTensor{err: errors.New("meta tensor")}) }); !r.failed {
		t.Fatal("an unreadable tensor must fail the test")
	}
}

// TestSameTensor: equal bits pass; a different shape, dtype or single bit
// (0 vs -0, which compare equal as values) fails, naming the element.
func TestSameTensor(t *testing.T) {
	a := fakeTensor{shape: []int{2, 2}, dtype: "F32", vals: []float32{1, 2, 0, 4}}
	if r := call(t, func(tb testing.TB) { SameTensor(tb, "a", a, a) }); r.failed {
		t.Fatalf("identical tensors failed: %s", r.msg)
	}
	negZero := a
	negZero.vals = []float32{1, 2, float32(math.Copysign(0, -1)), 4}
	reshaped, other := a, a
	reshaped.shape = []int{4, 1}
	other.dtype = "F16"
	for _, tc := range []struct {
		name string
		b    fakeTensor
		want string
	}{
		{"negative zero", negZero, "element 2 differs"},
		{"shape", reshaped, "[2 2] F32 vs [4 1] F32"},
		{"dtype", other, "F32 vs [2 2] F16"},
	} {
		r := call(t, func(tb testing.TB) { SameTensor(tb, "w", a, tc.b) })
		if !r.failed || !strings.Contains(r.msg, tc.want) {
			t.Errorf("%s: failed %v with %q, want a failure containing %q", tc.name, r.failed, r.msg, tc.want)
		}
	}
}
