package cuda

import (
	"fmt"
	"math"

	"github.com/stride-lm/stride/tensor"
)

// MaxHeadDim is the largest head_dim the attention kernels take: the fused
// prefill kernel keeps a warp's output rows in registers, D/32 floats per
// row per lane.
const MaxHeadDim = 256

// AttentionOperands are the tensors and metadata of the attention kernels.
type AttentionOperands struct {
	// Q is [T, H, D] with any token stride (q_stride) and head stride
	// (q_head_stride) and element stride 1: typically a view of the fused
	// QKV output, read in place.
	Q Operand
	// KCache and VCache are the contiguous paged caches
	// [num_blocks, block_size, KVH, D].
	KCache, VCache Operand
	// Out is the contiguous [T, H·D] output, written in place: head h of
	// token t goes to Out[t, h·D : (h+1)·D].
	Out Operand
	// Seqs and Meta are the step's metadata and their device addresses.
	Seqs *Seqs
	Meta SeqAddrs
}

// attnDims are the sizes and strides (elements) the kernels take.
type attnDims struct {
	T, H, KVH, D, bs, nb, group  int64
	es                           int64
	dt                           tensor.DType
	qStride, qHeadStride         int64
	outStride                    int64
	kvBlockStride, kvTokenStride int64
	kvHeadStride                 int64
	maxBlocks                    int64
}

func (a *AttentionOperands) dims(name string) (attnDims, error) {
	var d attnDims
	if a.Q.Layout == nil || a.Out.Layout == nil {
		return d, fmt.Errorf("%s: missing q or out", name)
	}
	if a.Q.Layout.Dim() != 3 {
		return d, fmt.Errorf("%s: q must be [T, H, D], got %v", name, a.Q.shape())
	}
	qs, qst := a.Q.shape(), a.Q.strides()
	if qs[2] > 1 && qst[2] != 1 {
		return d, fmt.Errorf("%s: q's head_dim must be contiguous (element stride 1), got strides %v", name, qst)
	}
	cs, err := cacheShape(name, a.KCache)
	if err != nil {
		return d, err
	}
	vs, err := cacheShape(name, a.VCache)
	if err != nil {
		return d, err
	}
	if cs != vs {
		return d, fmt.Errorf("%s: k cache %v and v cache %v differ", name, cs, vs)
	}
	dt := a.Q.dtype()
	if a.KCache.dtype() != dt || a.VCache.dtype() != dt || a.Out.dtype() != dt {
		return d, fmt.Errorf("%s: q %v, caches %v/%v, out %v: the kernels take one dtype", name, dt, a.KCache.dtype(), a.VCache.dtype(), a.Out.dtype())
	}
	d.T, d.H, d.D = int64(qs[0]), int64(qs[1]), int64(qs[2])
	d.nb, d.bs, d.KVH = int64(cs[0]), int64(cs[1]), int64(cs[2])
	if int64(cs[3]) != d.D {
		return d, fmt.Errorf("%s: q head_dim %d differs from the caches' %d", name, d.D, cs[3])
	}
	if d.D < 1 || d.D > MaxHeadDim {
		return d, fmt.Errorf("%s: head_dim %d outside [1, %d]", name, d.D, MaxHeadDim)
	}
	if d.KVH < 1 || d.H%d.KVH != 0 {
		return d, fmt.Errorf("%s: %d query heads are not a multiple of %d KV heads", name, d.H, d.KVH)
	}
	d.group = d.H / d.KVH
	os := a.Out.shape()
	if len(os) != 2 || int64(os[0]) != d.T || int64(os[1]) != d.H*d.D || !a.Out.Layout.IsContiguous() {
		return d, fmt.Errorf("%s: out must be contiguous [%d, %d], got %v strides %v", name, d.T, d.H*d.D, os, a.Out.strides())
	}
	if err := a.Seqs.Validate(int(d.T), int(d.nb), int(d.bs)); err != nil {
		return d, fmt.Errorf("%s: %w", name, err)
	}
	d.es, d.dt = int64(dt.Size()), dt
	d.qStride, d.qHeadStride = int64(qst[0]), int64(qst[1])
	d.outStride = d.H * d.D
	d.kvBlockStride, d.kvTokenStride, d.kvHeadStride = d.bs*d.KVH*d.D, d.KVH*d.D, d.D
	d.maxBlocks = int64(a.Seqs.MaxBlocks())
	return d, nil
}

// kvRow returns the address of element 0 of (position p of sequence i,
// KV head g) in cache c.
func (a *AttentionOperands) kvRow(c Operand, d *attnDims, i int, p int64, g int64) uint64 {
	blk := int64(a.Seqs.BlockTables[i][p/d.bs])
	return c.elemAddr(c.offset() + blk*d.kvBlockStride + (p%d.bs)*d.kvTokenStride + g*d.kvHeadStride)
}

// qRow returns the address of q[row, h, 0].
func (a *AttentionOperands) qRow(d *attnDims, row, h int64) uint64 {
	return a.Q.elemAddr(a.Q.offset() + row*d.qStride + h*d.qHeadStride)
}

// outRow returns the address of out[row, h·D].
func (a *AttentionOperands) outRow(d *attnDims, row, h int64) uint64 {
	return a.Out.elemAddr(a.Out.offset() + row*d.outStride + h*d.D)
}

// chunks returns the warps that cover n consecutive elements of es bytes
// with lane l of warp c on element 32c+l: a row read "lane per element".
func chunks(n, es int64) []Warp {
	var ws []Warp
	for c := int64(0); c < n; c += WarpSize {
		ws = append(ws, Strided(uint64(c*es), int(min(WarpSize, n-c)), es, int(es)))
	}
	return ws
}

// broadcast is a warp whose 32 lanes all load the 4-byte word at addr: a
// scalar kernel argument read from an array (a length, a block number).
func broadcast(addr uint64) Warp { return Strided(addr, WarpSize, 0, 4) }

// count adds w shifted by base to c, n times.
func (c *Counter) at(store bool, w Warp, base uint64, n int64) {
	for l := range w.Addr {
		w.Addr[l] += base
	}
	if store {
		c.Store(&w, n)
	} else {
		c.Load(&w, n)
	}
}

// metaFootprint adds the int32 entries [first, first+n) of the array at
// base.
func (f *footprint) ints(base uint64, first, n int64) {
	if n > 0 {
		f.add(base+uint64(4*first), base+uint64(4*(first+n)))
	}
}

// metaRanges returns the byte ranges of a Seqs' device arrays, for the
// metadata classification of a literal replay.
func (a *AttentionOperands) metaRanges() [][2]uint64 {
	s, m := a.Seqs, a.Meta
	r := func(base uint64, n int) [2]uint64 { return [2]uint64{base, base + uint64(4*n)} }
	return [][2]uint64{
		r(m.SlotMapping, len(s.SlotMapping)), r(m.QueryStart, len(s.QueryStart)), r(m.QueryLen, len(s.QueryLen)),
		r(m.ContextLens, len(s.ContextLen)), r(m.BlockTables, len(s.BlockTables)*s.MaxBlocks()),
	}
}

// The arguments both attention kernels (decode.go, prefill.go) launch with.

// attnArgs mirrors StrideAttnArgs.
type attnArgs struct {
	numSeqs, numHeads, numKVHeads, headDim, blockSize, maxBlocks int32
	qOffset, qStride, qHeadStride                                int64
	kOffset, vOffset                                             int64
	kvBlockStride, kvTokenStride, kvHeadStride                   int64
	outOffset, outStride                                         int64
	partition, numSplits, smemPositions, qvec, kvvec             int32
	scale                                                        float32
}

// attention returns the operands of an attention launch and checks that
// every size fits the kernels' int32 arguments.
func attention(q, kCache, vCache, out *DeviceTensor, s *DeviceSeqs) (*AttentionOperands, error) {
	if s == nil {
		return nil, fmt.Errorf("cuda: attention: nil seqs")
	}
	return &AttentionOperands{Q: q.Operand(), KCache: kCache.Operand(), VCache: vCache.Operand(), Out: out.Operand(), Seqs: s.Seqs, Meta: s.Addrs()}, nil
}

func newAttnArgs(a *AttentionOperands, d *attnDims) (*attnArgs, error) {
	for _, v := range []int64{d.T, d.H, d.KVH, d.D, d.bs, d.maxBlocks, int64(a.Seqs.NumSeqs())} {
		if v > math.MaxInt32 {
			return nil, fmt.Errorf("cuda: attention size %d does not fit int32", v)
		}
	}
	return &attnArgs{
		numSeqs: int32(a.Seqs.NumSeqs()), numHeads: int32(d.H), numKVHeads: int32(d.KVH), headDim: int32(d.D),
		blockSize: int32(d.bs), maxBlocks: int32(d.maxBlocks),
		qOffset: a.Q.offset(), qStride: d.qStride, qHeadStride: d.qHeadStride,
		kOffset: a.KCache.offset(), vOffset: a.VCache.offset(),
		kvBlockStride: d.kvBlockStride, kvTokenStride: d.kvTokenStride, kvHeadStride: d.kvHeadStride,
		outOffset: a.Out.offset(), outStride: d.outStride,
		scale: float32(1 / math.Sqrt(float64(d.D))),
	}, nil
}
