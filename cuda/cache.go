package cuda

import (
	"fmt"
	"slices"

	"github.com/stride-lm/stride/tensor"
)

// Names of the KV-cache kernels in cuda/kernels/cache.cu.
const (
	KernelReshapeAndCache = "reshape_and_cache"
	KernelGatherKV        = "gather_kv"
)

// maxSlabThreads caps the block size of the slab kernels.
const maxSlabThreads = 256

// slabSide is one of the two tensors a slab kernel reads or writes: per
// block, the address of element (head 0, dim 0) of its row, and the head
// and element strides inside the row, in bytes.
type slabSide struct {
	rows       []uint64
	headStride int64
	elemStride int64
}

// slabPlan simulates reshape_and_cache and gather_kv, which share one thread
// mapping (cache.cu):
//
//	block b (one token row), index = idx[b]        every thread loads it
//	if index < 0: return                            (padding token)
//	for i = threadIdx.x; i < units; i += blockDim.x:
//	    e = i·vec; head = e / D; d = e % D
//	    dst[k][row_dst(b) + head·hs + d·es] = src[k][row_src(b) + head·hs + d·es]   for k = K, V
//
// so warp w of a block handles units 32w … 32w+31 of the row, then jumps by
// blockDim. Each iteration issues, in order: load K, load V, store K,
// store V. units = KVH·D/vec; blockDim = min(units rounded up to 32, 256).
type slabPlan struct {
	kernel  string
	dt      tensor.DType
	blocks  int64
	kvh, d  int64
	es      int64
	vec     int64
	units   int64
	threads int64
	index   uint64 // address of idx[0] (int32)
	skip    []bool
	src     [2]slabSide
	dst     [2]slabSide
}

func slabThreads(units int64) int64 {
	return min(ceilDiv(units, WarpSize)*WarpSize, maxSlabThreads)
}

// unitRel returns the byte offset of unit i's first element inside a row.
func (p *slabPlan) unitRel(side *slabSide, i int64) int64 {
	e := i * p.vec
	return (e/p.d)*side.headStride + (e%p.d)*side.elemStride
}

func (p *slabPlan) launch() Launch {
	return Launch{Kernel: p.kernel, Grid: [3]int64{p.blocks, 1, 1}, Block: [3]int{int(p.threads), 1, 1}, Vectorized: p.vec > 1}
}

// simulate counts the launch's traffic: literally in Replay mode, by
// residue classes in Aggregate mode.
func (p *slabPlan) simulate(mode Mode) (Launch, error) {
	l := p.launch()
	if p.blocks == 0 {
		return l, nil
	}
	if mode == Replay {
		return p.replay(l)
	}
	return p.aggregate(l)
}

// replay executes the kernel's mapping block by block, warp by warp:
// the row index, then each iteration's K and V load and store.
func (p *slabPlan) replay(l Launch) (Launch, error) {
	width := p.es * p.vec
	warps := p.threads / WarpSize
	iters := ceilDiv(p.units, p.threads)
	if p.blocks*warps*(1+4*iters) > maxReplayWarps {
		return l, fmt.Errorf("%s: too many warp instructions to replay; use Aggregate", p.kernel)
	}
	c := NewCounter(true)
	for b := int64(0); b < p.blocks; b++ {
		for w := int64(0); w < warps; w++ {
			idx := Strided(p.index+uint64(4*b), WarpSize, 0, 4)
			c.Load(&idx, 1)
			if p.skip[b] {
				continue
			}
			for it := int64(0); it < iters; it++ {
				var ld, st [2]Warp
				for k := 0; k < 2; k++ {
					ld[k].Width, st[k].Width = int(width), int(width)
				}
				for lane := int64(0); lane < WarpSize; lane++ {
					i := it*p.threads + w*WarpSize + lane
					if i >= p.units {
						break
					}
					for k := 0; k < 2; k++ {
						ld[k].Addr[lane] = uint64(int64(p.src[k].rows[b]) + p.unitRel(&p.src[k], i))
						st[k].Addr[lane] = uint64(int64(p.dst[k].rows[b]) + p.unitRel(&p.dst[k], i))
						ld[k].Active |= 1 << lane
						st[k].Active |= 1 << lane
					}
				}
				c.Load(&ld[0], 1)
				c.Load(&ld[1], 1)
				c.Store(&st[0], 1)
				c.Store(&st[1], 1)
			}
		}
	}
	l.finishReplay(c, [2]uint64{p.index, p.index + uint64(4*p.blocks)})
	return l, nil
}

// aggregate counts the launch by residue classes (see aggregate.go).
func (p *slabPlan) aggregate(l Launch) (Launch, error) {
	width := p.es * p.vec
	warps := p.threads / WarpSize
	iters := ceilDiv(p.units, p.threads)
	// Aggregate: the index load is one broadcast per warp; a row's
	// instructions are a fixed pattern translated by the row address, so
	// only the rows' residues mod 128 matter.
	c := NewCounter(false)
	idx := Strided(p.index, WarpSize, 0, 4)
	c.Load(&idx, p.blocks*warps)
	var ld, st, meta footprint
	meta.add(p.index, p.index+uint64(4*p.blocks))
	for k := 0; k < 2; k++ {
		for _, io := range []struct {
			side  *slabSide
			store bool
			fp    *footprint
		}{{&p.src[k], false, &ld}, {&p.dst[k], true, &st}} {
			var pat []Warp
			for w := int64(0); w < warps; w++ {
				for it := int64(0); it < iters; it++ {
					x := Warp{Width: int(width)}
					for lane := int64(0); lane < WarpSize; lane++ {
						i := it*p.threads + w*WarpSize + lane
						if i >= p.units {
							break
						}
						x.Addr[lane] = uint64(p.unitRel(io.side, i))
						x.Active |= 1 << lane
					}
					if x.Active != 0 {
						pat = append(pat, x)
					}
				}
			}
			var h residues
			inner := []dim{{p.kvh, io.side.headStride}, {p.d, io.side.elemStride}}
			for b := int64(0); b < p.blocks; b++ {
				if p.skip[b] {
					continue
				}
				h[io.side.rows[b]%LineBytes]++
				io.fp.addLayout(io.side.rows[b], inner, p.es)
			}
			c.replayPattern(io.store, pat, h, 1)
		}
	}
	return l, l.finishAggregate(c, &ld, &st, &meta)
}

// vectorize sets the thread mapping of a plan whose rows are laid out:
// the vector width the rows' alignment allows, the units of a row and the
// block size.
func (p *slabPlan) vectorize() {
	p.vec = slabVec(p.d, p.es, &p.src[0], &p.src[1], &p.dst[0], &p.dst[1])
	p.units = p.kvh * p.d / p.vec
	p.threads = slabThreads(p.units)
}

// slabVec returns the vector width if every row start and in-row offset a
// 16-byte access would use is 16-byte aligned, else 1.
func slabVec(d, es int64, sides ...*slabSide) int64 {
	v := VectorBytes / es
	if d%v != 0 {
		return 1
	}
	for _, s := range sides {
		if s.elemStride != es || s.headStride%VectorBytes != 0 {
			return 1
		}
		for _, r := range s.rows {
			if r%VectorBytes != 0 {
				return 1
			}
		}
	}
	return v
}

// cacheShape checks a [num_blocks, block_size, KVH, D] contiguous cache.
func cacheShape(name string, c Operand) ([4]int, error) {
	var s [4]int
	if c.Layout == nil {
		return s, fmt.Errorf("%s: missing cache tensor", name)
	}
	if c.Layout.Dim() != 4 || !c.Layout.IsContiguous() {
		return s, fmt.Errorf("%s: caches must be contiguous [num_blocks, block_size, n_kv_heads, head_dim], got shape %v strides %v",
			name, c.shape(), c.strides())
	}
	copy(s[:], c.shape())
	return s, nil
}

// planReshapeAndCache checks the arguments of reshape_and_cache (the
// contract of kvcache.ReshapeAndCache, minus dtype conversion) and lays
// out its rows. key and value are [T, KVH, D] with any strides: the kernel
// takes key_stride, key_head_stride and the element stride.
func planReshapeAndCache(key, value, kCache, vCache Operand, slots []int32, slotsAddr uint64) (*slabPlan, error) {
	name := KernelReshapeAndCache
	for _, o := range []Operand{key, value} {
		if o.Layout == nil || o.Layout.Dim() != 3 {
			return nil, fmt.Errorf("%s: key and value must be [T, n_kv_heads, head_dim]", name)
		}
	}
	cs, err := cacheShape(name, kCache)
	if err != nil {
		return nil, err
	}
	vs, err := cacheShape(name, vCache)
	if err != nil {
		return nil, err
	}
	ks := key.shape()
	if !slices.Equal(ks, value.shape()) || cs != vs || ks[1] != cs[2] || ks[2] != cs[3] {
		return nil, fmt.Errorf("%s: key %v / value %v do not match caches %v / %v", name, ks, value.shape(), cs, vs)
	}
	dt := kCache.dtype()
	if key.dtype() != dt || value.dtype() != dt || vCache.dtype() != dt {
		return nil, fmt.Errorf("%s: key %v, value %v, caches %v/%v: the kernel needs one dtype", name, key.dtype(), value.dtype(), dt, vCache.dtype())
	}
	if len(slots) != ks[0] {
		return nil, fmt.Errorf("%s: slot mapping has %d entries for %d tokens", name, len(slots), ks[0])
	}
	capacity := int64(cs[0]) * int64(cs[1])
	for t, s := range slots {
		if int64(s) >= capacity {
			return nil, fmt.Errorf("%s: slot %d of token %d is out of range (cache holds %d slots)", name, s, t, capacity)
		}
	}
	es := key.es()
	p := &slabPlan{kernel: name, dt: dt, blocks: int64(ks[0]), kvh: int64(ks[1]), d: int64(ks[2]), es: es, index: slotsAddr}
	row := p.kvh * p.d
	p.skip = make([]bool, p.blocks)
	for k, src := range []Operand{key, value} {
		st := src.strides()
		side := slabSide{headStride: int64(st[1]) * es, elemStride: int64(st[2]) * es}
		cache := []Operand{kCache, vCache}[k]
		dst := slabSide{headStride: p.d * es, elemStride: es}
		side.rows = make([]uint64, p.blocks)
		dst.rows = make([]uint64, p.blocks)
		for t := int64(0); t < p.blocks; t++ {
			side.rows[t] = src.elemAddr(src.offset() + t*int64(st[0]))
			if slots[t] >= 0 {
				dst.rows[t] = cache.elemAddr(cache.offset() + int64(slots[t])*row)
			}
		}
		p.src[k], p.dst[k] = side, dst
	}
	for t, s := range slots {
		if s < 0 {
			p.skip[t] = true
			// padding rows are never addressed; keep them aligned so they
			// do not veto the vector path
			p.dst[0].rows[t], p.dst[1].rows[t] = kCache.Base, vCache.Base
		}
	}
	p.vectorize()
	return p, nil
}

// SimulateReshapeAndCache simulates reshape_and_cache writing the K and V of T
// new tokens (key, value: [T, KVH, D], any strides, typically views of a
// fused QKV output) into the paged caches at slots (negative = padding,
// skipped). slotsAddr is the device address of the int32 slot mapping.
func SimulateReshapeAndCache(key, value, kCache, vCache Operand, slots []int32, slotsAddr uint64, mode Mode) (Launch, error) {
	p, err := planReshapeAndCache(key, value, kCache, vCache, slots, slotsAddr)
	if err != nil {
		return Launch{}, err
	}
	return p.simulate(mode)
}

// planGatherKV lays out gather_kv: row r of the contiguous outputs
// kOut, vOut [R, KVH, D] receives cache slot rowSlots[r].
func planGatherKV(kOut, vOut, kCache, vCache Operand, rowSlots []int32, slotsAddr uint64) (*slabPlan, error) {
	name := KernelGatherKV
	cs, err := cacheShape(name, kCache)
	if err != nil {
		return nil, err
	}
	vs, err := cacheShape(name, vCache)
	if err != nil {
		return nil, err
	}
	for _, o := range []Operand{kOut, vOut} {
		if o.Layout == nil || o.Layout.Dim() != 3 || !o.Layout.IsContiguous() {
			return nil, fmt.Errorf("%s: outputs must be contiguous [rows, n_kv_heads, head_dim]", name)
		}
		if sh := o.shape(); sh[0] != len(rowSlots) || sh[1] != cs[2] || sh[2] != cs[3] {
			return nil, fmt.Errorf("%s: output %v does not match %d rows of cache %v", name, sh, len(rowSlots), cs)
		}
		if o.dtype() != kCache.dtype() {
			return nil, fmt.Errorf("%s: output %v differs from cache dtype %v", name, o.dtype(), kCache.dtype())
		}
	}
	if cs != vs || vCache.dtype() != kCache.dtype() {
		return nil, fmt.Errorf("%s: caches %v and %v differ", name, cs, vs)
	}
	capacity := int64(cs[0]) * int64(cs[1])
	for r, s := range rowSlots {
		if s < 0 || int64(s) >= capacity {
			return nil, fmt.Errorf("%s: row %d reads slot %d outside the cache's %d slots", name, r, s, capacity)
		}
	}
	es := kCache.es()
	p := &slabPlan{kernel: name, dt: kCache.dtype(), blocks: int64(len(rowSlots)), kvh: int64(cs[2]), d: int64(cs[3]), es: es, index: slotsAddr}
	row := p.kvh * p.d
	p.skip = make([]bool, p.blocks)
	for k := 0; k < 2; k++ {
		cache, out := []Operand{kCache, vCache}[k], []Operand{kOut, vOut}[k]
		src := slabSide{headStride: p.d * es, elemStride: es, rows: make([]uint64, p.blocks)}
		dst := slabSide{headStride: p.d * es, elemStride: es, rows: make([]uint64, p.blocks)}
		for r := int64(0); r < p.blocks; r++ {
			src.rows[r] = cache.elemAddr(cache.offset() + int64(rowSlots[r])*row)
			dst.rows[r] = out.elemAddr(out.offset() + r*row)
		}
		p.src[k], p.dst[k] = src, dst
	}
	p.vectorize()
	return p, nil
}

// SimulateGatherKV simulates gather_kv, the naive path's copy of a sequence's
// context out of the paged cache into contiguous [R, KVH, D] K and V
// (PyTorch: k_cache[block_table].view(...)), row r from slot rowSlots[r].
func SimulateGatherKV(kOut, vOut, kCache, vCache Operand, rowSlots []int32, slotsAddr uint64, mode Mode) (Launch, error) {
	p, err := planGatherKV(kOut, vOut, kCache, vCache, rowSlots, slotsAddr)
	if err != nil {
		return Launch{}, err
	}
	return p.simulate(mode)
}

// contextSlots returns the cache slots of positions 0 … ContextLen−1 of
// sequence i: the rows gather_kv copies.
func (s *Seqs) contextSlots(i, blockSize int) []int32 {
	out := make([]int32, s.ContextLen[i])
	for p := range out {
		out[p] = int32(s.physSlot(i, p, blockSize))
	}
	return out
}

// The cache kernels' launchers: ReshapeAndCache and GatherKV, planned by
// planReshapeAndCache and planGatherKV above.

// cacheArgs mirrors StrideCacheArgs.
type cacheArgs struct {
	numRows, kvHeads, headDim, units                           int64
	keyOffset, keyStride, keyHeadStride, keyElemStride         int64
	valueOffset, valueStride, valueHeadStride, valueElemStride int64
	kCacheOffset, vCacheOffset, kOutOffset, vOutOffset         int64
	vec                                                        int32
}

// ReshapeAndCache writes key and value ([T, KVH, D], any strides) into the
// paged caches at s's slot mapping.
func (d *Device) ReshapeAndCache(key, value, kCache, vCache *DeviceTensor, s *DeviceSeqs) error {
	if err := d.ok(); err != nil {
		return err
	}
	if s == nil {
		return fmt.Errorf("cuda: reshape_and_cache: nil seqs")
	}
	p, err := planReshapeAndCache(key.Operand(), value.Operand(), kCache.Operand(), vCache.Operand(), s.Seqs.SlotMapping, s.slots.Addr())
	if err != nil {
		return err
	}
	if d.record {
		if err := d.note(p.simulate(Aggregate)); err != nil {
			return err
		}
	}
	ks, vs := key.layout.Strides(), value.layout.Strides()
	a := cacheArgs{numRows: p.blocks, kvHeads: p.kvh, headDim: p.d, units: p.units, vec: int32(p.vec),
		keyOffset: int64(key.layout.Offset()), keyStride: int64(ks[0]), keyHeadStride: int64(ks[1]), keyElemStride: int64(ks[2]),
		valueOffset: int64(value.layout.Offset()), valueStride: int64(vs[0]), valueHeadStride: int64(vs[1]), valueElemStride: int64(vs[2]),
		kCacheOffset: int64(kCache.layout.Offset()), vCacheOffset: int64(vCache.layout.Offset())}
	ptrs := [4]uintptr{key.buf.ptr, value.buf.ptr, kCache.buf.ptr, vCache.buf.ptr}
	l, err := dimsOf(p.launch(), 0)
	if err != nil {
		return err
	}
	return d.timed(func() error { return launchReshapeAndCache(p.dt, ptrs, s.slots.buf.ptr, &a, l) })
}

// GatherKV copies cache slots rowSlots into the contiguous kOut, vOut
// [R, KVH, D].
func (d *Device) GatherKV(kOut, vOut, kCache, vCache *DeviceTensor, rowSlots *DeviceInts) error {
	if err := d.ok(); err != nil {
		return err
	}
	p, err := planGatherKV(kOut.Operand(), vOut.Operand(), kCache.Operand(), vCache.Operand(), rowSlots.Vals, rowSlots.Addr())
	if err != nil {
		return err
	}
	if d.record {
		if err := d.note(p.simulate(Aggregate)); err != nil {
			return err
		}
	}
	a := cacheArgs{numRows: p.blocks, kvHeads: p.kvh, headDim: p.d, units: p.units, vec: int32(p.vec),
		kCacheOffset: int64(kCache.layout.Offset()), vCacheOffset: int64(vCache.layout.Offset()),
		kOutOffset: int64(kOut.layout.Offset()), vOutOffset: int64(vOut.layout.Offset())}
	ptrs := [4]uintptr{kCache.buf.ptr, vCache.buf.ptr, kOut.buf.ptr, vOut.buf.ptr}
	l, err := dimsOf(p.launch(), 0)
	if err != nil {
		return err
	}
	return d.timed(func() error { return launchGatherKV(p.dt, ptrs, rowSlots.buf.ptr, &a, l) })
}
