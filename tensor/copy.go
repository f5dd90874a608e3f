package tensor

import "fmt"

// This file holds the ops that move bytes: Contiguous, Clone and the
// strided→strided CopyFrom. Every one of them records its bytes in the
// destination's Ledger.

// Contiguous returns t itself when it is already contiguous (no copy, no
// allocation) and otherwise a row-major copy of it. On a meta tensor the
// result is a new contiguous meta tensor: the layout a copy would have.
func (t *Tensor) Contiguous() (*Tensor, error) {
	if t.IsContiguous() {
		return t, nil
	}
	return t.Clone()
}

// Clone always returns a new contiguous tensor with t's elements.
func (t *Tensor) Clone() (*Tensor, error) {
	out, err := newTensor(t.st.led, t.st.dtype, t.shape, t.st.meta, "clone")
	if err != nil {
		return nil, err
	}
	if t.st.meta {
		return out, nil
	}
	copyStrided(out, t)
	out.st.led.RecordCopy(int64(out.Nbytes()))
	return out, nil
}

// CopyFrom writes src's elements into t (PyTorch's t.copy_(src)): shapes
// must match after broadcasting src to t's shape, dtypes are converted, and
// t must not overlap itself. Both layouts are read through their strides.
func (t *Tensor) CopyFrom(src *Tensor) error {
	if t.st.meta || src.st.meta {
		return fmt.Errorf("copy_: %w", ErrMeta)
	}
	if err := t.CheckNoOverlap("copy_"); err != nil {
		return err
	}
	s, err := src.Expand(t.shape...)
	if err != nil {
		return errorf("copy_", "source of shape %s cannot be broadcast to destination shape %s", FormatInts(src.shape), FormatInts(t.shape))
	}
	if t.st == s.st {
		// Same storage: go through a temporary so overlapping ranges do
		// not read values already overwritten.
		tmp, err := s.Clone()
		if err != nil {
			return err
		}
		s = tmp
	}
	copyStrided(t, s)
	t.st.led.RecordCopy(int64(t.Nbytes()))
	return nil
}

// copyStrided copies src into dst element by element in row-major logical
// order; shapes are equal. Same-dtype copies move raw elements (bit
// patterns for F16/BF16, so NaN payloads survive); contiguous → contiguous
// is a single memmove; a transpose-like pair of layouts goes through the
// cache-blocked path of copyTiled; everything else walks the innermost dim
// as a tight loop. Mixed dtypes convert through float32.
func copyStrided(dst, src *Tensor) {
	if dst.Numel() == 0 {
		return
	}
	switch {
	case dst.st.dtype == F32 && src.st.dtype == F32:
		copySame(dst, src, dst.st.f32, src.st.f32)
	case dst.st.dtype == I32 && src.st.dtype == I32:
		copySame(dst, src, dst.st.i32, src.st.i32)
	case dst.st.dtype == src.st.dtype:
		copySame(dst, src, dst.st.half, src.st.half)
	default:
		walk2(dst, src, func(do, dstr, so, sstr, cnt int) {
			for j := 0; j < cnt; j++ {
				dst.st.store(do, src.st.load(so))
				do += dstr
				so += sstr
			}
		})
	}
}

// copySame is copyStrided for equal dtypes, on the raw element slices.
func copySame[E float32 | uint16 | int32](dst, src *Tensor, d, s []E) {
	n := dst.Numel()
	if dst.IsContiguous() && src.IsContiguous() {
		copy(d[dst.offset:dst.offset+n], s[src.offset:src.offset+n])
		return
	}
	if b := tileDim(dst, src); b >= 0 {
		copyTiled(dst, src, d, s, b)
		return
	}
	copyWalk(dst, src, d, s)
}

// copyWalk is the plain strided copy: row-major order, innermost dim as a
// tight loop (a memmove when both inner strides are 1).
func copyWalk[E float32 | uint16 | int32](dst, src *Tensor, d, s []E) {
	walk2(dst, src, func(do, dstr, so, sstr, cnt int) {
		if dstr == 1 && sstr == 1 {
			copy(d[do:do+cnt], s[so:so+cnt])
			return
		}
		for j := 0; j < cnt; j++ {
			d[do] = s[so]
			do += dstr
			so += sstr
		}
	})
}

// copyTile is the side of the square blocks copyTiled moves: 32×32 F32
// elements are 4 KiB per operand, so a block's source and destination
// lines stay in L1 while it is written.
const copyTile = 32

// tileDim decides whether a copy is transpose-like and worth blocking. The
// row-major walk follows the last dim; if either operand's stride there is
// ≥ 16 elements (64 bytes for F32, a cache line), every element of that
// operand lands on a new line. If some other dim k steps by less in both
// operands' worse case (min of the two strides, e.g. 1 for the source of
// x.T().Contiguous()), copying in copyTile×copyTile blocks of (k, last)
// reuses each line copyTile times instead of once. It returns k, or -1.
func tileDim(dst, src *Tensor) int {
	nd := len(dst.shape)
	if nd < 2 {
		return -1
	}
	l := nd - 1
	far := max(dst.strides[l], src.strides[l])
	if far < 16 || dst.shape[l] < 2 {
		return -1
	}
	best, bestStride := -1, far
	for k := 0; k < l; k++ {
		m := min(dst.strides[k], src.strides[k])
		if dst.shape[k] >= 2 && m >= 1 && m < bestStride {
			best, bestStride = k, m
		}
	}
	return best
}

// copyTiled copies in copyTile×copyTile blocks over dims (b, last), for
// every index of the remaining (outer) dims.
func copyTiled[E float32 | uint16 | int32](dst, src *Tensor, d, s []E, b int) {
	l := len(dst.shape) - 1
	nb, nl := dst.shape[b], dst.shape[l]
	dsb, dsl, ssb, ssl := dst.strides[b], dst.strides[l], src.strides[b], src.strides[l]
	// The outer dims, plus a size-1 inner dim so walk2 visits each outer
	// index exactly once.
	var oshape, dstr, sstr []int
	for k := 0; k < l; k++ {
		if k != b {
			oshape = append(oshape, dst.shape[k])
			dstr = append(dstr, dst.strides[k])
			sstr = append(sstr, src.strides[k])
		}
	}
	oshape, dstr, sstr = append(oshape, 1), append(dstr, 0), append(sstr, 0)
	od := &Tensor{shape: oshape, strides: dstr, offset: dst.offset}
	os := &Tensor{shape: oshape, strides: sstr, offset: src.offset}
	walk2(od, os, func(do, _, so, _, _ int) {
		for i0 := 0; i0 < nb; i0 += copyTile {
			i1 := min(i0+copyTile, nb)
			for j0 := 0; j0 < nl; j0 += copyTile {
				j1 := min(j0+copyTile, nl)
				for i := i0; i < i1; i++ {
					dp, sp := do+i*dsb+j0*dsl, so+i*ssb+j0*ssl
					for j := j0; j < j1; j++ {
						d[dp] = s[sp]
						dp += dsl
						sp += ssl
					}
				}
			}
		}
	})
}

// walk2 visits two equally shaped layouts row by row: for each index of
// the leading dims it calls f with both offsets, both inner strides and
// the inner length.
func walk2(a, b *Tensor, f func(ao, astr, bo, bstr, n int)) {
	nd := len(a.shape)
	if nd == 0 {
		f(a.offset, 1, b.offset, 1, 1)
		return
	}
	for _, s := range a.shape {
		if s == 0 {
			return
		}
	}
	idx := make([]int, nd)
	ao, bo := a.offset, b.offset
	inner := a.shape[nd-1]
	for {
		f(ao, a.strides[nd-1], bo, b.strides[nd-1], inner)
		d := nd - 2
		for ; d >= 0; d-- {
			idx[d]++
			ao += a.strides[d]
			bo += b.strides[d]
			if idx[d] < a.shape[d] {
				break
			}
			ao -= a.strides[d] * a.shape[d]
			bo -= b.strides[d] * b.shape[d]
			idx[d] = 0
		}
		if d < 0 {
			return
		}
	}
}

// To returns t converted to dtype dt (t itself when it already has dt),
// as a contiguous copy recorded in the Ledger.
func (t *Tensor) To(dt DType) (*Tensor, error) {
	if dt == t.st.dtype {
		return t, nil
	}
	out, err := newTensor(t.st.led, dt, t.shape, t.st.meta, "to")
	if err != nil {
		return nil, err
	}
	if !t.st.meta {
		copyStrided(out, t)
		out.st.led.RecordCopy(int64(out.Nbytes()))
	}
	return out, nil
}

// Release marks t's storage as no longer live in its Ledger (see
// Storage.Release). Other views of the same storage become invalid for
// accounting purposes only; their data stays readable.
func (t *Tensor) Release() { t.st.Release() }
