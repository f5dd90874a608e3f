package tensor

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

// The references below are written independently of math.go: plain
// index loops over At(), accumulated in float64.

// unravel turns a row-major linear index into an index of shape.
func unravel(i int, shape []int) []int {
	idx := make([]int, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		idx[d] = i % shape[d]
		i /= shape[d]
	}
	return idx
}

// bcastIndex maps an index of the broadcast shape out to an index of a
// tensor of shape in (aligned right; size-1 dims read index 0).
func bcastIndex(idx, in []int) []int {
	r := make([]int, len(in))
	for k := range in {
		v := idx[len(idx)-len(in)+k]
		if in[k] == 1 {
			v = 0
		}
		r[k] = v
	}
	return r
}

func at(t *testing.T, x *Tensor, idx ...int) float64 {
	t.Helper()
	v, err := x.At(idx...)
	if err != nil {
		t.Fatalf("At%v: %v", idx, err)
	}
	return float64(v)
}

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

// closeTo checks got against want with a tolerance scaled by the
// magnitude of the terms (float32 accumulation error grows with k).
func closeTo(t *testing.T, name string, got []float32, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d elements, want %d", name, len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(float64(got[i]) - want[i]); d > tol*(1+math.Abs(want[i])) || math.IsNaN(float64(got[i])) {
			t.Fatalf("%s: element %d = %v, want %v", name, i, got[i], want[i])
		}
	}
}

func randn(led *Ledger, seed uint64, shape ...int) *Tensor {
	return Must(Randn(led, F32, seed, shape...))
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

func (x *Tensor) mustF32(t *testing.T) []float32 {
	t.Helper()
	v, err := x.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return v
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

// refSoftmax is softmax of each last-dim row of x in float64.
func refSoftmax(t *testing.T, x *Tensor) []float64 {
	shape := x.Shape()
	n := shape[len(shape)-1]
	var out []float64
	rows := x.Numel() / n
	for r := 0; r < rows; r++ {
		lead := unravel(r, shape[:len(shape)-1])
		row := make([]float64, n)
		mx := math.Inf(-1)
		for j := range row {
			row[j] = at(t, x, append(append([]int(nil), lead...), j)...)
			mx = math.Max(mx, row[j])
		}
		var s float64
		for j := range row {
			row[j] = math.Exp(row[j] - mx)
			s += row[j]
		}
		for j := range row {
			out = append(out, row[j]/s)
		}
	}
	return out
}

func TestSoftmax(t *testing.T) {
	led := NewLedger()
	base := Must(Randn(led, F32, 7, 3, 5, 4))
	// Large logits: without max-subtraction exp overflows to +Inf.
	if err := ScaleInPlace(base, 50); err != nil {
		t.Fatal(err)
	}
	x := Must(base.Transpose(1, 2)) // rows run along a stride-4 dim
	want := refSoftmax(t, x)
	got, err := Softmax(x)
	if err != nil {
		t.Fatal(err)
	}
	if !got.IsContiguous() || FormatInts(got.Shape()) != "[3, 4, 5]" {
		t.Fatalf("softmax result %v", got)
	}
	closeTo(t, "softmax", got.mustF32(t), want, 1e-6)
	sums := Must(SumDim(got, -1)).mustF32(t)
	for i, s := range sums {
		if math.Abs(float64(s)-1) > 1e-6 {
			t.Fatalf("row %d sums to %v", i, s)
		}
	}

	// In place through the same transposed view: the underlying storage
	// now holds the softmax of the columns.
	if err := SoftmaxLastDimInPlace(x); err != nil {
		t.Fatal(err)
	}
	closeTo(t, "softmax_ in place", x.mustF32(t), want, 1e-6)
}

func TestSoftmaxRefusesOverlapAndSkipsMeta(t *testing.T) {
	led := NewLedger()
	e := Must(Must(Arange(led, F32, 3)).Expand(4, 3))
	err := SoftmaxLastDimInPlace(e)
	if err == nil || !strings.Contains(err.Error(), "more than one element of the written-to tensor refers to a single memory location") {
		t.Fatalf("softmax_ on an expanded tensor: %v", err)
	}
	m := Must(Meta(F32, 2, 32, 4096, 4096))
	if err := SoftmaxLastDimInPlace(m); err != nil {
		t.Fatal(err)
	}
	s, err := Softmax(m)
	if err != nil || !s.IsMeta() || FormatInts(s.Shape()) != "[2, 32, 4096, 4096]" {
		t.Fatalf("meta softmax %v %v", s, err)
	}
}

func TestRMSNorm(t *testing.T) {
	led := NewLedger()
	x := Must(randn(led, 1, 6, 4).T())              // [4,6], rows strided
	w := Must(randn(led, 2, 12).Slice(0, 0, 12, 2)) // [6], stride 2
	const eps = 1e-5
	got, err := RMSNorm(x, w, eps)
	if err != nil {
		t.Fatal(err)
	}
	var want []float64
	for i := 0; i < 4; i++ {
		var ss float64
		for j := 0; j < 6; j++ {
			v := at(t, x, i, j)
			ss += v * v
		}
		r := 1 / math.Sqrt(ss/6+eps)
		for j := 0; j < 6; j++ {
			want = append(want, at(t, w, j)*at(t, x, i, j)*r)
		}
	}
	closeTo(t, "rmsnorm", got.mustF32(t), want, 1e-5)

	if _, err := RMSNorm(x, Must(Empty(led, F32, 5)), eps); err == nil || !strings.Contains(err.Error(), "[5]") {
		t.Fatalf("rmsnorm with a [5] weight on [4, 6]: %v", err)
	}
	m, err := RMSNorm(Must(Meta(F32, 2, 4096, 4096)), Must(Meta(F32, 4096)), eps)
	if err != nil || !m.IsMeta() {
		t.Fatalf("meta rmsnorm %v %v", m, err)
	}
}

func TestSiLU(t *testing.T) {
	led := NewLedger()
	x := Must(randn(led, 3, 4, 5).Transpose(0, 1))
	got, err := SiLU(x)
	if err != nil {
		t.Fatal(err)
	}
	var want []float64
	for i := 0; i < 5; i++ {
		for j := 0; j < 4; j++ {
			v := at(t, x, i, j)
			want = append(want, v/(1+math.Exp(-v)))
		}
	}
	closeTo(t, "silu", got.mustF32(t), want, 1e-6)
}

func TestAddMulBroadcast(t *testing.T) {
	led := NewLedger()
	cases := []struct {
		a, b  *Tensor
		shape string
	}{
		{randn(led, 1, 3, 1), randn(led, 2, 4), "[3, 4]"},
		{randn(led, 3, 2, 1, 4), randn(led, 4, 3, 1), "[2, 3, 4]"},
		{Must(randn(led, 5, 4, 3).T()), Must(randn(led, 6, 1, 8).Slice(1, 0, 8, 2)), "[3, 4]"},
		{Must(Full(led, F32, 2)), randn(led, 7, 2, 2), "[2, 2]"},
		{Must(randn(led, 8, 3).Expand(2, 3)), randn(led, 9, 2, 1), "[2, 3]"},
	}
	ops := []struct {
		name string
		f    func(a, b *Tensor) (*Tensor, error)
		ref  func(x, y float64) float64
	}{
		{"add", Add, func(x, y float64) float64 { return x + y }},
		{"mul", Mul, func(x, y float64) float64 { return x * y }},
	}
	for ci, c := range cases {
		for _, op := range ops {
			got, err := op.f(c.a, c.b)
			if err != nil {
				t.Fatalf("case %d %s: %v", ci, op.name, err)
			}
			if FormatInts(got.Shape()) != c.shape || !got.IsContiguous() {
				t.Fatalf("case %d %s: %v, want shape %s", ci, op.name, got, c.shape)
			}
			shape := got.Shape()
			v := got.mustF32(t)
			for i := range v {
				idx := unravel(i, shape)
				x := at(t, c.a, bcastIndex(idx, c.a.Shape())...)
				y := at(t, c.b, bcastIndex(idx, c.b.Shape())...)
				// One float32 op on float32 inputs is the correctly rounded
				// float64 result, so this is exact.
				if want := float32(op.ref(x, y)); v[i] != want {
					t.Fatalf("case %d %s %v: %v, want %v", ci, op.name, idx, v[i], want)
				}
			}
		}
	}
	_, err := Add(randn(led, 1, 3, 4), randn(led, 1, 3))
	if err == nil || !strings.Contains(err.Error(), "The size of tensor a (4) must match the size of tensor b (3) at non-singleton dimension 1") {
		t.Fatalf("add [3,4]+[3]: %v", err)
	}
	h, err := Mul(Must(Full(led, F16, 1.5, 2)), Must(Full(led, F16, 3, 2)))
	if err != nil || h.DType() != F16 || h.mustF32(t)[0] != 4.5 {
		t.Fatalf("f16 mul: %v %v", h, err)
	}
	if h, err := Add(Must(Full(led, F16, 1, 2)), Must(Full(led, BF16, 1, 2))); err != nil || h.DType() != F32 {
		t.Fatalf("f16+bf16 should promote to float32: %v %v", h, err)
	}
}

// Seed: "e.add_(1) on bias.expand(4, 3) fails: unsupported operation".
func TestAddInPlaceOnExpandedFails(t *testing.T) {
	led := NewLedger()
	bias := Must(FromFloat32(led, F32, []float32{1, 2, 3}, 3))
	e := Must(bias.Expand(4, 3))
	one := Must(Full(led, F32, 1))
	err := AddInPlace(e, one)
	if err == nil || !strings.HasPrefix(err.Error(), "add_: unsupported operation: more than one element of the written-to tensor refers to a single memory location") {
		t.Fatalf("add_ on expand(4, 3): %v", err)
	}
	if v := bias.mustF32(t); fmt.Sprint(v) != "[1 2 3]" {
		t.Fatalf("failed add_ modified bias: %v", v)
	}
	if err := ScaleInPlace(Must(Must(Arange(led, F32, 6)).Unfold(0, 3, 1)), 2); err == nil {
		t.Fatal("mul_ on overlapping unfold windows succeeded")
	}
}

func TestAddInPlace(t *testing.T) {
	led := NewLedger()
	base := randn(led, 1, 3, 4)
	orig := base.mustF32(t)
	a := Must(base.T()) // write through a transposed view
	b := randn(led, 2, 3)
	if err := AddInPlace(a, b); err != nil {
		t.Fatal(err)
	}
	// a[i,j] = base[j,i] += b[j]
	for j := 0; j < 3; j++ {
		for i := 0; i < 4; i++ {
			want := float32(float64(orig[j*4+i]) + at(t, b, j))
			if got := float32(at(t, base, j, i)); got != want {
				t.Fatalf("base[%d,%d] = %v, want %v", j, i, got, want)
			}
		}
	}
	// b views a's storage with another layout: x += x.T must read the
	// old values (PyTorch errors; we clone b), never half-updated ones.
	sq := randn(led, 3, 3, 3)
	old := sq.mustF32(t)
	if err := AddInPlace(sq, Must(sq.T())); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			if got, want := float32(at(t, sq, i, j)), old[i*3+j]+old[j*3+i]; got != want {
				t.Fatalf("x += x.T at [%d,%d] = %v, want %v", i, j, got, want)
			}
		}
	}
	if err := AddInPlace(randn(led, 4, 3), randn(led, 5, 4)); err == nil || !strings.Contains(err.Error(), "[3]") {
		t.Fatalf("add_ [3] += [4]: %v", err)
	}
	if err := AddInPlace(Must(Meta(F32, 2, 3)), randn(led, 6, 3)); err != nil {
		t.Fatalf("meta add_: %v", err)
	}
}

func TestScaleInPlace(t *testing.T) {
	led := NewLedger()
	base := randn(led, 1, 4, 4)
	orig := base.mustF32(t)
	s := Must(base.Slice(1, 1, 4, 2)) // columns 1 and 3
	if err := ScaleInPlace(s, -0.5); err != nil {
		t.Fatal(err)
	}
	v := base.mustF32(t)
	for i := range v {
		want := orig[i]
		if c := i % 4; c == 1 || c == 3 {
			want *= -0.5
		}
		if v[i] != want {
			t.Fatalf("element %d = %v, want %v", i, v[i], want)
		}
	}
}

func TestArgmax(t *testing.T) {
	led := NewLedger()
	x := Must(FromFloat32(led, F32, []float32{1, 5, 2, 5, -1, 0}, 6))
	if i, err := Argmax(x); err != nil || i != 1 {
		t.Fatalf("argmax = %d %v, want the first maximum 1", i, err)
	}
	// Strided: elements 0, 2, 4 = 1, 2, -1.
	if i, err := Argmax(Must(x.Slice(0, 0, 6, 2))); err != nil || i != 1 {
		t.Fatalf("strided argmax = %d %v, want 1", i, err)
	}
	if _, err := Argmax(randn(led, 1, 2, 2)); err == nil {
		t.Fatal("argmax of a 2-D tensor succeeded")
	}
	if _, err := Argmax(Must(Empty(led, F32, 0))); err == nil {
		t.Fatal("argmax of an empty tensor succeeded")
	}
	if _, err := Argmax(Must(Meta(F32, 5))); !errors.Is(err, ErrMeta) {
		t.Fatalf("argmax of meta: %v", err)
	}
}

func TestSumDim(t *testing.T) {
	led := NewLedger()
	x := Must(randn(led, 1, 2, 3, 4).Permute(2, 0, 1)) // [4,2,3]
	for dim := -3; dim < 3; dim++ {
		got, err := SumDim(x, dim)
		if err != nil {
			t.Fatal(err)
		}
		d := (dim + 3) % 3
		shape := x.Shape()
		n := shape[d]
		outShape := append(append([]int(nil), shape[:d]...), shape[d+1:]...)
		if FormatInts(got.Shape()) != FormatInts(outShape) {
			t.Fatalf("sum dim %d shape %v", dim, got.Shape())
		}
		var want []float64
		for i := 0; i < got.Numel(); i++ {
			idx := unravel(i, outShape)
			var s float64
			for j := 0; j < n; j++ {
				full := append(append(append([]int(nil), idx[:d]...), j), idx[d:]...)
				s += at(t, x, full...)
			}
			want = append(want, s)
		}
		closeTo(t, fmt.Sprint("sum dim ", dim), got.mustF32(t), want, 1e-6)
	}
	if _, err := SumDim(x, 3); err == nil || !strings.Contains(err.Error(), "Dimension out of range") {
		t.Fatalf("sum dim 3: %v", err)
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
	x := Must(Arange(led, F32, 6))
	x = Must(x.View(2, 3))                           // [2,3] strides [3,1]
	w := Must(Must(Arange(led, F32, 12)).View(4, 3)) // [4,3]
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
