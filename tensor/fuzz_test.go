package tensor

import (
	"math"
	"slices"
	"testing"
)

// Fuzz targets for the layout ops. Each decodes shapes, strides and
// offsets from the fuzz bytes (mostly small values, sometimes huge or
// negative ones to probe the overflow and sign checks), calls the op, and
// requires: no panic; on success a layout that stays inside its storage
// and agrees with the brute-force oracles of view_prop_test.go when it is
// small enough to enumerate.

// fuzzBytes reads values from the fuzz input; past the end it reads zeros.
type fuzzBytes struct {
	b []byte
	i int
}

func (f *fuzzBytes) next() byte {
	if f.i >= len(f.b) {
		return 0
	}
	v := f.b[f.i]
	f.i++
	return v
}

// small returns a value in [lo, hi].
func (f *fuzzBytes) small(lo, hi int) int { return lo + int(f.next())%(hi-lo+1) }

// hugeInts are the values a hostile shape or stride would use.
var hugeInts = []int{1 << 31, 1 << 40, 1 << 53, 1<<53 + 1, 1 << 62, math.MaxInt, math.MinInt, -1 << 40, -2}

// dim returns a size or stride: usually in [-1, 6], sometimes huge.
func (f *fuzzBytes) dim() int {
	c := f.next()
	if c >= 240 {
		return hugeInts[int(c-240)%len(hugeInts)]
	}
	return int(c)%8 - 1
}

// ints returns up to maxLen values from dim().
func (f *fuzzBytes) ints(maxLen int) []int {
	n := f.small(0, maxLen)
	out := make([]int, n)
	for i := range out {
		out[i] = f.dim()
	}
	return out
}

// smallShape returns a valid shape with sizes in [0, 4].
func (f *fuzzBytes) smallShape(maxLen int) []int {
	n := f.small(0, maxLen)
	out := make([]int, n)
	for i := range out {
		out[i] = f.small(0, 4)
	}
	return out
}

// fuzzBase builds a small arange tensor and, driven by the bytes, makes it
// non-contiguous (transpose, stepped slice, expand, unfold).
func fuzzBase(f *fuzzBytes) *Tensor {
	shape := f.smallShape(4)
	x := Must(arange(nil, F32, refNumel(shape)))
	x = Must(x.View(shape...))
	for range f.small(0, 3) {
		nd := x.Dim()
		var y *Tensor
		var err error
		switch f.small(0, 3) {
		case 0:
			y, err = x.Transpose(f.small(0, 4), f.small(0, 4))
		case 1:
			y, err = x.Slice(f.small(0, 4), f.small(0, 4), f.small(0, 5), f.small(1, 3))
		case 2:
			if nd < 5 {
				y, err = x.Unsqueeze(f.small(0, nd))
				if err == nil {
					sizes := y.Shape()
					for i := range sizes {
						if sizes[i] == 1 {
							sizes[i] = f.small(1, 3)
						}
					}
					y, err = y.Expand(sizes...)
				}
			}
		default:
			if nd > 0 && nd < 5 {
				d := f.small(0, nd-1)
				y, err = x.Unfold(d, f.small(0, x.shape[d]), f.small(1, 2))
			}
		}
		if err == nil && y != nil && y.Numel() <= 4096 {
			x = y
		}
	}
	return x
}

// checkLayoutInBounds enumerates a small tensor's offsets and reads every
// element, which panics (failing the fuzz run) if any lies outside its
// storage.
func checkLayoutInBounds(t *testing.T, x *Tensor) {
	t.Helper()
	if len(x.Shape()) != len(x.Strides()) {
		t.Fatalf("%d sizes, %d strides", len(x.Shape()), len(x.Strides()))
	}
	if x.Numel() > 1<<16 {
		return
	}
	for _, o := range refOffsets(x.shape, x.strides, x.offset) {
		if o < 0 || o >= x.st.n {
			t.Fatalf("%v: offset %d outside storage of %d", x, o, x.st.n)
		}
	}
	if !x.IsMeta() {
		if _, err := x.Float32s(); err != nil {
			t.Fatal(err)
		}
	}
	_ = x.Overlaps()
	_ = x.IsNonOverlappingAndDense()
	_ = x.IsChannelsLast()
	_ = x.String()
}

func addFuzzSeeds(f *testing.F) {
	for _, s := range [][]byte{
		{},
		{2, 3, 4, 0, 2, 5},
		{2, 3, 4, 1, 0, 0, 1, 2, 12, 2},
		{3, 2, 3, 4, 1, 3, 0, 2, 1, 6, 1, 2},
		{1, 0, 0, 1, 3, 0, 7},
		{2, 4, 4, 2, 3, 1, 2, 2, 1, 3, 0, 240, 241},
		{4, 2, 1, 3, 2, 3, 2, 0, 1, 3, 3, 1, 1, 4, 255, 250, 1, 2},
		{2, 2, 2, 1, 0, 2, 0, 1, 2, 0, 0, 0, 0},
	} {
		f.Add(s)
	}
}

// FuzzView checks View against the brute-force oracle: it succeeds
// exactly when some strides express the reshaped layout, and then maps
// every element to the same storage offset.
func FuzzView(f *testing.F) {
	addFuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		in := &fuzzBytes{b: data}
		x := fuzzBase(in)
		want := in.ints(5)
		v, err := x.View(want...)
		if err != nil {
			if _, ok := err.(*ShapeError); !ok {
				t.Fatalf("view error %T %v is not a *ShapeError", err, err)
			}
		}
		// Resolve the request the way PyTorch would, independently. Sizes
		// beyond 2^20 only get the weaker check below: whether a product
		// that passes 2^53 before a later 0 is accepted is a limit of
		// this package, not PyTorch semantics.
		for _, s := range want {
			if s > 1<<20 {
				if err == nil && (refNumel(v.shape) != x.Numel() || !SharesStorage(v, x)) {
					t.Fatalf("view%v of %v = %v", want, x, v)
				}
				if err == nil {
					checkLayoutInBounds(t, v)
				}
				return
			}
		}
		resolved, valid := slices.Clone(want), true
		infer, prod := -1, 1
		for i, s := range want {
			switch {
			case s == -1 && infer < 0:
				infer = i
			case s < 0:
				valid = false
			default:
				prod *= s
			}
		}
		if valid && infer >= 0 {
			if prod == 0 || x.Numel()%prod != 0 {
				valid = false
			} else {
				resolved[infer] = x.Numel() / prod
			}
		}
		if valid && refNumel(resolved) != x.Numel() {
			valid = false
		}
		if !valid {
			if err == nil {
				t.Fatalf("view%v of %v succeeded: %v", want, x, v)
			}
			return
		}
		strides, expressible := refExpressible(x.shape, x.strides, x.offset, resolved)
		if (err == nil) != expressible {
			t.Fatalf("view%v of %v: err=%v, oracle expressible=%v", want, x, err, expressible)
		}
		if err != nil {
			return
		}
		if !slices.Equal(v.Shape(), resolved) || !SharesStorage(v, x) {
			t.Fatalf("view%v of %v = %v", want, x, v)
		}
		if v.Numel() > 0 && !slices.Equal(refOffsets(v.shape, v.strides, v.offset), refOffsets(resolved, strides, x.offset)) {
			t.Fatalf("view%v of %v = %v maps elements elsewhere than oracle strides %v", want, x, v, strides)
		}
		checkLayoutInBounds(t, v)
	})
}

// FuzzReshape checks Reshape: it errs exactly when the request is invalid,
// and otherwise its elements in row-major order are x's.
func FuzzReshape(f *testing.F) {
	addFuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		in := &fuzzBytes{b: data}
		x := fuzzBase(in)
		want := in.ints(5)
		y, err := x.Reshape(want...)
		_, viewErr := x.View(want...)
		if err != nil {
			if viewErr == nil {
				t.Fatalf("reshape%v of %v failed (%v) where view succeeded", want, x, err)
			}
			return
		}
		if viewErr == nil && !SharesStorage(x, y) {
			t.Fatalf("reshape%v of %v copied although view works", want, x)
		}
		if viewErr != nil && (SharesStorage(x, y) || !y.IsContiguous()) {
			t.Fatalf("reshape%v of %v: view failed (%v) but result %v is not a fresh contiguous copy", want, x, viewErr, y)
		}
		a, _ := x.Float32s()
		b, err := y.Float32s()
		if err != nil || !slices.Equal(a, b) {
			t.Fatalf("reshape%v of %v: elements %v, want %v (%v)", want, x, b, a, err)
		}
		checkLayoutInBounds(t, y)
	})
}

// FuzzExpand checks Expand: on success every size-1 or new dim that grew
// has stride 0, every kept dim keeps its stride, nothing is allocated,
// and (when small) element i reads x at the broadcast index.
func FuzzExpand(f *testing.F) {
	addFuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		in := &fuzzBytes{b: data}
		x := fuzzBase(in)
		sizes := in.ints(6)
		// Make the request plausible half the time: copy x's shape with some 1s grown.
		if in.next()%2 == 0 && len(sizes) >= x.Dim() {
			lead := len(sizes) - x.Dim()
			for i := range x.shape {
				if x.shape[i] != 1 || sizes[lead+i] < 0 {
					sizes[lead+i] = x.shape[i]
				}
			}
		}
		e, err := x.Expand(sizes...)
		if err != nil {
			if _, ok := err.(*ShapeError); !ok {
				t.Fatalf("expand error %T is not a *ShapeError", err)
			}
			return
		}
		if len(sizes) < x.Dim() || e.Dim() != len(sizes) || !SharesStorage(e, x) || e.Offset() != x.Offset() {
			t.Fatalf("expand%v of %v = %v", sizes, x, e)
		}
		lead := len(sizes) - x.Dim()
		for i, s := range sizes {
			got := e.shape[i]
			switch {
			case i < lead:
				// PyTorch's inferExpandGeometry (issue 15): a new size-1
				// dim gets size·stride of the next dim; a broadcast one 0.
				want := 0
				if s == 1 && x.Dim() > 0 {
					want = e.shape[i+1] * e.strides[i+1]
				}
				if s < 0 || got != s || e.strides[i] != want {
					t.Fatalf("expand%v of %v: leading dim %d is %d/%d", sizes, x, i, got, e.strides[i])
				}
			case s == -1 || s == x.shape[i-lead]:
				if got != x.shape[i-lead] || e.strides[i] != x.strides[i-lead] {
					t.Fatalf("expand%v of %v: kept dim %d is %d/%d", sizes, x, i, got, e.strides[i])
				}
			default:
				if x.shape[i-lead] != 1 || got != s || e.strides[i] != 0 {
					t.Fatalf("expand%v of %v: dim %d expanded to %d/%d", sizes, x, i, got, e.strides[i])
				}
			}
		}
		if e.Numel() <= 4096 {
			vals, _ := e.Float32s()
			for fl, v := range vals {
				idx := refUnravel(fl, e.shape)[lead:]
				for k := range idx {
					if x.shape[k] == 1 {
						idx[k] = 0
					}
				}
				if w, _ := x.At(idx...); w != v {
					t.Fatalf("expand%v of %v: element %d = %v, want x%v = %v", sizes, x, fl, v, idx, w)
				}
			}
		}
		checkLayoutInBounds(t, e)
	})
}

// FuzzAsStrided feeds arbitrary sizes, strides and offsets to AsStrided
// and MetaStrided: a success must stay inside the storage, and the
// predicates and copies on it must work.
func FuzzAsStrided(f *testing.F) {
	addFuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		in := &fuzzBytes{b: data}
		n := in.small(0, 64)
		store := Must(arange(nil, F32, n))
		shape := in.ints(5)
		strides := in.ints(5)
		if in.next()%2 == 0 && len(strides) > len(shape) {
			strides = strides[:len(shape)]
		}
		offset := in.dim()
		x, err := store.AsStrided(shape, strides, offset)
		m, merr := MetaStrided(F32, shape, strides, offset)
		if merr != nil && err == nil {
			t.Fatalf("as_strided(%v, %v, %d) fits a %d storage but MetaStrided fails: %v", shape, strides, offset, n, merr)
		}
		if merr == nil {
			if !m.IsMeta() || !slices.Equal(m.Shape(), shape) || !slices.Equal(m.Strides(), strides) || m.Offset() != offset {
				t.Fatalf("MetaStrided(%v, %v, %d) = %v", shape, strides, offset, m)
			}
			// A meta layout's storage is exactly as large as it needs.
			if m.Numel() > 0 && m.Numel() <= 1<<16 {
				offs := refOffsets(shape, strides, offset)
				if slices.Max(offs) != m.st.n-1 {
					t.Fatalf("MetaStrided(%v, %v, %d) storage %d, max offset %d", shape, strides, offset, m.st.n, slices.Max(offs))
				}
			}
			_, _ = m.Contiguous()
			checkLayoutInBounds(t, m)
		}
		if err != nil {
			if _, ok := err.(*ShapeError); !ok {
				t.Fatalf("as_strided error %T is not a *ShapeError", err)
			}
			return
		}
		checkLayoutInBounds(t, x)
		if x.Numel() <= 4096 {
			c, err := x.Contiguous()
			if err != nil {
				t.Fatal(err)
			}
			a, _ := x.Float32s()
			b, _ := c.Float32s()
			if !slices.Equal(a, b) || !c.IsContiguous() {
				t.Fatalf("contiguous of %v changed the elements", x)
			}
			for f, v := range a {
				o := offset
				for k, i := range refUnravel(f, shape) {
					o += i * strides[k]
				}
				if v != float32(o) {
					t.Fatalf("as_strided(%v, %v, %d) element %d = %v, want storage[%d]", shape, strides, offset, f, v, o)
				}
			}
			// Writing into it succeeds exactly when it does not overlap.
			src := Must(Full(nil, F32, 7, shape...))
			err = x.CopyFrom(src)
			if (err != nil) != refOverlaps(shape, strides) {
				t.Fatalf("copy_ into as_strided(%v, %v): %v, overlap by enumeration %v", shape, strides, err, refOverlaps(shape, strides))
			}
		}
	})
}
