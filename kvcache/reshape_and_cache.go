package kvcache

import (
	"fmt"

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
		sh := kCache.Shape()
		bytes := int64(written) * int64(sh[2]*sh[3]*kCache.DType().Size())
		kCache.Context().RecordCopy(bytes)
		vCache.Context().RecordCopy(bytes)
	}
	return nil
}

func checkCacheArgs(key, value, kCache, vCache *tensor.Tensor, slots []int32) error {
	if key == nil || value == nil || kCache == nil || vCache == nil {
		return fmt.Errorf("reshape_and_cache: nil tensor (key %v, value %v, k_cache %v, v_cache %v)",
			key != nil, value != nil, kCache != nil, vCache != nil)
	}
	for _, t := range []*tensor.Tensor{key, value, kCache, vCache} {
		if t.IsMeta() {
			return fmt.Errorf("reshape_and_cache: %w", tensor.ErrMeta)
		}
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
	ks, vs, kc, vc := key.Shape(), value.Shape(), kCache.Shape(), vCache.Shape()
	if !equal(ks, vs) || !equal(kc, vc) || ks[1] != kc[2] || ks[2] != kc[3] {
		return fmt.Errorf("reshape_and_cache: key %v / value %v do not match caches %v / %v", ks, vs, kc, vc)
	}
	if len(slots) != ks[0] {
		return fmt.Errorf("reshape_and_cache: slot mapping has %d entries for %d tokens", len(slots), ks[0])
	}
	if overlap(kCache, vCache) {
		return fmt.Errorf("reshape_and_cache: k_cache and v_cache overlap in memory")
	}
	for _, pair := range []struct {
		name string
		t    *tensor.Tensor
	}{{"key", key}, {"value", value}} {
		if overlap(pair.t, kCache) || overlap(pair.t, vCache) {
			return fmt.Errorf("reshape_and_cache: %s overlaps a cache tensor; writing would clobber its own input", pair.name)
		}
	}
	capacity := kc[0] * kc[1]
	var seen map[int32]int
	if len(slots) > 1 {
		seen = make(map[int32]int, len(slots))
	}
	for t, s := range slots {
		if int(s) >= capacity {
			return fmt.Errorf("reshape_and_cache: slot %d of token %d is out of range (cache holds %d slots = %d blocks × %d)",
				s, t, capacity, kc[0], kc[1])
		}
		if s < 0 || seen == nil {
			continue
		}
		if prev, dup := seen[s]; dup {
			return fmt.Errorf("reshape_and_cache: slot %d is given to tokens %d and %d; one would overwrite the other", s, prev, t)
		}
		seen[s] = t
	}
	return nil
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
	st := t.Strides()
	for i, s := range t.Shape() {
		hi += (s - 1) * st[i]
	}
	return lo, hi
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// writeSlots copies src[t], a [n_kv_heads, head_dim] slab read through
// src's strides, into cache slot slots[t]. It returns the tokens written.
// The arguments were checked by checkCacheArgs.
func writeSlots(src, cache *tensor.Tensor, slots []int32) int {
	shape, st := src.Shape(), src.Strides()
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
