package cuda

import (
	"fmt"
	"slices"

	"github.com/stride-lm/stride/tensor"
)

// Names of the copy kernels in cuda/kernels/copy.cu. The three share one
// body (strided_copy_body) and differ only in what layout the host passes:
// any view (what contiguous() costs), a KV tensor expanded along a new
// group dim (repeat_interleave for GQA), or a [H, T, D] tensor read as
// [T, H, D] (out.transpose(0, 1).contiguous()). Separate names make them
// separate rows in Nsight Compute.
const (
	KernelStridedCopy         = "strided_copy"
	KernelRepeatInterleave    = "repeat_interleave"
	KernelTransposeContiguous = "transpose_contiguous"
)

// copyThreads is the block size of the copy kernels.
const copyThreads = 256

// VectorBytes is the width of a vectorized access: one 16-byte
// LDG.128/STG.128 per thread (4 fp32 or 8 fp16/bf16 elements).
const VectorBytes = 16

// copyPlan is the argument block of the copy kernels (struct CopyArgs in
// kernels/stride_kernels.h), computed once on the host and used both to
// launch the kernel and to simulate it.
//
// Thread mapping (copy.cu, strided_copy_body): thread u of the grid,
// u = blockIdx.x·256 + threadIdx.x, handles "unit" u, the vec elements
// e = u·vec … u·vec+vec−1 in row-major order of the 4-D shape size. It
// splits e into (i0, i1, i2, i3) by division, reads
// src[srcOffset + Σ ik·stride_k] (one 16-byte load when vec > 1, which
// needs stride[3] = 1) and writes dst[dstOffset + e] (the destination is
// contiguous). So warp g handles units 32g … 32g+31: its stores are 32
// consecutive units, its loads whatever the strides make of them.
type copyPlan struct {
	kernel    string
	dtype     tensor.DType
	size      [4]int64
	stride    [4]int64 // elements
	srcOffset int64
	dstOffset int64
	vec       int64
	units     int64
	blocks    int64
}

// planCopy checks dst ← src and computes the kernel arguments: dims are
// merged where memory allows (fewer divisions per element, same addresses)
// and the vector path is chosen when every 16-byte access it would make is
// 16-byte aligned.
func planCopy(kernel string, dst, src Operand) (copyPlan, error) {
	p := copyPlan{kernel: kernel}
	if err := src.check(kernel + " src"); err != nil {
		return p, err
	}
	if err := dst.check(kernel + " dst"); err != nil {
		return p, err
	}
	if src.dtype() != dst.dtype() {
		return p, fmt.Errorf("%s: src is %v but dst is %v (the kernel copies, it does not convert)", kernel, src.dtype(), dst.dtype())
	}
	if !slices.Equal(src.shape(), dst.shape()) {
		return p, fmt.Errorf("%s: src shape %v differs from dst shape %v", kernel, src.shape(), dst.shape())
	}
	if !dst.Layout.IsContiguous() {
		return p, fmt.Errorf("%s: dst must be contiguous, got strides %v", kernel, dst.strides())
	}
	p.dtype = src.dtype()
	p.srcOffset, p.dstOffset = src.offset(), dst.offset()
	shape, strides := src.shape(), src.strides()
	var ds []dim
	for i := range shape {
		if shape[i] == 0 {
			p.vec = 1
			return p, nil // nothing to copy: no launch
		}
		ds = append(ds, dim{int64(shape[i]), int64(strides[i])})
	}
	ds = mergeDims(ds)
	if len(ds) > 4 {
		return p, fmt.Errorf("%s: layout %v / %v has %d dims that cannot be merged; the kernel takes at most 4", kernel, shape, strides, len(ds))
	}
	for i := range p.size {
		p.size[i] = 1
	}
	for i, d := range ds {
		k := 4 - len(ds) + i
		p.size[k], p.stride[k] = d.size, d.stride
	}
	es := src.es()
	v := VectorBytes / es
	p.vec = 1
	aligned := func(addr uint64) bool { return addr%VectorBytes == 0 }
	if p.stride[3] == 1 && p.size[3]%v == 0 &&
		aligned(src.startAddr()) && aligned(dst.startAddr()) &&
		(p.stride[0]*es)%VectorBytes == 0 && (p.stride[1]*es)%VectorBytes == 0 && (p.stride[2]*es)%VectorBytes == 0 {
		p.vec = v
	}
	numel := p.size[0] * p.size[1] * p.size[2] * p.size[3]
	p.units = numel / p.vec
	p.blocks = ceilDiv(p.units, copyThreads)
	return p, nil
}

// srcElem returns the source element index of element e (row-major over
// size): the division chain of strided_copy_body.
func (p *copyPlan) srcElem(e int64) int64 {
	i3 := e % p.size[3]
	r := e / p.size[3]
	i2 := r % p.size[2]
	r /= p.size[2]
	i1 := r % p.size[1]
	i0 := r / p.size[1]
	return p.srcOffset + i0*p.stride[0] + i1*p.stride[1] + i2*p.stride[2] + i3*p.stride[3]
}

func (p *copyPlan) launch() Launch {
	return Launch{Kernel: p.kernel, Grid: [3]int64{p.blocks, 1, 1}, Block: [3]int{copyThreads, 1, 1}, Vectorized: p.vec > 1}
}

// simulate counts the plan's traffic with dst and src at their addresses.
func (p *copyPlan) simulate(dst, src Operand, mode Mode) (Launch, error) {
	l := p.launch()
	if p.units == 0 {
		return l, nil
	}
	es := src.es()
	width := es * p.vec
	if mode == Replay {
		warps := ceilDiv(p.units, WarpSize)
		if warps > maxReplayWarps {
			return l, fmt.Errorf("%s: %d warps are too many to replay (limit %d); use Aggregate", p.kernel, warps, maxReplayWarps)
		}
		c := NewCounter(true)
		for g := int64(0); g < warps; g++ {
			ld := Warp{Width: int(width)}
			st := Warp{Width: int(width)}
			for lane := int64(0); lane < WarpSize; lane++ {
				u := g*WarpSize + lane
				if u >= p.units {
					break
				}
				e := u * p.vec
				ld.Addr[lane] = src.elemAddr(p.srcElem(e))
				st.Addr[lane] = dst.elemAddr(p.dstOffset + e)
				ld.Active |= 1 << lane
				st.Active |= 1 << lane
			}
			c.Load(&ld, 1)
			c.Store(&st, 1)
		}
		l.finishReplay(c)
		return l, nil
	}
	c := NewCounter(false)
	var units [4]dim
	for k := 0; k < 3; k++ {
		units[k] = dim{p.size[k], p.stride[k] * es}
	}
	units[3] = dim{p.size[3] / p.vec, p.stride[3] * es * p.vec}
	if err := c.rowMajor(false, src.elemAddr(p.srcOffset), units[:], width); err != nil {
		return l, fmt.Errorf("%s: %w", p.kernel, err)
	}
	if err := c.rowMajor(true, dst.elemAddr(p.dstOffset), []dim{{p.units, width}}, width); err != nil {
		return l, fmt.Errorf("%s: %w", p.kernel, err)
	}
	var ld, st footprint
	ld.addLayout(src.startAddr(), byteDims(src), es)
	st.addLayout(dst.startAddr(), byteDims(dst), es)
	return l, l.finishAggregate(c, &ld, &st, nil)
}

// maxPatternUnits bounds the units of one enumerated super-row.
const maxPatternUnits = 1 << 26

// rowMajor counts the instructions of the mapping "thread u handles unit u
// of a row-major walk over ds, warp g = units 32g … 32g+31", each lane
// accessing width bytes at start + Σ ik·ds[k].stride.
//
// Exactness: if the innermost dim holds a multiple of 32 units, every warp
// lies in one row at a column that is a multiple of 32, so all warps are
// translates of one 32-lane pattern and only their base residues matter.
// Otherwise the smallest suffix of dims whose unit count is a multiple of
// 32 (a "super-row") is enumerated warp by warp once, and its translates
// are counted by residue. A walk with no such suffix is a single super-row;
// if it is effectively 1-D its full warps are translates and only the tail
// warp differs.
func (c *Counter) rowMajor(store bool, start uint64, ds []dim, width int64) error {
	n := len(ds)
	var total int64 = 1
	for _, d := range ds {
		total *= d.size
	}
	if total == 0 {
		return nil
	}
	inner := ds[n-1]
	outerHist := func(k int) residues {
		h := point(start)
		for j := 0; j < k; j++ {
			h = h.convolve(linearResidues(0, ds[j].size, ds[j].stride))
		}
		return h
	}
	if inner.size%WarpSize == 0 {
		h := outerHist(n - 1).convolve(linearResidues(0, inner.size/WarpSize, WarpSize*inner.stride))
		pat := Strided(0, WarpSize, inner.stride, int(width))
		c.replayPattern(store, []Warp{pat}, h, 1)
		return nil
	}
	q := int64(1)
	for k := n - 1; k >= 0; k-- {
		q *= ds[k].size
		if q%WarpSize == 0 {
			if q > maxPatternUnits {
				return fmt.Errorf("a super-row of %d units is too long to enumerate", q)
			}
			c.replayPattern(store, superRow(ds[k:], q, width), outerHist(k), 1)
			return nil
		}
	}
	if total == inner.size { // 1-D: full warps are translates, plus a tail
		full := inner.size / WarpSize
		h := linearResidues(start, full, WarpSize*inner.stride)
		c.replayPattern(store, []Warp{Strided(0, WarpSize, inner.stride, int(width))}, h, 1)
		tail := Strided(uint64(int64(start)+full*WarpSize*inner.stride), int(inner.size%WarpSize), inner.stride, int(width))
		if store {
			c.Store(&tail, 1)
		} else {
			c.Load(&tail, 1)
		}
		return nil
	}
	if total > maxPatternUnits {
		return fmt.Errorf("%d units with no dim suffix of a multiple of 32 units are too many to enumerate", total)
	}
	c.replayPattern(store, superRow(ds, total, width), point(start), 1)
	return nil
}

// superRow enumerates the q units of a row-major walk over ds as warps of
// 32 consecutive units, with addresses relative to the walk's start.
func superRow(ds []dim, q int64, width int64) []Warp {
	warps := make([]Warp, ceilDiv(q, WarpSize))
	idx := make([]int64, len(ds))
	var off int64
	for u := int64(0); u < q; u++ {
		w := &warps[u/WarpSize]
		lane := u % WarpSize
		w.Width = int(width)
		w.Addr[lane] = uint64(off)
		w.Active |= 1 << lane
		for k := len(ds) - 1; k >= 0; k-- {
			idx[k]++
			off += ds[k].stride
			if idx[k] < ds[k].size {
				break
			}
			off -= ds[k].stride * ds[k].size
			idx[k] = 0
		}
	}
	return warps
}

// SimulateStridedCopy simulates strided_copy writing src into the contiguous
// dst of the same shape: the cost of src.contiguous().
func SimulateStridedCopy(dst, src Operand, mode Mode) (Launch, error) {
	p, err := planCopy(KernelStridedCopy, dst, src)
	if err != nil {
		return Launch{}, err
	}
	return p.simulate(dst, src, mode)
}

// repeatViews returns the [L, KVH, G, D] views repeat_interleave copies:
// src expanded along a new stride-0 group dim, and dst [L, KVH·G, D]
// viewed with the group dim split out.
func repeatViews(dst, src Operand, groups int) (Operand, Operand, error) {
	if src.Layout == nil || dst.Layout == nil {
		return dst, src, fmt.Errorf("%s: missing tensor", KernelRepeatInterleave)
	}
	ss, ds := src.shape(), dst.shape()
	if len(ss) != 3 || len(ds) != 3 || groups < 1 || ds[0] != ss[0] || ds[1] != ss[1]*groups || ds[2] != ss[2] {
		return dst, src, fmt.Errorf("%s: want src [L, KVH, D] and dst [L, KVH·%d, D], got %v and %v", KernelRepeatInterleave, groups, ss, ds)
	}
	e, err := src.Layout.Unsqueeze(2)
	if err == nil {
		e, err = e.Expand(ss[0], ss[1], groups, ss[2])
	}
	if err != nil {
		return dst, src, err
	}
	d, err := dst.Layout.View(ss[0], ss[1], groups, ss[2])
	if err != nil {
		return dst, src, fmt.Errorf("%s: dst: %w", KernelRepeatInterleave, err)
	}
	return Operand{d, dst.Base}, Operand{e, src.Base}, nil
}

// SimulateRepeatInterleave simulates repeat_interleave: src [L, KVH, D] (any
// strides) → contiguous dst [L, KVH·groups, D], every KV head repeated
// groups times so each query head of a GQA layer finds its K/V at its own
// index.
func SimulateRepeatInterleave(dst, src Operand, groups int, mode Mode) (Launch, error) {
	d, s, err := repeatViews(dst, src, groups)
	if err != nil {
		return Launch{}, err
	}
	p, err := planCopy(KernelRepeatInterleave, d, s)
	if err != nil {
		return Launch{}, err
	}
	return p.simulate(d, s, mode)
}

// transposeViews returns src [H, T, D] read as [T, H, D].
func transposeViews(dst, src Operand) (Operand, Operand, error) {
	if src.Layout == nil || dst.Layout == nil {
		return dst, src, fmt.Errorf("%s: missing tensor", KernelTransposeContiguous)
	}
	ss, ds := src.shape(), dst.shape()
	if len(ss) != 3 || len(ds) != 3 || ds[0] != ss[1] || ds[1] != ss[0] || ds[2] != ss[2] {
		return dst, src, fmt.Errorf("%s: want src [H, T, D] and dst [T, H, D], got %v and %v", KernelTransposeContiguous, ss, ds)
	}
	t, err := src.Layout.Transpose(0, 1)
	if err != nil {
		return dst, src, err
	}
	return dst, Operand{t, src.Base}, nil
}

// SimulateTransposeContiguous simulates transpose_contiguous: src [H, T, D] →
// contiguous dst [T, H, D], i.e. out.transpose(1, 2).contiguous() of the
// naive path's attention output.
func SimulateTransposeContiguous(dst, src Operand, mode Mode) (Launch, error) {
	d, s, err := transposeViews(dst, src)
	if err != nil {
		return Launch{}, err
	}
	p, err := planCopy(KernelTransposeContiguous, d, s)
	if err != nil {
		return Launch{}, err
	}
	return p.simulate(d, s, mode)
}

// The copy kernels' launcher: the Device methods that plan a copy with
// planCopy and launch it with that plan's grid.

// copyArgs mirrors StrideCopyArgs.
type copyArgs struct {
	size, stride                [4]int64
	srcOffset, dstOffset, units int64
	vec                         int32
}

// Copy kinds (STRIDE_COPY, …).
const (
	copyKindPlain     = 0
	copyKindRepeat    = 1
	copyKindTranspose = 2
)

func (d *Device) runCopy(kind int, p copyPlan, dst, src *DeviceTensor) error {
	if d.record {
		if err := d.note(p.simulate(dst.Operand(), src.Operand(), Aggregate)); err != nil {
			return err
		}
	}
	a := copyArgs{size: p.size, stride: p.stride, srcOffset: p.srcOffset, dstOffset: p.dstOffset, units: p.units, vec: int32(p.vec)}
	l, err := dimsOf(p.launch(), 0)
	if err != nil {
		return err
	}
	return d.timed(func() error { return launchCopy(kind, p.dtype, dst.buf.ptr, src.buf.ptr, &a, l) })
}

// StridedCopy writes src (any strides) into the contiguous dst of the same
// shape and dtype with the strided_copy kernel.
func (d *Device) StridedCopy(dst, src *DeviceTensor) error {
	if err := d.ok(); err != nil {
		return err
	}
	p, err := planCopy(KernelStridedCopy, dst.Operand(), src.Operand())
	if err != nil {
		return err
	}
	return d.runCopy(copyKindPlain, p, dst, src)
}

// Contiguous returns src itself when it is contiguous, else a new
// contiguous copy: PyTorch's x.contiguous() on the GPU.
func (d *Device) Contiguous(src *DeviceTensor) (*DeviceTensor, error) {
	if err := d.ok(); err != nil {
		return nil, err
	}
	if src.layout.IsContiguous() {
		return src, nil
	}
	dst, err := d.Empty(src.layout.DType(), src.layout.Shape()...)
	if err != nil {
		return nil, err
	}
	return dst, d.StridedCopy(dst, src)
}

// RepeatInterleave writes src [L, KVH, D] into dst [L, KVH·groups, D],
// every KV head repeated groups times (the naive path's GQA expansion).
func (d *Device) RepeatInterleave(dst, src *DeviceTensor, groups int) error {
	if err := d.ok(); err != nil {
		return err
	}
	do, so, err := repeatViews(dst.Operand(), src.Operand(), groups)
	if err != nil {
		return err
	}
	p, err := planCopy(KernelRepeatInterleave, do, so)
	if err != nil {
		return err
	}
	return d.runCopy(copyKindRepeat, p, &DeviceTensor{dst.buf, do.Layout}, &DeviceTensor{src.buf, so.Layout})
}

// TransposeContiguous writes src [H, T, D] into the contiguous dst
// [T, H, D] (the naive path's out.transpose(1, 2).contiguous()).
func (d *Device) TransposeContiguous(dst, src *DeviceTensor) error {
	if err := d.ok(); err != nil {
		return err
	}
	do, so, err := transposeViews(dst.Operand(), src.Operand())
	if err != nil {
		return err
	}
	p, err := planCopy(KernelTransposeContiguous, do, so)
	if err != nil {
		return err
	}
	return d.runCopy(copyKindTranspose, p, dst, &DeviceTensor{src.buf, so.Layout})
}
