package tensor

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

// Bad input to every shape op must come back as an error, never a panic,
// and the error must say which op failed and on what shape or strides, in
// PyTorch's words where PyTorch has them.

func TestShapeOpErrors(t *testing.T) {
	x := coreArange(t, nil, 3, 4)           // [3, 4] / [4, 1]
	x3 := coreArange(t, nil, 2, 3, 4)       // [2, 3, 4]
	s0 := coreMust(t)(Full(nil, F32, 1))    // 0-dim
	e0 := coreMust(t)(Empty(nil, F32, 0))   // [0]
	xt := coreMust(t)(x.T())                // [4, 3] / [1, 4]
	m := coreMust(t)(Meta(F32, 2, 4096, 8)) // meta
	cases := []struct {
		name  string
		call  func() (*Tensor, error)
		op    string
		frags []string
	}{
		// view / reshape
		{"view numel mismatch", func() (*Tensor, error) { return x.View(5) }, "view", []string{"'[5]'", "size 12"}},
		{"view two -1", func() (*Tensor, error) { return x.View(-1, -1) }, "view", []string{"only one dimension can be inferred", "[-1, -1]"}},
		{"view negative size", func() (*Tensor, error) { return x.View(-2, 6) }, "view", []string{"invalid shape dimension -2", "[-2, 6]"}},
		{"view -1 ambiguous", func() (*Tensor, error) { return e0.View(0, -1) }, "view", []string{"ambiguous", "[0, -1]"}},
		{"view -1 not divisible", func() (*Tensor, error) { return x.View(5, -1) }, "view", []string{"'[5, -1]'", "12"}},
		{"view overflow", func() (*Tensor, error) { return x.View(1<<40, 1<<40) }, "view", []string{"invalid for input of size 12"}},
		{"view non-viewable", func() (*Tensor, error) { return xt.View(12) }, "view", []string{"not compatible", "[4, 3]", "[1, 4]", "reshape"}},
		{"reshape numel mismatch", func() (*Tensor, error) { return xt.Reshape(7) }, "reshape", []string{"'[7]'", "12"}},
		{"reshape two -1", func() (*Tensor, error) { return x.Reshape(-1, 2, -1) }, "reshape", []string{"only one dimension", "[-1, 2, -1]"}},
		// transpose / t / permute
		{"transpose dim", func() (*Tensor, error) { return x.Transpose(0, 2) }, "transpose", []string{"Dimension out of range", "got 2", "[3, 4]"}},
		{"transpose negative dim", func() (*Tensor, error) { return x.Transpose(-3, 0) }, "transpose", []string{"[-2, 1]", "[3, 4]"}},
		{"t of 3-D", func() (*Tensor, error) { return x3.T() }, "t", []string{"<= 2 dimensions", "[2, 3, 4]"}},
		{"permute duplicate", func() (*Tensor, error) { return x3.Permute(0, 0, 1) }, "permute", []string{"duplicate", "[0, 0, 1]", "[2, 3, 4]"}},
		{"permute wrap duplicate", func() (*Tensor, error) { return x3.Permute(2, 1, -1) }, "permute", []string{"duplicate", "[2, 1, -1]"}},
		{"permute too short", func() (*Tensor, error) { return x3.Permute(1, 0) }, "permute", []string{"does not match", "[2, 3, 4]", "[1, 0]"}},
		{"permute out of range", func() (*Tensor, error) { return x3.Permute(0, 1, 3) }, "permute", []string{"Dimension out of range", "[2, 3, 4]"}},
		// slice / narrow / select
		{"slice step 0", func() (*Tensor, error) { return x.Slice(1, 0, 4, 0) }, "slice", []string{"step must be positive", "[3, 4]"}},
		{"slice negative step", func() (*Tensor, error) { return x.Slice(1, 0, 4, -1) }, "slice", []string{"got -1", "[3, 4]"}},
		{"slice dim", func() (*Tensor, error) { return x.Slice(2, 0, 1, 1) }, "slice", []string{"Dimension out of range", "[3, 4]"}},
		{"slice 0-dim", func() (*Tensor, error) { return s0.Slice(0, 0, 1, 1) }, "slice", []string{"0-dim"}},
		{"narrow past end", func() (*Tensor, error) { return x.Narrow(1, 2, 3) }, "narrow", []string{"exceeds dimension size (4)", "[3, 4]"}},
		{"narrow start", func() (*Tensor, error) { return x.Narrow(0, 5, 0) }, "narrow", []string{"start out of range", "got 5", "[3, 4]"}},
		{"narrow negative start", func() (*Tensor, error) { return x.Narrow(0, -4, 1) }, "narrow", []string{"start out of range", "[3, 4]"}},
		{"narrow negative length", func() (*Tensor, error) { return x.Narrow(0, 0, -1) }, "narrow", []string{"non-negative", "[3, 4]"}},
		{"narrow dim", func() (*Tensor, error) { return x.Narrow(-3, 0, 1) }, "narrow", []string{"Dimension out of range", "[3, 4]"}},
		{"select index", func() (*Tensor, error) { return x.Select(1, 4) }, "select", []string{"index 4 out of range", "[3, 4]"}},
		{"select negative index", func() (*Tensor, error) { return x.Select(0, -4) }, "select", []string{"index -4", "[3, 4]"}},
		{"select dim", func() (*Tensor, error) { return x.Select(2, 0) }, "select", []string{"Dimension out of range", "[3, 4]"}},
		{"select 0-dim", func() (*Tensor, error) { return s0.Select(0, 0) }, "select", []string{"0-dim"}},
		// expand
		{"expand non-1 dim", func() (*Tensor, error) { return x.Expand(3, 8) }, "expand", []string{"must match the existing size (4)", "[3, 8]", "[3, 4]"}},
		{"expand negative", func() (*Tensor, error) { return x.Expand(-2, 4) }, "expand", []string{"negative", "[-2, 4]", "[3, 4]"}},
		{"expand leading -1", func() (*Tensor, error) { return x.Expand(-1, 3, 4) }, "expand", []string{"leading, non-existing dimension", "[-1, 3, 4]", "[3, 4]"}},
		{"expand too few", func() (*Tensor, error) { return x.Expand(4) }, "expand", []string{"number of sizes provided (1)", "[4]", "[3, 4]"}},
		{"expand overflow", func() (*Tensor, error) { return x.Expand(1<<30, 1<<30, 3, 4) }, "expand", []string{"2^53"}},
		// squeeze / unsqueeze
		{"squeeze dim", func() (*Tensor, error) { return x.Squeeze(2) }, "squeeze", []string{"Dimension out of range", "[3, 4]"}},
		{"unsqueeze dim", func() (*Tensor, error) { return x.Unsqueeze(3) }, "unsqueeze", []string{"[-3, 2]", "got 3", "[3, 4]"}},
		{"unsqueeze negative dim", func() (*Tensor, error) { return x.Unsqueeze(-4) }, "unsqueeze", []string{"got -4", "[3, 4]"}},
		// unfold
		{"unfold too big", func() (*Tensor, error) { return x.Unfold(1, 5, 1) }, "unfold", []string{"maximum size for tensor at dimension 1 is 4 but size is 5", "[3, 4]"}},
		{"unfold negative size", func() (*Tensor, error) { return x.Unfold(1, -1, 1) }, "unfold", []string{"size is -1", "[3, 4]"}},
		{"unfold step 0", func() (*Tensor, error) { return x.Unfold(0, 2, 0) }, "unfold", []string{"step is 0", "[3, 4]"}},
		{"unfold dim", func() (*Tensor, error) { return x.Unfold(2, 1, 1) }, "unfold", []string{"Dimension out of range", "[3, 4]"}},
		// as_strided / meta_strided
		{"as_strided out of bounds", func() (*Tensor, error) { return x.AsStrided([]int{4, 4}, []int{4, 1}, 0) }, "as_strided", []string{"out of bounds", "[4, 4]", "[4, 1]", "storage of size 48"}},
		{"as_strided offset past end", func() (*Tensor, error) { return x.AsStrided([]int{1}, []int{1}, 12) }, "as_strided", []string{"out of bounds", "offset 12"}},
		{"as_strided negative offset", func() (*Tensor, error) { return x.AsStrided([]int{2}, []int{1}, -1) }, "as_strided", []string{"invalid storage offset -1", "[2]"}},
		{"as_strided negative stride", func() (*Tensor, error) { return x.AsStrided([]int{2, 2}, []int{-1, 1}, 2) }, "as_strided", []string{"Negative strides", "[-1, 1]", "[2, 2]"}},
		{"as_strided length mismatch", func() (*Tensor, error) { return x.AsStrided([]int{2, 2}, []int{1}, 0) }, "as_strided", []string{"mismatch", "[2, 2]", "[1]"}},
		{"as_strided negative size", func() (*Tensor, error) { return x.AsStrided([]int{-2}, []int{1}, 0) }, "as_strided", []string{"negative dimension -2"}},
		{"as_strided span overflow", func() (*Tensor, error) { return x.AsStrided([]int{3, 3}, []int{1 << 60, 1}, 0) }, "as_strided", []string{"overflow", "[3, 3]"}},
		{"meta_strided negative stride", func() (*Tensor, error) { return MetaStrided(F32, []int{2}, []int{-3}, 0) }, "as_strided", []string{"Negative strides", "[-3]"}},
		// meta tensors go through the same checks
		{"meta view", func() (*Tensor, error) { return m.View(3, -1) }, "view", []string{"'[3, -1]'", "65536"}},
		{"meta expand", func() (*Tensor, error) { return m.Expand(2, 4096, 9) }, "expand", []string{"[2, 4096, 9]", "[2, 4096, 8]"}},
		// constructors
		{"empty negative", func() (*Tensor, error) { return Empty(nil, F32, 2, -3) }, "empty", []string{"negative dimension -3", "[2 -3]"}},
		{"zeros overflow", func() (*Tensor, error) { return Zeros(nil, F32, 1<<30, 1<<30) }, "zeros", []string{"2^53"}},
		{"meta bad dtype", func() (*Tensor, error) { return Meta(DType(99), 2) }, "meta", []string{"unknown dtype 99"}},
		{"from_float32 length", func() (*Tensor, error) { return FromFloat32(nil, F32, []float32{1, 2}, 3) }, "from_float32", []string{"[3]", "got 2"}},
		{"wrap length", func() (*Tensor, error) { return WrapFloat32(nil, make([]float32, 5), 2, 3) }, "wrap", []string{"[2 3]", "got 5"}},
		{"wrap16 dtype", func() (*Tensor, error) { return WrapUint16(nil, F32, make([]uint16, 2), 2) }, "wrap", []string{"float32", "16-bit"}},
		{"wrap16 length", func() (*Tensor, error) { return WrapUint16(nil, BF16, make([]uint16, 2), 3) }, "wrap", []string{"[3]", "got 2"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var (
				got *Tensor
				err error
			)
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("panicked: %v", p)
					}
				}()
				got, err = c.call()
			}()
			if got != nil {
				t.Errorf("returned a tensor %v alongside the error", got)
			}
			coreErrContains(t, c.name, err, c.op, c.frags...)
		})
	}
}

// TestAccessorErrors covers the element accessors and the dim-indexed
// getters, which share the same rules.
func TestAccessorErrors(t *testing.T) {
	x := coreArange(t, nil, 3, 4)
	m := coreMust(t)(Meta(F32, 3, 4))
	_, err := x.At(1)
	coreErrContains(t, "At arity", err, "at", "got 1 indices", "[3 4]")
	_, err = x.At(3, 0)
	coreErrContains(t, "At bounds", err, "at", "index 3 is out of bounds for dimension 0 with size 3")
	_, err = x.At(0, -1)
	coreErrContains(t, "At negative", err, "at", "index -1")
	coreErrContains(t, "Set bounds", x.Set(1, 0, 4), "set", "index 4", "size 4")
	_, err = x.Size(2)
	coreErrContains(t, "Size", err, "size", "Dimension out of range", "[3, 4]")
	_, err = x.Stride(-3)
	coreErrContains(t, "Stride", err, "stride", "Dimension out of range", "[3, 4]")
	if sz, err := x.Size(-1); err != nil || sz != 4 {
		t.Errorf("Size(-1) = %d, %v", sz, err)
	}
	if st, err := x.Stride(0); err != nil || st != 4 {
		t.Errorf("Stride(0) = %d, %v", st, err)
	}
	// Meta tensors refuse data access with ErrMeta.
	for name, err := range map[string]error{
		"At":       func() error { _, err := m.At(0, 0); return err }(),
		"Set":      m.Set(1, 0, 0),
		"Float32s": func() error { _, err := m.Float32s(); return err }(),
		"CopyFrom": m.CopyFrom(x),
		"CopyTo":   x.CopyFrom(m),
	} {
		if !errors.Is(err, ErrMeta) {
			t.Errorf("%s on a meta tensor: %v, want ErrMeta", name, err)
		}
	}
	// CopyFrom broadcast mismatch names both shapes.
	y := coreArange(t, nil, 3, 5)
	coreErrContains(t, "CopyFrom shapes", x.CopyFrom(y), "copy_", "[3, 5]", "[3, 4]")
	if _, err := ParseDType("f8"); err == nil || !strings.Contains(err.Error(), `"f8"`) {
		t.Errorf("ParseDType(f8) = %v", err)
	}
}

// TestShapeErrorsAreTyped checks the error type is stable for callers that
// want to branch on it.
func TestShapeErrorsAreTyped(t *testing.T) {
	_, err := coreArange(t, nil, 2, 3).View(7)
	var se *ShapeError
	if !errors.As(fmt.Errorf("wrapped: %w", err), &se) || se.Op != "view" {
		t.Fatalf("errors.As(*ShapeError) failed for %v", err)
	}
}

func TestSliceHugeStepNoOverflow(t *testing.T) {
	x := Must(arange(nil, F32, 10))
	s, err := x.Slice(0, 2, 10, math.MaxInt)
	if err == nil && (len(s.Shape()) != 1 || s.Shape()[0] != 1) {
		t.Fatalf("slice with a huge step: shape %v, want [1] (or an error)", s.Shape())
	}
	y := Must(Must(arange(nil, F32, 12)).View(3, 4))
	if _, err := y.Slice(1, 0, 4, math.MaxInt/2); err == nil || !strings.Contains(err.Error(), "overflows") {
		t.Fatalf("stride·step overflow must be an error, got %v", err)
	}
}
