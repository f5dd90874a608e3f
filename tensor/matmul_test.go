package tensor

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// refMatmul computes torch.matmul for operands of ≥ 2 dims in float64.
func refMatmul(t *testing.T, a, b *Tensor) ([]int, []float64) {
	as, bs := a.Shape(), b.Shape()
	m, k, n := as[len(as)-2], as[len(as)-1], bs[len(bs)-1]
	nb := max(len(as), len(bs)) - 2
	batch := make([]int, nb)
	for i := range batch {
		batch[i] = 1
		for _, s := range [][]int{as[:len(as)-2], bs[:len(bs)-2]} {
			if j := i - (nb - len(s)); j >= 0 && s[j] != 1 {
				batch[i] = s[j]
			}
		}
	}
	shape := append(append([]int(nil), batch...), m, n)
	total := 1
	for _, s := range shape {
		total *= s
	}
	out := make([]float64, total)
	for i := range out {
		idx := unravel(i, shape)
		ai := bcastIndex(idx[:nb], as[:len(as)-2])
		bi := bcastIndex(idx[:nb], bs[:len(bs)-2])
		var s float64
		for p := 0; p < k; p++ {
			s += at(t, a, append(append([]int(nil), ai...), idx[nb], p)...) *
				at(t, b, append(append([]int(nil), bi...), p, idx[nb+1])...)
		}
		out[i] = s
	}
	return shape, out
}

func TestMatmulAgainstFloat64(t *testing.T) {
	led := NewLedger()
	cases := []struct {
		name string
		a, b func() *Tensor
	}{
		{"2d contiguous",
			func() *Tensor { return randn(led, 1, 3, 4) },
			func() *Tensor { return randn(led, 2, 4, 5) }},
		{"a transposed",
			func() *Tensor { return Must(randn(led, 3, 4, 3).T()) },
			func() *Tensor { return randn(led, 4, 4, 5) }},
		{"b transposed (x @ W.T)",
			func() *Tensor { return randn(led, 5, 3, 4) },
			func() *Tensor { return Must(randn(led, 6, 5, 4).T()) }},
		{"both transposed",
			func() *Tensor { return Must(randn(led, 7, 7, 2).T()) },
			func() *Tensor { return Must(randn(led, 8, 9, 7).T()) }},
		{"row slice with ld > cols",
			func() *Tensor { return Must(randn(led, 9, 6, 8).Slice(1, 1, 7, 1)) },
			func() *Tensor { return Must(randn(led, 10, 6, 10).Narrow(1, 2, 5)) }},
		{"step slice needs a copy",
			func() *Tensor { return Must(randn(led, 11, 3, 8).Slice(1, 0, 8, 2)) },
			func() *Tensor { return randn(led, 12, 4, 3) }},
		{"expanded inner dim (stride 0)",
			func() *Tensor { return randn(led, 13, 2, 4) },
			func() *Tensor { return Must(randn(led, 14, 1, 5).Expand(4, 5)) }},
		{"batched 3d @ 2d",
			func() *Tensor { return randn(led, 15, 2, 3, 4) },
			func() *Tensor { return randn(led, 16, 4, 5) }},
		{"batched broadcast size-1 dims",
			func() *Tensor { return randn(led, 17, 1, 3, 4, 5) },
			func() *Tensor { return randn(led, 18, 2, 1, 5, 6) }},
		{"batched expanded batch dim",
			func() *Tensor { return Must(randn(led, 19, 1, 4, 5).Expand(3, 4, 5)) },
			func() *Tensor { return Must(randn(led, 20, 3, 6, 5).Transpose(-2, -1)) }},
		{"attention q @ k^T from [B,S,H,D] views",
			func() *Tensor { return Must(randn(led, 21, 2, 5, 3, 4).Transpose(1, 2)) },
			func() *Tensor {
				return Must(Must(randn(led, 22, 2, 6, 3, 4).Transpose(1, 2)).Transpose(-2, -1))
			}},
		{"f16 operands",
			func() *Tensor { return Must(Must(randn(led, 23, 3, 4).To(F16)).T()) },
			func() *Tensor { return Must(randn(led, 24, 3, 2).To(BF16)) }},
		{"size-1 dims with odd strides",
			func() *Tensor { return Must(randn(led, 25, 4, 6).Narrow(0, 1, 1)) },
			func() *Tensor { return Must(randn(led, 26, 6, 3).Narrow(1, 2, 1)) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, b := c.a(), c.b()
			got, err := Matmul(a, b)
			if err != nil {
				t.Fatal(err)
			}
			shape, want := refMatmul(t, a, b)
			if FormatInts(got.Shape()) != FormatInts(shape) {
				t.Fatalf("shape %v, want %v", got.Shape(), shape)
			}
			if !got.IsContiguous() || got.DType() != F32 || got.Ledger() != a.Ledger() {
				t.Fatalf("result %v is not a contiguous F32 tensor in a's context", got)
			}
			closeTo(t, c.name, Must(got, nil).mustF32(t), want, 1e-5)
		})
	}
}

func TestMatmulVectors(t *testing.T) {
	led := NewLedger()
	m := randn(led, 1, 4, 3)
	v := randn(led, 2, 4)
	// vec @ mat: [4] @ [4,3] → [3]
	got, err := Matmul(v, m)
	if err != nil {
		t.Fatal(err)
	}
	if FormatInts(got.Shape()) != "[3]" {
		t.Fatalf("shape %v", got.Shape())
	}
	_, want := refMatmul(t, Must(v.Unsqueeze(0)), m)
	closeTo(t, "vec@mat", got.mustF32(t), want, 1e-5)
	// mat.T @ vec through a strided vector: [3,4] @ [4] → [3]
	vs := Must(randn(led, 3, 8).Slice(0, 0, 8, 2))
	got, err = Matmul(Must(m.T()), vs)
	if err != nil {
		t.Fatal(err)
	}
	_, want = refMatmul(t, Must(m.T()), Must(vs.Unsqueeze(1)))
	if FormatInts(got.Shape()) != "[3]" {
		t.Fatalf("shape %v", got.Shape())
	}
	closeTo(t, "mat@vec", got.mustF32(t), want, 1e-5)
}

func TestMatmulEmptyDims(t *testing.T) {
	led := NewLedger()
	got, err := Matmul(Must(Empty(led, F32, 3, 0)), Must(Empty(led, F32, 0, 2)))
	if err != nil {
		t.Fatal(err)
	}
	v := got.mustF32(t)
	if FormatInts(got.Shape()) != "[3, 2]" || len(v) != 6 {
		t.Fatalf("k=0: %v", got)
	}
	for _, x := range v {
		if x != 0 {
			t.Fatalf("k=0 product must be zeros, got %v", v)
		}
	}
	got, err = Matmul(Must(Empty(led, F32, 0, 4)), Must(Empty(led, F32, 4, 2)))
	if err != nil || FormatInts(got.Shape()) != "[0, 2]" {
		t.Fatalf("m=0: %v %v", got, err)
	}
}

// The cuBLAS LDA/LDB point: a transposed operand is passed to GEMM with
// Trans and its leading dimension, never copied; only the result is
// allocated.
func TestMatmulTransposedOperandCopiesNothing(t *testing.T) {
	led := NewLedger()
	q := randn(led, 1, 2, 6, 3, 4) // [B,S,H,D]
	k := randn(led, 2, 2, 7, 3, 4)
	qh := Must(q.Transpose(1, 2))                         // [B,H,S,D], strides [72,4,12,1]
	kt := Must(Must(k.Transpose(1, 2)).Transpose(-2, -1)) // [B,H,D,S], strides [84,4,1,12]
	before := led.Stats()
	s, err := Matmul(qh, kt)
	if err != nil {
		t.Fatal(err)
	}
	d := led.Stats().Sub(before)
	if d.BytesCopied != 0 || d.CopyOps != 0 {
		t.Fatalf("transposed operands copied %d bytes in %d ops", d.BytesCopied, d.CopyOps)
	}
	if want := int64(2 * 3 * 6 * 7 * 4); d.BytesAllocated != want || d.Allocations != 1 {
		t.Fatalf("allocated %d bytes in %d allocs, want only the %d-byte result", d.BytesAllocated, d.Allocations, want)
	}
	if FormatInts(s.Shape()) != "[2, 3, 6, 7]" || FormatInts(s.Strides()) != "[126, 42, 7, 1]" {
		t.Fatalf("scores %v", s)
	}

	// A step-2 slice is unit-stride in neither order: it is copied, and
	// the copy is counted.
	x := Must(randn(led, 3, 3, 8).Slice(1, 0, 8, 2)) // [3,4] strides [8,2]
	w := randn(led, 4, 4, 5)
	before = led.Stats()
	if _, err := Matmul(x, w); err != nil {
		t.Fatal(err)
	}
	d = led.Stats().Sub(before)
	if d.BytesCopied != 3*4*4 || d.CopyOps != 1 {
		t.Fatalf("strided operand: copied %d bytes in %d ops, want 48 in 1", d.BytesCopied, d.CopyOps)
	}
	if d.LiveBytes != led.Stats().LiveBytes || before.LiveBytes+3*5*4 != d.LiveBytes {
		t.Fatalf("the temporary copy should be released: live %d before, %d after", before.LiveBytes, d.LiveBytes)
	}
}

func TestMatmulMeta(t *testing.T) {
	led := NewLedger()
	q := Must(Must(Meta(F32, 2, 4096, 32, 128)).Transpose(1, 2))
	k := Must(Must(Meta(F32, 2, 4096, 32, 128)).Transpose(1, 2))
	s, err := Matmul(q, Must(k.Transpose(-2, -1)))
	if err != nil {
		t.Fatal(err)
	}
	if !s.IsMeta() || FormatInts(s.Shape()) != "[2, 32, 4096, 4096]" ||
		FormatInts(s.Strides()) != "[536870912, 16777216, 4096, 1]" {
		t.Fatalf("meta scores %v", s)
	}
	// A meta operand mixed with a real one gives a meta result in a's
	// context and computes (and allocates) nothing.
	a := randn(led, 1, 3, 4)
	before := led.Stats()
	r, err := Matmul(a, Must(Meta(F32, 4, 1<<20)))
	if err != nil || !r.IsMeta() || FormatInts(r.Shape()) != "[3, 1048576]" {
		t.Fatalf("mixed meta: %v %v", r, err)
	}
	if d := led.Stats().Sub(before); d.BytesAllocated != 0 {
		t.Fatalf("meta matmul allocated %d bytes", d.BytesAllocated)
	}
}

func TestMatmulErrors(t *testing.T) {
	led := NewLedger()
	cases := []struct {
		a, b *Tensor
		want string
	}{
		{randn(led, 1, 2, 3), randn(led, 1, 4, 5), "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"},
		{randn(led, 1, 2, 3, 4), randn(led, 1, 3, 4, 5), "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"},
		{Must(Full(led, F32, 1)), randn(led, 1, 3), "need to be at least 1D"},
		{Must(Meta(F32, 8, 3)), Must(Meta(F32, 4, 5)), "[8, 3] and [4, 5]"},
		{nil, randn(led, 1, 3), "operand 0 is nil"},
	}
	for _, c := range cases {
		_, err := Matmul(c.a, c.b)
		var se *ShapeError
		if err == nil || !errors.As(err, &se) || se.Op != "matmul" || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Matmul(%v, %v) = %v, want a matmul error containing %q", c.a, c.b, err, c.want)
		}
	}
}

func BenchmarkMatmulTransposed(b *testing.B) {
	led := NewLedger()
	x := randn(led, 1, 64, 288)
	w := Must(randn(led, 2, 768, 288).T())
	b.ResetTimer()
	for range b.N {
		r, err := Matmul(x, w)
		if err != nil {
			b.Fatal(err)
		}
		r.Release()
	}
}

// Multiplying by a transposed weight passes it to GEMM with Trans and its
// leading dimension: nothing is copied, only the result is allocated.
func ExampleMatmul() {
	led := NewLedger()
	x := Must(arange(led, F32, 6))
	x = Must(x.View(2, 3))                           // [2,3] strides [3,1]
	w := Must(Must(arange(led, F32, 12)).View(4, 3)) // [4,3]
	wt := Must(w.T())                                // [3,4] strides [1,3]
	before := led.Stats()
	y, err := Matmul(x, wt)
	if err != nil {
		panic(err)
	}
	d := led.Stats().Sub(before)
	v, _ := y.Float32s()
	fmt.Println(y.Shape(), y.Strides(), v)
	fmt.Println("copied:", d.BytesCopied, "allocated:", d.BytesAllocated)
	// Output:
	// [2 4] [4 1] [5 14 23 32 14 50 86 122]
	// copied: 0 allocated: 32
}
