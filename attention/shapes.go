package attention

import (
	"fmt"
	"slices"

	"github.com/stride-lm/stride/kvcache"
	"github.com/stride-lm/stride/tensor"
)

// dims are the sizes of one attention step, checked once by checkInputs.
type dims struct {
	T, H, KVH, D         int
	numBlocks, blockSize int
	meta                 bool
}

// group is the number of query heads sharing one KV head.
func (d dims) group() int { return d.H / d.KVH }

// checkInputs validates the shapes of Attend's tensors and returns their
// sizes: q [T, H, D], k and v [T, KVH, D] with H a multiple of KVH, and
// contiguous caches [num_blocks, block_size, KVH, D]. Either every tensor
// is a meta tensor (a layout-only run) or none is.
func checkInputs(q, k, v, kCache, vCache *tensor.Tensor) (dims, error) {
	var d dims
	switch {
	case q == nil:
		return d, fmt.Errorf("attention: q is nil")
	case k == nil:
		return d, fmt.Errorf("attention: k is nil")
	case v == nil:
		return d, fmt.Errorf("attention: v is nil")
	case kCache == nil:
		return d, fmt.Errorf("attention: k_cache is nil")
	case vCache == nil:
		return d, fmt.Errorf("attention: v_cache is nil")
	}
	if q.Dim() != 3 || k.Dim() != 3 || v.Dim() != 3 {
		return d, fmt.Errorf("attention: q, k, v must be [T, H, D], [T, KVH, D], [T, KVH, D]; got %v, %v, %v",
			q.Shape(), k.Shape(), v.Shape())
	}
	// Shapes go into stack arrays: this runs for every layer of every
	// decode step, which must not allocate.
	var qsb, ksb, vsb [3]int
	qs, ks, vs := q.AppendShape(qsb[:0]), k.AppendShape(ksb[:0]), v.AppendShape(vsb[:0])
	d.T, d.H, d.D, d.KVH = qs[0], qs[1], qs[2], ks[1]
	if !slices.Equal(ks, vs) || ks[0] != d.T || ks[2] != d.D {
		return d, fmt.Errorf("attention: k %v and v %v must both be [T=%d, KVH, D=%d] to match q %v", k.Shape(), v.Shape(), d.T, d.D, q.Shape())
	}
	if d.H == 0 || d.KVH == 0 || d.D == 0 || d.H%d.KVH != 0 {
		return d, fmt.Errorf("attention: %d query heads cannot share %d KV heads of width %d (need H a positive multiple of KVH, D > 0)",
			d.H, d.KVH, d.D)
	}
	var csb, vcb [4]int
	cs, vc := kCache.AppendShape(csb[:0]), vCache.AppendShape(vcb[:0])
	if kCache.Dim() != 4 || !slices.Equal(cs, vc) {
		return d, fmt.Errorf("attention: k_cache %v and v_cache %v must be equal [num_blocks, block_size, KVH, D]", kCache.Shape(), vCache.Shape())
	}
	if cs[2] != d.KVH || cs[3] != d.D {
		return d, fmt.Errorf("attention: cache %v holds %d heads of width %d; k has %d of width %d", kCache.Shape(), cs[2], cs[3], d.KVH, d.D)
	}
	if !kCache.IsContiguous() || !vCache.IsContiguous() {
		return d, fmt.Errorf("attention: caches must be contiguous (kv_block_stride, kv_token_stride, kv_head_stride are derived from the shape); got strides %v and %v",
			kCache.Strides(), vCache.Strides())
	}
	d.numBlocks, d.blockSize = cs[0], cs[1]
	d.meta = q.IsMeta()
	if k.IsMeta() != d.meta || v.IsMeta() != d.meta || kCache.IsMeta() != d.meta || vCache.IsMeta() != d.meta {
		return d, fmt.Errorf("attention: meta and real tensors mixed (q meta=%v); trace layouts with all-meta inputs", d.meta)
	}
	return d, nil
}

// writeCache runs kvcache.ReshapeAndCache (or, for meta tensors, only its
// byte count) and records the "reshape_and_cache(k, v)" trace row. It
// returns the bytes written into the two caches.
func writeCache(k, v, kCache, vCache *tensor.Tensor, b *Batch, d dims, tr *tensor.Trace) (int64, error) {
	written := 0
	for _, s := range b.SlotMapping {
		if s >= 0 {
			written++
		}
	}
	bytes := 2 * int64(written) * int64(d.KVH*d.D*kCache.DType().Size())
	if !d.meta {
		if err := kvcache.ReshapeAndCache(k, v, kCache, vCache, b.SlotMapping); err != nil {
			return 0, err
		}
	}
	tr.Record("reshape_and_cache(k, v)", kCache, 0, bytes)
	return bytes, nil
}

// uniform reports whether b is B sequences of S new tokens each packed
// back to back with no padding, so [T, ·] can be shown as [B, S, ·].
func uniform(b *Batch, T int) (B, S int, ok bool) {
	B = len(b.QueryLen)
	if B == 0 {
		return 0, 0, false
	}
	S = b.QueryLen[0]
	for i := range b.QueryLen {
		if b.QueryLen[i] != S || b.QueryStart[i] != i*S {
			return 0, 0, false
		}
	}
	return B, S, B*S == T
}
