package tensor

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// Property tests for the view ops. The oracle is an independent model of
// what each op means as an index map, written without strides: a refView
// is a shape plus a function from a logical index to the position in the
// original arange data. Every op composes that function the way PyTorch's
// docs define the op (t[..., start + i·step, ...], x[i, j] → x[j, i], …).
// Because the base tensor holds arange values, the value read through the
// tested tensor must equal that position, whether or not a copy happened
// along the way.

type refView struct {
	shape []int
	at    func(idx []int) int
}

func (r refView) numel() int { return refNumel(r.shape) }

// refRavel is the row-major flat index of idx in shape.
func refRavel(idx, shape []int) int {
	f := 0
	for k := range shape {
		f = f*shape[k] + idx[k]
	}
	return f
}

// refReshape is the meaning of view/reshape: flatten row-major, then
// unflatten into the new shape.
func refReshape(r refView, shape []int) refView {
	old := slices.Clone(r.shape)
	return refView{shape: slices.Clone(shape), at: func(idx []int) int {
		return r.at(refUnravel(refRavel(idx, shape), old))
	}}
}

// refExpressible is the brute-force oracle for View: it looks for strides
// that make newShape's index → storage offset map equal to the old layout
// composed with row-major reindexing. Candidate strides are read off the
// unit steps (the offset of e_k minus the offset of 0) and then checked on
// every element. It returns those strides, or ok=false.
func refExpressible(oldShape, oldStrides []int, oldOffset int, newShape []int) (strides []int, ok bool) {
	n := refNumel(newShape)
	if n == 0 {
		return ContiguousStrides(newShape), true
	}
	target := func(idx []int) int {
		o := oldOffset
		for k, i := range refUnravel(refRavel(idx, newShape), oldShape) {
			o += i * oldStrides[k]
		}
		return o
	}
	zero := make([]int, len(newShape))
	base := target(zero)
	strides = make([]int, len(newShape))
	for k := range newShape {
		if newShape[k] > 1 {
			e := slices.Clone(zero)
			e[k] = 1
			strides[k] = target(e) - base
		}
	}
	for f := range n {
		idx := refUnravel(f, newShape)
		o := base
		for k, i := range idx {
			o += i * strides[k]
		}
		if o != target(idx) {
			return nil, false
		}
	}
	return strides, true
}

// refOffsets lists the storage offset of every element of a layout.
func refOffsets(shape, strides []int, offset int) []int {
	n := refNumel(shape)
	out := make([]int, n)
	for f := range n {
		o := offset
		for k, i := range refUnravel(f, shape) {
			o += i * strides[k]
		}
		out[f] = o
	}
	return out
}

// randomFactorization splits n into up to maxDims factors (with random 1s),
// possibly replacing one entry by -1.
func randomFactorization(r *rand.Rand, n, maxDims int, allowInfer bool) []int {
	var shape []int
	rest := n
	nd := 1 + r.IntN(maxDims)
	for i := 0; i < nd-1; i++ {
		var divs []int
		for d := 1; d <= rest; d++ {
			if rest%d == 0 {
				divs = append(divs, d)
			}
		}
		if rest == 0 {
			divs = []int{0, 1, 2}
		}
		d := divs[r.IntN(len(divs))]
		shape = append(shape, d)
		if d != 0 {
			rest /= d
		}
	}
	shape = append(shape, rest)
	r.Shuffle(len(shape), func(i, j int) { shape[i], shape[j] = shape[j], shape[i] })
	if n == 0 && !slices.Contains(shape, 0) {
		shape[r.IntN(len(shape))] = 0
	}
	if allowInfer && n > 0 && r.IntN(4) == 0 {
		shape[r.IntN(len(shape))] = -1
	}
	return shape
}

// applyRandomOp applies one random view op to (x, ref) and returns the new
// pair and a description. Parameters are valid for the current shape;
// errors are failures of the op under test.
func applyRandomOp(tb testing.TB, r *rand.Rand, x *Tensor, ref refView) (*Tensor, refView, string) {
	tb.Helper()
	nd := len(ref.shape)
	shape := ref.shape
	for {
		switch r.IntN(11) {
		case 0: // transpose
			if nd == 0 {
				continue
			}
			a, b := r.IntN(nd), r.IntN(nd)
			y, err := x.Transpose(a-nd*r.IntN(2), b)
			if err != nil {
				tb.Fatalf("transpose(%d,%d) of %v: %v", a, b, shape, err)
			}
			ns := slices.Clone(shape)
			ns[a], ns[b] = ns[b], ns[a]
			return y, refView{ns, func(idx []int) int {
				o := slices.Clone(idx)
				o[a], o[b] = idx[b], idx[a]
				return ref.at(o)
			}}, fmt.Sprintf("transpose(%d,%d)", a, b)
		case 1: // permute
			perm := r.Perm(nd)
			y, err := x.Permute(perm...)
			if err != nil {
				tb.Fatalf("permute%v of %v: %v", perm, shape, err)
			}
			ns := make([]int, nd)
			for i, p := range perm {
				ns[i] = shape[p]
			}
			return y, refView{ns, func(idx []int) int {
				o := make([]int, nd)
				for i, p := range perm {
					o[p] = idx[i]
				}
				return ref.at(o)
			}}, fmt.Sprintf("permute%v", perm)
		case 2: // slice with step, Python semantics incl. negative and out-of-range bounds
			if nd == 0 {
				continue
			}
			d := r.IntN(nd)
			size := shape[d]
			start, end, step := r.IntN(2*size+3)-size-1, r.IntN(2*size+3)-size-1, 1+r.IntN(3)
			if r.IntN(4) == 0 {
				end = 1 << 40 // x[start:]
			}
			y, err := x.Slice(d, start, end, step)
			if err != nil {
				tb.Fatalf("slice(%d,%d,%d,%d) of %v: %v", d, start, end, step, shape, err)
			}
			// Python's slice.indices for a positive step.
			norm := func(i int) int {
				if i < 0 {
					i += size
					if i < 0 {
						i = 0
					}
				} else if i > size {
					i = size
				}
				return i
			}
			s, e := norm(start), norm(end)
			cnt := 0
			for i := s; i < e; i += step {
				cnt++
			}
			ns := slices.Clone(shape)
			ns[d] = cnt
			return y, refView{ns, func(idx []int) int {
				o := slices.Clone(idx)
				o[d] = s + idx[d]*step
				return ref.at(o)
			}}, fmt.Sprintf("slice(%d,%d,%d,%d)", d, start, end, step)
		case 3: // narrow
			if nd == 0 {
				continue
			}
			d := r.IntN(nd)
			start := r.IntN(shape[d] + 1)
			length := r.IntN(shape[d] - start + 1)
			y, err := x.Narrow(d, start, length)
			if err != nil {
				tb.Fatalf("narrow(%d,%d,%d) of %v: %v", d, start, length, shape, err)
			}
			ns := slices.Clone(shape)
			ns[d] = length
			return y, refView{ns, func(idx []int) int {
				o := slices.Clone(idx)
				o[d] += start
				return ref.at(o)
			}}, fmt.Sprintf("narrow(%d,%d,%d)", d, start, length)
		case 4: // select
			if nd == 0 {
				continue
			}
			d := r.IntN(nd)
			if shape[d] == 0 {
				continue
			}
			i := r.IntN(shape[d])
			y, err := x.Select(d, i-shape[d]*r.IntN(2))
			if err != nil {
				tb.Fatalf("select(%d,%d) of %v: %v", d, i, shape, err)
			}
			ns := slices.Delete(slices.Clone(shape), d, d+1)
			return y, refView{ns, func(idx []int) int {
				return ref.at(slices.Insert(slices.Clone(idx), d, i))
			}}, fmt.Sprintf("select(%d,%d)", d, i)
		case 5: // expand: size-1 dims to 1..3, maybe one new leading dim
			lead := r.IntN(2)
			if nd >= 5 {
				lead = 0
			}
			sizes := make([]int, lead+nd)
			for i := range sizes {
				if i < lead {
					sizes[i] = 1 + r.IntN(3)
				} else if shape[i-lead] == 1 {
					sizes[i] = 1 + r.IntN(3)
				} else if r.IntN(2) == 0 {
					sizes[i] = -1
				} else {
					sizes[i] = shape[i-lead]
				}
			}
			ns := slices.Clone(sizes)
			for i := lead; i < len(ns); i++ {
				if ns[i] == -1 {
					ns[i] = shape[i-lead]
				}
			}
			if refNumel(ns) > 4096 {
				continue
			}
			y, err := x.Expand(sizes...)
			if err != nil {
				tb.Fatalf("expand%v of %v: %v", sizes, shape, err)
			}
			return y, refView{ns, func(idx []int) int {
				o := slices.Clone(idx[lead:])
				for k := range o {
					if shape[k] == 1 {
						o[k] = 0
					}
				}
				return ref.at(o)
			}}, fmt.Sprintf("expand%v", sizes)
		case 6: // unsqueeze
			if nd >= 6 {
				continue
			}
			d := r.IntN(nd + 1)
			y, err := x.Unsqueeze(d)
			if err != nil {
				tb.Fatalf("unsqueeze(%d) of %v: %v", d, shape, err)
			}
			ns := slices.Insert(slices.Clone(shape), d, 1)
			return y, refView{ns, func(idx []int) int {
				return ref.at(slices.Delete(slices.Clone(idx), d, d+1))
			}}, fmt.Sprintf("unsqueeze(%d)", d)
		case 7: // squeeze one dim, or all size-1 dims
			if r.IntN(2) == 0 || nd == 0 {
				y, err := x.Squeeze()
				if err != nil {
					tb.Fatalf("squeeze() of %v: %v", shape, err)
				}
				var keep []int
				for k, s := range shape {
					if s != 1 {
						keep = append(keep, k)
					}
				}
				ns := make([]int, len(keep))
				for i, k := range keep {
					ns[i] = shape[k]
				}
				return y, refView{ns, func(idx []int) int {
					o := make([]int, nd)
					for i, k := range keep {
						o[k] = idx[i]
					}
					return ref.at(o)
				}}, "squeeze()"
			}
			d := r.IntN(nd)
			y, err := x.Squeeze(d)
			if err != nil {
				tb.Fatalf("squeeze(%d) of %v: %v", d, shape, err)
			}
			if shape[d] != 1 {
				return y, ref, fmt.Sprintf("squeeze(%d) (no-op)", d)
			}
			ns := slices.Delete(slices.Clone(shape), d, d+1)
			return y, refView{ns, func(idx []int) int {
				return ref.at(slices.Insert(slices.Clone(idx), d, 0))
			}}, fmt.Sprintf("squeeze(%d)", d)
		case 8: // unfold
			if nd == 0 || nd >= 6 {
				continue
			}
			d := r.IntN(nd)
			size := r.IntN(shape[d] + 1)
			step := 1 + r.IntN(3)
			y, err := x.Unfold(d, size, step)
			if err != nil {
				tb.Fatalf("unfold(%d,%d,%d) of %v: %v", d, size, step, shape, err)
			}
			ns := append(slices.Clone(shape), size)
			ns[d] = (shape[d]-size)/step + 1
			if refNumel(ns) > 4096 {
				continue
			}
			return y, refView{ns, func(idx []int) int {
				o := slices.Clone(idx[:nd])
				o[d] = idx[d]*step + idx[nd]
				return ref.at(o)
			}}, fmt.Sprintf("unfold(%d,%d,%d)", d, size, step)
		default: // view when possible, otherwise reshape (which copies)
			want := randomFactorization(r, ref.numel(), 4, true)
			resolved := slices.Clone(want)
			if i := slices.Index(want, -1); i >= 0 {
				resolved[i] = 1
				resolved[i] = ref.numel() / refNumel(resolved)
			}
			expStrides, expressible := refExpressible(x.shape, x.strides, x.offset, resolved)
			v, err := x.View(want...)
			if (err == nil) != expressible {
				tb.Fatalf("view%v of layout %v/%v: err=%v but brute force says expressible=%v (strides %v)",
					want, x.shape, x.strides, err, expressible, expStrides)
			}
			nr := refReshape(ref, resolved)
			if err != nil {
				if !strings.Contains(err.Error(), "reshape") {
					tb.Fatalf("view error does not suggest reshape: %v", err)
				}
				y, err := x.Reshape(want...)
				if err != nil {
					tb.Fatalf("reshape%v of %v: %v", want, shape, err)
				}
				if SharesStorage(x, y) {
					tb.Fatalf("reshape%v shares storage though view failed", want)
				}
				return y, nr, fmt.Sprintf("reshape%v (copy)", want)
			}
			y, err := x.Reshape(want...)
			if err != nil || !SharesStorage(x, y) || !slices.Equal(y.Strides(), v.Strides()) {
				tb.Fatalf("reshape%v of viewable %v: %v, %v; want the view %v", want, shape, y, err, v)
			}
			return v, nr, fmt.Sprintf("view%v", want)
		}
	}
}

// checkAgainstRef compares every element of x with the reference and,
// when x still views the base storage, every storage offset too.
func checkAgainstRef(tb testing.TB, x *Tensor, ref refView, base *Tensor, trail []string) {
	tb.Helper()
	if !slices.Equal(x.Shape(), ref.shape) {
		tb.Fatalf("after %v: shape %v, reference %v", trail, x.Shape(), ref.shape)
	}
	if len(x.Shape()) != len(x.Strides()) {
		tb.Fatalf("after %v: %d strides for %d dims", trail, len(x.Strides()), len(x.Shape()))
	}
	vals, err := x.Float32s()
	if err != nil {
		tb.Fatal(err)
	}
	shared := SharesStorage(x, base)
	for f := range ref.numel() {
		idx := refUnravel(f, ref.shape)
		want := ref.at(idx)
		if got, _ := x.At(idx...); got != float32(want) || vals[f] != float32(want) {
			tb.Fatalf("after %v: x%v = %v (Float32s %v), reference position %d", trail, idx, got, vals[f], want)
		}
		if shared {
			o := x.Offset()
			for k, i := range idx {
				o += i * x.strides[k]
			}
			if o != want {
				tb.Fatalf("after %v: offset of %v is %d, reference %d", trail, idx, o, want)
			}
		}
	}
	// Layout predicates against enumeration.
	if got, want := x.Overlaps(), refOverlaps(x.shape, x.strides); got != want {
		tb.Fatalf("after %v: Overlaps() = %v, enumeration says %v (%v/%v)", trail, got, want, x.shape, x.strides)
	}
	if got, want := x.IsNonOverlappingAndDense(), refDense(x.shape, x.strides); got != want {
		tb.Fatalf("after %v: IsNonOverlappingAndDense() = %v, enumeration says %v (%v/%v)", trail, got, want, x.shape, x.strides)
	}
	if x.IsContiguous() && ref.numel() > 0 {
		// Contiguous means row-major element f sits at offset+f.
		for f := range ref.numel() {
			o := x.Offset()
			for k, i := range refUnravel(f, ref.shape) {
				o += i * x.strides[k]
			}
			if o != x.Offset()+f {
				tb.Fatalf("after %v: IsContiguous but element %d at %d", trail, f, o)
			}
		}
	}
}

func TestViewChainsAgainstIndexModel(t *testing.T) {
	trials := 10000
	if testing.Short() {
		trials = 600
	}
	r := rand.New(rand.NewPCG(20240611, 7))
	for trial := range trials {
		led := NewLedger()
		shape := make([]int, r.IntN(4))
		for i := range shape {
			shape[i] = r.IntN(5)
			if r.IntN(8) != 0 && shape[i] == 0 {
				shape[i] = 1 + r.IntN(4) // mostly non-empty
			}
		}
		base := coreMust(t)(arange(led, F32, refNumel(shape)))
		x := coreMust(t)(base.View(shape...))
		ref := refView{slices.Clone(shape), func(idx []int) int { return refRavel(idx, shape) }}
		trail := []string{fmt.Sprintf("arange%v", shape)}
		copies := int64(0)
		for range 1 + r.IntN(8) {
			before := led.Stats()
			var desc string
			x, ref, desc = applyRandomOp(t, r, x, ref)
			trail = append(trail, desc)
			d := led.Stats().Sub(before)
			if strings.HasSuffix(desc, "(copy)") {
				copies++
				if d.CopyOps != 1 || d.BytesCopied != int64(x.Nbytes()) {
					t.Fatalf("trial %d %v: reshape copy accounted as %v", trial, trail, d)
				}
			} else if d.Allocations != 0 || d.BytesCopied != 0 {
				t.Fatalf("trial %d %v: view op allocated or copied: %v", trial, trail, d)
			}
			checkAgainstRef(t, x, ref, base, trail)
		}
		if led.Stats().CopyOps != copies {
			t.Fatalf("trial %d: %d copy ops for %d reshape copies", trial, led.Stats().CopyOps, copies)
		}
	}
}

// TestViewExpressibleExactly runs View on random raw layouts (AsStrided
// with arbitrary strides, 0 and overlapping ones included) and random
// target shapes, and checks View succeeds exactly when the brute-force
// oracle finds strides, and that it then maps every element to the same
// offset.
func TestViewExpressibleExactly(t *testing.T) {
	trials := 50000
	if testing.Short() {
		trials = 4000
	}
	r := rand.New(rand.NewPCG(99, 100))
	store := coreMust(t)(Meta(F32, 1<<12))
	succeeded := 0
	for trial := range trials {
		shape := make([]int, r.IntN(4))
		strides := make([]int, len(shape))
		for i := range shape {
			shape[i] = r.IntN(4)
			if shape[i] == 0 && r.IntN(6) != 0 {
				shape[i] = 1 + r.IntN(3)
			}
			switch r.IntN(3) {
			case 0: // a contiguous-ish stride
				strides[i] = refNumel(shape[i+1:])
			case 1:
				strides[i] = r.IntN(3)
			default:
				strides[i] = r.IntN(13)
			}
		}
		offset := r.IntN(3)
		x, err := store.AsStrided(shape, strides, offset)
		if err != nil {
			t.Fatalf("as_strided(%v, %v, %d): %v", shape, strides, offset, err)
		}
		want := randomFactorization(r, refNumel(shape), 4, false)
		expStrides, expressible := refExpressible(shape, strides, offset, want)
		v, err := x.View(want...)
		if (err == nil) != expressible {
			t.Fatalf("trial %d: view%v of %v/%v: err=%v, brute force expressible=%v (strides %v)",
				trial, want, shape, strides, err, expressible, expStrides)
		}
		if err != nil {
			continue
		}
		succeeded++
		got := refOffsets(v.shape, v.strides, v.offset)
		wantOffs := refOffsets(want, expStrides, offset)
		if refNumel(want) > 0 && !slices.Equal(got, wantOffs) {
			t.Fatalf("trial %d: view%v of %v/%v: offsets %v, oracle %v", trial, want, shape, strides, got, wantOffs)
		}
		if v.Offset() != offset || !SharesStorage(v, x) {
			t.Fatalf("trial %d: view moved offset or storage", trial)
		}
	}
	if succeeded < trials/10 || succeeded > trials*9/10 {
		t.Errorf("only %d of %d random views succeeded: the generator is not testing both sides", succeeded, trials)
	}
}

// TestReshapeMatchesCopyThenReshape checks Reshape against the reference
// "copy to row-major, then reinterpret", on random non-contiguous inputs.
func TestReshapeMatchesCopyThenReshape(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 55))
	for trial := range 500 {
		led := NewLedger()
		x := coreRandomInput(t, r, led, r.IntN(4))
		if x.Dim() > 0 && r.IntN(2) == 0 {
			x = coreMust(t)(x.Slice(r.IntN(x.Dim()), 0, 1<<20, 1+r.IntN(2)))
		}
		flat, _ := x.Float32s() // the reference copy, row-major
		want := randomFactorization(r, x.Numel(), 4, true)
		_, viewErr := x.View(want...)
		before := led.Stats()
		y, err := x.Reshape(want...)
		if err != nil {
			t.Fatalf("trial %d: reshape%v of %v: %v", trial, want, x, err)
		}
		coreValues(t, fmt.Sprintf("trial %d reshape%v", trial, want), y, flat)
		d := led.Stats().Sub(before)
		if viewErr == nil {
			if !SharesStorage(x, y) || d.BytesCopied != 0 {
				t.Fatalf("trial %d: viewable reshape copied (%v)", trial, d)
			}
		} else if SharesStorage(x, y) || d.CopyOps != 1 || d.BytesCopied != int64(x.Nbytes()) || !y.IsContiguous() {
			t.Fatalf("trial %d: non-viewable reshape: shares=%v accounting %v", trial, SharesStorage(x, y), d)
		}
	}
}
