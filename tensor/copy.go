package tensor

import "fmt"

// This file holds the ops that move bytes: Contiguous, Clone and the
// strided→strided CopyFrom. Every one of them records its bytes in the
// destination's Context.

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
	out, err := newTensor(t.st.ctx, t.st.dtype, t.shape, t.st.meta, "clone")
	if err != nil {
		return nil, err
	}
	if t.st.meta {
		return out, nil
	}
	copyStrided(out, t)
	out.st.ctx.RecordCopy(int64(out.Nbytes()))
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
	t.st.ctx.RecordCopy(int64(t.Nbytes()))
	return nil
}

// copyStrided copies src into dst element by element in row-major logical
// order; shapes are equal. The innermost dim runs as a tight loop, and
// contiguous F32 → contiguous F32 is a single memmove.
func copyStrided(dst, src *Tensor) {
	n := dst.Numel()
	if n == 0 {
		return
	}
	if dst.st.dtype == F32 && src.st.dtype == F32 {
		d, s := dst.st.f32, src.st.f32
		if dst.IsContiguous() && src.IsContiguous() {
			copy(d[dst.offset:dst.offset+n], s[src.offset:src.offset+n])
			return
		}
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
		return
	}
	walk2(dst, src, func(do, dstr, so, sstr, cnt int) {
		for j := 0; j < cnt; j++ {
			dst.st.store(do, src.st.load(so))
			do += dstr
			so += sstr
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
// as a contiguous copy recorded in the Context.
func (t *Tensor) To(dt DType) (*Tensor, error) {
	if dt == t.st.dtype {
		return t, nil
	}
	out, err := newTensor(t.st.ctx, dt, t.shape, t.st.meta, "to")
	if err != nil {
		return nil, err
	}
	if !t.st.meta {
		copyStrided(out, t)
		out.st.ctx.RecordCopy(int64(out.Nbytes()))
	}
	return out, nil
}

// Release marks t's storage as no longer live in its Context (see
// Storage.Release). Other views of the same storage become invalid for
// accounting purposes only; their data stays readable.
func (t *Tensor) Release() { t.st.Release() }
