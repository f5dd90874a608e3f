package kvcache

import (
	"fmt"
	"slices"

	"github.com/stride-lm/stride/tensor"
)

// ReshapeAndCache writes the K and V of T new tokens into a layer's paged
// caches, as vLLM's reshape_and_cache kernel does.
//
// key and value are [T, n_kv_heads, head_dim] with any strides: typically
// views cut out of the fused QKV output, whose token stride is
// (n_heads + 2·n_kv_heads)·head_dim rather than n_kv_heads·head_dim. The
// kernel reads them through key_stride (dim 0), key_head_stride (dim 1) and
// the element stride (dim 2), so they are never made contiguous first.
// kCache and vCache are [num_blocks, block_size, n_kv_heads, head_dim]
// contiguous, of one dtype. Token t goes to slot slotMapping[t], i.e.
// block slot/bs, offset slot%bs, element offset slot·kv_token_stride; a
// negative slot marks padding and is skipped.
//
// Every argument is checked before the first write: a slot outside the
// cache, a slot given to two tokens, mismatched shapes, meta tensors, or
// a key/value that overlaps a cache (or caches that overlap each other)
// return an error and leave the caches untouched.
//
// The only bytes moved are the cache writes themselves, recorded as one
// copy op per cache in the caches' Context: written_tokens · n_kv_heads ·
// head_dim · elem_size bytes each. Nothing is allocated.
func ReshapeAndCache(key, value, kCache, vCache *tensor.Tensor, slotMapping []int32) error {
	if err := checkCacheArgs(key, value, kCache, vCache, slotMapping); err != nil {
		return err
	}
	written := writeSlots(key, kCache, slotMapping)
	writeSlots(value, vCache, slotMapping)
	if written > 0 {
		var buf [4]int
		sh := kCache.AppendShape(buf[:0])
		bytes := int64(written) * int64(sh[2]*sh[3]*kCache.DType().Size())
		kCache.Ledger().RecordCopy(bytes)
		vCache.Ledger().RecordCopy(bytes)
	}
	return nil
}

func checkCacheArgs(key, value, kCache, vCache *tensor.Tensor, slots []int32) error {
	if key == nil || value == nil || kCache == nil || vCache == nil {
		return fmt.Errorf("reshape_and_cache: nil tensor (key %v, value %v, k_cache %v, v_cache %v)",
			key != nil, value != nil, kCache != nil, vCache != nil)
	}
	if key.IsMeta() || value.IsMeta() || kCache.IsMeta() || vCache.IsMeta() {
		return fmt.Errorf("reshape_and_cache: %w", tensor.ErrMeta)
	}
	if key.Dim() != 3 || value.Dim() != 3 {
		return fmt.Errorf("reshape_and_cache: key and value must be [T, n_kv_heads, head_dim], got %v and %v",
			key.Shape(), value.Shape())
	}
	if kCache.Dim() != 4 || vCache.Dim() != 4 || !kCache.IsContiguous() || !vCache.IsContiguous() {
		return fmt.Errorf("reshape_and_cache: caches must be contiguous [num_blocks, block_size, n_kv_heads, head_dim], got %v and %v",
			kCache, vCache)
	}
	if kCache.DType() != vCache.DType() {
		return fmt.Errorf("reshape_and_cache: k_cache is %v but v_cache is %v", kCache.DType(), vCache.DType())
	}
	// The layouts are read into stack arrays: this check runs for every
	// layer of every decode step, which must not allocate.
	var ksb, vsb, kcb, vcb [4]int
	ks, vs := key.AppendShape(ksb[:0]), value.AppendShape(vsb[:0])
	kc, vc := kCache.AppendShape(kcb[:0]), vCache.AppendShape(vcb[:0])
	if !slices.Equal(ks, vs) || !slices.Equal(kc, vc) || ks[1] != kc[2] || ks[2] != kc[3] {
		return fmt.Errorf("reshape_and_cache: key %v / value %v do not match caches %v / %v", key.Shape(), value.Shape(), kCache.Shape(), vCache.Shape())
	}
	if len(slots) != ks[0] {
		return fmt.Errorf("reshape_and_cache: slot mapping has %d entries for %d tokens", len(slots), ks[0])
	}
	if overlap(kCache, vCache) {
		return fmt.Errorf("reshape_and_cache: k_cache and v_cache overlap in memory")
	}
	if overlap(key, kCache) || overlap(key, vCache) {
		return fmt.Errorf("reshape_and_cache: key overlaps a cache tensor; writing would clobber its own input")
	}
	if overlap(value, kCache) || overlap(value, vCache) {
		return fmt.Errorf("reshape_and_cache: value overlaps a cache tensor; writing would clobber its own input")
	}
	capacity := kc[0] * kc[1]
	for t, s := range slots {
		if int(s) >= capacity {
			return fmt.Errorf("reshape_and_cache: slot %d of token %d is out of range (cache holds %d slots = %d blocks × %d)",
				s, t, capacity, kc[0], kc[1])
		}
	}
	if t0, t1, dup := duplicateSlot(slots); dup {
		return fmt.Errorf("reshape_and_cache: slot %d is given to tokens %d and %d; one would overwrite the other", slots[t1], t0, t1)
	}
	return nil
}

// smallSlots is the slot count up to which duplicateSlot compares pairs
// instead of building a map: a decode step of a batch has one slot per
// sequence, and at most smallSlots²/2 comparisons are cheaper than
// hashing (and allocate nothing).
const smallSlots = 64

// duplicateSlot finds two tokens t0 < t1 given the same non-negative slot,
// reporting the first such t1 in token order and its earliest partner.
func duplicateSlot(slots []int32) (t0, t1 int, dup bool) {
	if len(slots) <= smallSlots {
		for j := 1; j < len(slots); j++ {
			if slots[j] < 0 {
				continue
			}
			for i := 0; i < j; i++ {
				if slots[i] == slots[j] {
					return i, j, true
				}
			}
		}
		return 0, 0, false
	}
	seen := make(map[int32]int, len(slots))
	for t, s := range slots {
		if s < 0 {
			continue
		}
		if prev, ok := seen[s]; ok {
			return prev, t, true
		}
		seen[s] = t
	}
	return 0, 0, false
}

// overlap reports whether the storage ranges a and b span intersect (same
// storage only). Strides are non-negative, so a tensor's elements lie in
// [offset, offset + Σ (size_k−1)·stride_k].
func overlap(a, b *tensor.Tensor) bool {
	if !tensor.SharesStorage(a, b) || a.Numel() == 0 || b.Numel() == 0 {
		return false
	}
	alo, ahi := span(a)
	blo, bhi := span(b)
	return alo <= bhi && blo <= ahi
}

func span(t *tensor.Tensor) (lo, hi int) {
	lo, hi = t.Offset(), t.Offset()
	var shb, stb [8]int
	st := t.AppendStrides(stb[:0])
	for i, s := range t.AppendShape(shb[:0]) {
		hi += (s - 1) * st[i]
	}
	return lo, hi
}

// writeSlots copies src[t], a [n_kv_heads, head_dim] slab read through
// src's strides, into cache slot slots[t]. It returns the tokens written.
// The arguments were checked by checkCacheArgs.
func writeSlots(src, cache *tensor.Tensor, slots []int32) int {
	var shb, stb [4]int
	shape, st := src.AppendShape(shb[:0]), src.AppendStrides(stb[:0])
	nKV, hd := shape[1], shape[2]
	keyStride, keyHeadStride, elemStride := st[0], st[1], st[2]
	tokenStride := nKV * hd // kv_token_stride of the cache
	in, out := src.Storage(), cache.Storage()
	base := cache.Offset()
	written := 0
	for t, s := range slots {
		if s < 0 {
			continue
		}
		dst := base + int(s)*tokenStride
		so := src.Offset() + t*keyStride
		for h := 0; h < nKV; h++ {
			storeRow(out, dst+h*hd, in, so+h*keyHeadStride, elemStride, hd)
		}
		written++
	}
	return written
}

// storeRow copies n elements read at src[so], src[so+stride], … into
// dst[do:do+n], rounding to dst's dtype when they differ. The common dtype
// pairs index the raw buffers; others go through Load/Store.
func storeRow(dst *tensor.Storage, do int, src *tensor.Storage, so, stride, n int) {
	sf, df := src.Float32s(), dst.Float32s()
	sh, dh := src.Uint16s(), dst.Uint16s()
	switch {
	case df != nil && sf != nil:
		if stride == 1 {
			copy(df[do:do+n], sf[so:so+n])
			return
		}
		for j := 0; j < n; j++ {
			df[do+j] = sf[so+j*stride]
		}
	case dh != nil && sh != nil && src.DType() == dst.DType():
		for j := 0; j < n; j++ {
			dh[do+j] = sh[so+j*stride]
		}
	case dh != nil && sf != nil && dst.DType() == tensor.F16:
		f16Row(dh[do:do+n], sf, so, stride)
	default:
		for j := 0; j < n; j++ {
			dst.Store(do+j, src.Load(so+j*stride))
		}
	}
}
