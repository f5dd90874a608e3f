package tensor

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// randomStridedView returns a random view of a fresh random tensor of
// dtype dt: a permutation, maybe a stepped slice, maybe an expand.
func randomStridedView(tb testing.TB, r *rand.Rand, led *Ledger, dt DType, maxDim int) *Tensor {
	nd := 1 + r.IntN(4)
	shape := make([]int, nd)
	for i := range shape {
		shape[i] = 1 + r.IntN(maxDim)
	}
	x := coreMust(tb)(Randn(led, dt, r.Uint64(), shape...))
	x = coreMust(tb)(x.Permute(r.Perm(nd)...))
	if r.IntN(2) == 0 {
		d := r.IntN(nd)
		x = coreMust(tb)(x.Slice(d, r.IntN(2), x.shape[d], 1+r.IntN(2)))
	}
	if r.IntN(3) == 0 {
		x = coreMust(tb)(x.Unsqueeze(r.IntN(nd + 1)))
		sizes := x.Shape()
		for i := range sizes {
			if sizes[i] == 1 {
				sizes[i] = 1 + r.IntN(3)
			}
		}
		x = coreMust(tb)(x.Expand(sizes...))
	}
	return x
}

// TestCloneRandomLayouts copies random strided views of every dtype and
// compares each element with At on the source (an independent path).
func TestCloneRandomLayouts(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for trial := range 600 {
		led := NewLedger()
		dt := DType(trial % 3)
		x := randomStridedView(t, r, led, dt, 9)
		before := led.Stats()
		c := coreMust(t)(x.Clone())
		if d := led.Stats().Sub(before); d.BytesCopied != int64(x.Nbytes()) || d.CopyOps != 1 {
			t.Fatalf("trial %d: clone accounting %v for %d bytes", trial, d, x.Nbytes())
		}
		if !c.IsContiguous() || c.DType() != dt || !slices.Equal(c.Shape(), x.Shape()) {
			t.Fatalf("trial %d: clone %v of %v", trial, c, x)
		}
		vals, _ := c.Float32s()
		for f, v := range vals {
			w, _ := x.At(refUnravel(f, x.shape)...)
			if math.Float32bits(v) != math.Float32bits(w) {
				t.Fatalf("trial %d (%v %v/%v): element %d = %v, want %v", trial, dt, x.shape, x.strides, f, v, w)
			}
		}
	}
}

// TestCopyFromRandomLayouts writes random views into random non-overlapping
// destination views, across dtypes, and checks every destination element
// and that storage outside the destination is untouched.
func TestCopyFromRandomLayouts(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for trial := range 400 {
		led := NewLedger()
		src := randomStridedView(t, r, led, DType(r.IntN(3)), 12)
		// Destination: a permuted, sliced window of a larger buffer.
		dt := DType(r.IntN(3))
		nd := src.Dim()
		perm := r.Perm(nd)
		big := make([]int, nd)
		for i, p := range perm {
			big[p] = src.shape[i] + r.IntN(3)
		}
		buf := coreMust(t)(Full(led, dt, -7, big...))
		dst := coreMust(t)(buf.Permute(perm...)) // dst.shape[i] = big[perm[i]] >= src.shape[i]
		for d := range nd {
			dst = coreMust(t)(dst.Narrow(d, dst.shape[d]-src.shape[d], src.shape[d]))
		}
		before := led.Stats()
		if err := dst.CopyFrom(src); err != nil {
			t.Fatalf("trial %d: copy_ %v <- %v: %v", trial, dst, src, err)
		}
		if d := led.Stats().Sub(before); d.BytesCopied != int64(dst.Nbytes()) || d.CopyOps != 1 || d.Allocations != 0 {
			t.Fatalf("trial %d: copy_ accounting %v", trial, d)
		}
		inDst := map[int]bool{}
		for _, o := range refOffsets(dst.shape, dst.strides, dst.offset) {
			inDst[o] = true
		}
		for f := range dst.Numel() {
			idx := refUnravel(f, dst.shape)
			s, _ := src.At(idx...)
			want := roundTo(dt, s)
			if got, _ := dst.At(idx...); math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("trial %d: dst%v = %v, want %v (src %v as %v)", trial, idx, got, want, s, dt)
			}
		}
		for o := range buf.st.n {
			if !inDst[o] && buf.st.load(o) != -7 {
				t.Fatalf("trial %d: copy_ wrote storage slot %d outside the destination", trial, o)
			}
		}
	}
}

// roundTo rounds v the way a store into dtype dt does, via the public
// bit conversions.
func roundTo(dt DType, v float32) float32 {
	switch dt {
	case F16:
		return F16Float(F16Bits(v))
	case BF16:
		return BF16Float(BF16Bits(v))
	}
	return v
}

// TestCopyFromBroadcastAndSelfOverlap covers the two special cases of
// copy_: a broadcast source, and a source that overlaps the destination
// in the same storage (x[1:] = x[:-1] must shift, not smear).
func TestCopyFromBroadcastAndSelfOverlap(t *testing.T) {
	led := NewLedger()
	dst := coreMust(t)(Zeros(led, F32, 3, 4))
	row := coreMust(t)(FromFloat32(led, F32, []float32{1, 2, 3, 4}, 4))
	if err := dst.CopyFrom(row); err != nil {
		t.Fatal(err)
	}
	coreValues(t, "broadcast copy", dst, []float32{1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4})

	x := coreMust(t)(arange(led, F32, 6))
	head := coreMust(t)(x.Narrow(0, 0, 5))
	tail := coreMust(t)(x.Narrow(0, 1, 5))
	if err := tail.CopyFrom(head); err != nil {
		t.Fatal(err)
	}
	coreValues(t, "x[1:] = x[:-1]", x, []float32{0, 0, 1, 2, 3, 4})

	// In-place transpose of a square matrix through its own transposed view.
	sq := coreMust(t)(FromFloat32(led, F32, []float32{1, 2, 3, 4}, 2, 2))
	if err := sq.CopyFrom(coreMust(t)(sq.T())); err != nil {
		t.Fatal(err)
	}
	coreValues(t, "x.copy_(x.t())", sq, []float32{1, 3, 2, 4})
}

// TestCopyPreservesHalfBits checks that copies between tensors of the same
// 16-bit dtype move bit patterns, NaN payloads and signed zeros included.
func TestCopyPreservesHalfBits(t *testing.T) {
	for _, dt := range []DType{F16, BF16} {
		bits := []uint16{0x7c01, 0x7e00, 0xfc00, 0x8000, 0x0001, 0x3c00, 0x7f81, 0xffff}
		x := coreMust(t)(WrapUint16(nil, dt, slices.Clone(bits), 2, 4))
		c := coreMust(t)(coreMust(t)(coreMust(t)(x.T()).Contiguous()).T())
		got := coreMust(t)(c.Contiguous())
		if !slices.Equal(got.Storage().Uint16s(), bits) {
			t.Errorf("%v: transpose round trip %#04x, want %#04x", dt, got.Storage().Uint16s(), bits)
		}
		r := coreMust(t)(x.Repeat(2, 1))
		if !slices.Equal(r.Storage().Uint16s()[8:], bits) {
			t.Errorf("%v: repeat %#04x", dt, r.Storage().Uint16s())
		}
	}
}

// TestTiledCopyMatchesWalk drives the cache-blocked path (tileDim finds a
// transpose-like pair) on shapes that are not multiples of the tile, for
// both dtypes families and both directions (strided source into a
// contiguous destination, and contiguous source into a strided one), and
// compares with the plain walk and with At.
func TestTiledCopyMatchesWalk(t *testing.T) {
	cases := []struct {
		name  string
		shape []int
		perm  []int
	}{
		{"2-D transpose", []int{70, 45}, []int{1, 0}},
		{"batched transpose", []int{3, 33, 65}, []int{0, 2, 1}},
		{"heads swap", []int{2, 40, 5, 24}, []int{0, 2, 1, 3}},
		{"full reverse", []int{17, 9, 40}, []int{2, 1, 0}},
	}
	for _, c := range cases {
		for _, dt := range []DType{F32, F16, BF16} {
			x := coreMust(t)(Randn(nil, dt, 3, c.shape...))
			p := coreMust(t)(x.Permute(c.perm...))
			// Strided source → contiguous destination.
			got := coreMust(t)(p.Clone())
			want := coreMust(t)(Empty(nil, dt, p.Shape()...))
			if dt == F32 {
				copyWalk(want, p, want.st.f32, p.st.f32)
			} else {
				copyWalk(want, p, want.st.half, p.st.half)
			}
			if tileDim(got, p) < 0 && c.name != "heads swap" {
				t.Errorf("%s %v: tileDim did not pick the blocked path", c.name, dt)
			}
			a, _ := got.Float32s()
			b, _ := want.Float32s()
			if !slices.Equal(a, b) {
				t.Errorf("%s %v: tiled clone differs from the plain walk", c.name, dt)
			}
			for f, v := range a {
				if w, _ := p.At(refUnravel(f, p.shape)...); w != v {
					t.Fatalf("%s %v: element %d = %v, want %v", c.name, dt, f, v, w)
				}
			}
			// Contiguous source → strided destination (copy_ into a permuted view).
			buf := coreMust(t)(Zeros(nil, dt, c.shape...))
			dstView := coreMust(t)(buf.Permute(c.perm...))
			if err := dstView.CopyFrom(got); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(buf.Storage().Float32s(), x.Storage().Float32s()) || !slices.Equal(buf.Storage().Uint16s(), x.Storage().Uint16s()) {
				t.Errorf("%s %v: copy_ through the permuted view did not restore the original storage", c.name, dt)
			}
		}
	}
}
