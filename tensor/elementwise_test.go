package tensor

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

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
