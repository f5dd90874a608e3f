package tensor

import (
	"math"
	"slices"
)

// This file holds the elementwise ops: unary maps (SiLU), broadcasting
// binary ops (Add, Mul) and the in-place updates AddInPlace and
// ScaleInPlace, with PyTorch's broadcasting and type-promotion rules.

// BroadcastShapes returns the shape two operands broadcast to under
// PyTorch's rules: align the shapes on the right; each pair of sizes must
// be equal or one of them 1, and a missing leading dim counts as 1.
func BroadcastShapes(a, b []int) ([]int, error) { return broadcastShapes("broadcast", a, b) }

func broadcastShapes(op string, a, b []int) ([]int, error) {
	nd := max(len(a), len(b))
	out := make([]int, nd)
	for i := nd - 1; i >= 0; i-- {
		sa, sb := 1, 1
		if k := i - (nd - len(a)); k >= 0 {
			sa = a[k]
		}
		if k := i - (nd - len(b)); k >= 0 {
			sb = b[k]
		}
		switch {
		case sa == sb || sb == 1:
			out[i] = sa
		case sa == 1:
			out[i] = sb
		default:
			return nil, errorf(op, "The size of tensor a (%d) must match the size of tensor b (%d) at non-singleton dimension %d (shapes %s and %s)",
				sa, sb, i, FormatInts(a), FormatInts(b))
		}
	}
	if _, err := numelOf(op, out); err != nil {
		return nil, err
	}
	return out, nil
}

// resultDType is PyTorch's type promotion restricted to Stride's dtypes:
// equal dtypes keep theirs; F16 with BF16, or anything with F32, is F32.
func resultDType(a, b *Tensor) DType {
	if a.st.dtype == b.st.dtype {
		return a.st.dtype
	}
	return F32
}

// unary returns f applied to every element of t as a new contiguous
// tensor of t's dtype.
func unary(op string, t *Tensor, f func(float32) float32) (*Tensor, error) {
	if err := checkOperands(op, t); err != nil {
		return nil, err
	}
	out, err := newTensor(t.st.led, t.st.dtype, t.shape, t.st.meta, op)
	if err != nil || t.st.meta {
		return out, err
	}
	eachRow([]*Tensor{out, t}, func(offs, strs []int, n int) {
		for j := 0; j < n; j++ {
			out.st.store(offs[0]+j*strs[0], f(t.st.load(offs[1]+j*strs[1])))
		}
	})
	return out, nil
}

// SiLU returns x·σ(x) = x / (1 + e^-x) elementwise (llama2.c's SwiGLU
// gate) as a new contiguous tensor.
func SiLU(t *Tensor) (*Tensor, error) {
	return unary("silu", t, func(v float32) float32 {
		return v * (1 / (1 + float32(math.Exp(float64(-v)))))
	})
}

// binary broadcasts a and b to a common shape (stride 0 along broadcast
// dims, so nothing is materialized) and returns f of each pair as a new
// contiguous tensor in a's Ledger.
func binary(op string, a, b *Tensor, f func(x, y float32) float32) (*Tensor, error) {
	if err := checkOperands(op, a, b); err != nil {
		return nil, err
	}
	shape, err := broadcastShapes(op, a.shape, b.shape)
	if err != nil {
		return nil, err
	}
	meta := a.st.meta || b.st.meta
	out, err := newTensor(a.st.led, resultDType(a, b), shape, meta, op)
	if err != nil || meta {
		return out, err
	}
	ae, err := a.Expand(shape...)
	if err != nil {
		return nil, err
	}
	be, err := b.Expand(shape...)
	if err != nil {
		return nil, err
	}
	eachRow([]*Tensor{out, ae, be}, func(offs, strs []int, n int) {
		for j := 0; j < n; j++ {
			out.st.store(offs[0]+j*strs[0], f(ae.st.load(offs[1]+j*strs[1]), be.st.load(offs[2]+j*strs[2])))
		}
	})
	return out, nil
}

// Add returns a + b with PyTorch broadcasting, as a new contiguous tensor.
func Add(a, b *Tensor) (*Tensor, error) {
	return binary("add", a, b, func(x, y float32) float32 { return x + y })
}

// Mul returns a · b elementwise with PyTorch broadcasting, as a new
// contiguous tensor.
func Mul(a, b *Tensor) (*Tensor, error) {
	return binary("mul", a, b, func(x, y float32) float32 { return x * y })
}

// AddInPlace does a += b (PyTorch's a.add_(b)): b is broadcast to a's
// shape, a keeps its shape. a must not overlap itself: adding into
// bias.expand(4, 3) would add four times into each bias element, so it is
// refused with PyTorch's "more than one element of the written-to tensor
// refers to a single memory location". If b views a's storage with a
// different layout it is cloned first, so no element is read after being
// written. On a meta a it only checks shapes.
func AddInPlace(a, b *Tensor) error {
	const op = "add_"
	if err := checkOperands(op, a, b); err != nil {
		return err
	}
	be, err := b.Expand(a.shape...)
	if err != nil {
		return errorf(op, "output with shape %s doesn't match the broadcast shape of %s and %s", FormatInts(a.shape), FormatInts(a.shape), FormatInts(b.shape))
	}
	if err := a.CheckNoOverlap(op); err != nil {
		return err
	}
	if a.st.meta || b.st.meta {
		return nil
	}
	if be.st == a.st && (be.offset != a.offset || !slices.Equal(be.strides, a.strides)) {
		c, err := b.Clone()
		if err != nil {
			return err
		}
		defer c.Release()
		if be, err = c.Expand(a.shape...); err != nil {
			return err
		}
	}
	eachRow([]*Tensor{a, be}, func(offs, strs []int, n int) {
		for j := 0; j < n; j++ {
			o := offs[0] + j*strs[0]
			a.st.store(o, a.st.load(o)+be.st.load(offs[1]+j*strs[1]))
		}
	})
	return nil
}

// ScaleInPlace multiplies every element of t by s (t.mul_(s)); like
// AddInPlace it refuses an overlapping t, and does nothing on a meta t.
func ScaleInPlace(t *Tensor, s float32) error {
	const op = "mul_"
	if err := checkOperands(op, t); err != nil {
		return err
	}
	if err := t.CheckNoOverlap(op); err != nil {
		return err
	}
	if t.st.meta {
		return nil
	}
	eachRow([]*Tensor{t}, func(offs, strs []int, n int) {
		for j := 0; j < n; j++ {
			o := offs[0] + j*strs[0]
			t.st.store(o, t.st.load(o)*s)
		}
	})
	return nil
}
