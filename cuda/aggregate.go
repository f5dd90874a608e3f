package cuda

import (
	"fmt"
	"slices"
)

// This file holds the two tools that make the traffic simulation exact without
// replaying every warp of a large launch.
//
// 1. Residue histograms. What a warp instruction costs (sectors, lines,
// distinct bytes) depends only on its addresses modulo 128: moving all 32
// addresses by a multiple of 128 bytes moves every sector and every line by
// the same amount and changes no count. So when a kernel issues the same
// relative pattern from many base addresses, the simulation replays the pattern
// once per distinct base residue (at most 128 of them) and multiplies by how
// many bases have that residue. For affine bases Σ ik·Sk the histogram is a
// convolution of one small periodic histogram per dim (i·S mod 128 repeats
// with period 128/gcd(S, 128)), so a launch of 2^30 elements costs a few
// thousand replays.
//
// 2. Footprints. The compulsory HBM traffic of a launch is the number of
// distinct sectors it touches. The simulation computes it from the byte ranges
// of the buffers a kernel reads or writes (rows of a layout, cache slots of
// a block table), merged at sector granularity.

// residues is a histogram of base addresses modulo LineBytes.
type residues [LineBytes]int64

// linearResidues returns the histogram of (base + i·stride) mod 128 for
// i in [0, n).
func linearResidues(base uint64, n int64, stride int64) residues {
	var h residues
	if n <= 0 {
		return h
	}
	st := ((stride % LineBytes) + LineBytes) % LineBytes
	period := int64(1)
	if st != 0 {
		period = LineBytes / gcd(st, LineBytes)
	}
	q, rem := n/period, n%period
	r := int64(base % LineBytes)
	for i := int64(0); i < min(period, n); i++ {
		c := q
		if i < rem {
			c++
		}
		h[r] += c
		r = (r + st) % LineBytes
	}
	return h
}

// point returns the histogram of one base address.
func point(base uint64) residues {
	var h residues
	h[base%LineBytes] = 1
	return h
}

// convolve returns the histogram of a+b over independent a ~ h and b ~ o.
func (h residues) convolve(o residues) residues {
	var out residues
	for i, a := range h {
		if a == 0 {
			continue
		}
		for j, b := range o {
			if b != 0 {
				out[(i+j)%LineBytes] += a * b
			}
		}
	}
	return out
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// replayPattern counts, for every base residue r of h (count c), the warp
// instructions of pattern shifted to start at r, each weight·c times.
// Pattern addresses are offsets relative to the base.
func (c *Counter) replayPattern(store bool, pattern []Warp, h residues, weight int64) {
	// A large multiple of 128 keeps shifted addresses positive whatever
	// the sign of the relative offsets, and changes no count.
	const lift = uint64(1) << 40
	for r, n := range h {
		if n == 0 {
			continue
		}
		for i := range pattern {
			w := pattern[i]
			for l := range w.Addr {
				w.Addr[l] += lift + uint64(r)
			}
			if store {
				c.Store(&w, n*weight)
			} else {
				c.Load(&w, n*weight)
			}
		}
	}
}

// maxIntervals bounds the byte ranges a footprint may collect, so a
// pathological layout is refused rather than exhausting memory.
const maxIntervals = 1 << 25

// footprint collects byte ranges [start, end) and counts the distinct
// sectors they cover.
type footprint struct {
	iv  [][2]uint64
	err error
}

func (f *footprint) add(start, end uint64) {
	if end <= start || f.err != nil {
		return
	}
	if len(f.iv) >= maxIntervals {
		f.err = fmt.Errorf("footprint: more than %d separate byte ranges; the layout is too irregular to count exactly", maxIntervals)
		return
	}
	f.iv = append(f.iv, [2]uint64{start / SectorBytes, (end - 1) / SectorBytes})
}

// sectors returns the number of distinct sectors covered.
func (f *footprint) sectors() (int64, error) {
	if f.err != nil {
		return 0, f.err
	}
	if len(f.iv) == 0 {
		return 0, nil
	}
	slices.SortFunc(f.iv, func(a, b [2]uint64) int {
		switch {
		case a[0] < b[0]:
			return -1
		case a[0] > b[0]:
			return 1
		}
		return 0
	})
	var n int64
	cur := f.iv[0]
	for _, x := range f.iv[1:] {
		if x[0] <= cur[1] {
			cur[1] = max(cur[1], x[1])
			continue
		}
		n += int64(cur[1] - cur[0] + 1)
		cur = x
	}
	n += int64(cur[1] - cur[0] + 1)
	return n, nil
}

// dim is one dimension of a byte-addressed layout.
type dim struct {
	size   int64
	stride int64 // bytes
}

// mergeDims drops size-1 dims and merges neighbours that address memory
// as one dim (outer stride = inner size × inner stride), as PyTorch's
// TensorIterator coalesces dims; the set and order of addresses is
// unchanged.
func mergeDims(ds []dim) []dim {
	var out []dim
	for _, d := range ds {
		if d.size == 1 {
			continue
		}
		if n := len(out); n > 0 && out[n-1].stride == d.size*d.stride {
			out[n-1] = dim{size: out[n-1].size * d.size, stride: d.stride}
			continue
		}
		out = append(out, d)
	}
	return out
}

// byteDims returns o's dims with strides in bytes.
func byteDims(o Operand) []dim {
	shape, st := o.shape(), o.strides()
	ds := make([]dim, len(shape))
	for i := range shape {
		ds[i] = dim{int64(shape[i]), int64(st[i]) * o.es()}
	}
	return ds
}

// addLayout adds the bytes of every element of a layout starting at start:
// one range per row when the innermost stride is at most a sector (no
// sector between two neighbours is skipped), else one per element. The set
// of addresses does not depend on the order of the dims, so stride-0 dims
// (repeats) are dropped and the rest sorted by decreasing stride first: a
// transposed matrix becomes row-major again and costs one range per row.
func (f *footprint) addLayout(start uint64, ds []dim, width int64) {
	var kept []dim
	for _, d := range ds {
		if d.size == 0 {
			return
		}
		if d.stride != 0 {
			kept = append(kept, d)
		}
	}
	slices.SortStableFunc(kept, func(a, b dim) int {
		switch {
		case a.stride > b.stride:
			return -1
		case a.stride < b.stride:
			return 1
		}
		return 0
	})
	ds = mergeDims(kept)
	if len(ds) == 0 {
		f.add(start, start+uint64(width))
		return
	}
	inner := ds[len(ds)-1]
	outer := ds[:len(ds)-1]
	rowSpan := uint64((inner.size-1)*inner.stride + width)
	perRow := inner.stride <= SectorBytes
	var rec func(k int, base uint64)
	rec = func(k int, base uint64) {
		if f.err != nil {
			return
		}
		if k == len(outer) {
			if perRow {
				f.add(base, base+rowSpan)
				return
			}
			for i := int64(0); i < inner.size; i++ {
				a := base + uint64(i*inner.stride)
				f.add(a, a+uint64(width))
			}
			return
		}
		for i := int64(0); i < outer[k].size; i++ {
			rec(k+1, base+uint64(i*outer[k].stride))
		}
	}
	rec(0, start)
}
