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
// contiguous. Token t goes to slot slotMapping[t], i.e. block slot/bs,
// offset slot%bs; a negative slot marks padding and is skipped.
//
// The only bytes moved are the cache writes themselves, recorded as one
// copy op per cache in the caches' Context.
func ReshapeAndCache(key, value, kCache, vCache *tensor.Tensor, slotMapping []int32) error {
	if err := checkCacheArgs(key, value, kCache, vCache, slotMapping); err != nil {
		return err
	}
	written := 0
	for _, pair := range [2][2]*tensor.Tensor{{key, kCache}, {value, vCache}} {
		n, err := writeSlots(pair[0], pair[1], slotMapping)
		if err != nil {
			return err
		}
		written = n
	}
	if written > 0 {
		sh := kCache.Shape()
		bytes := int64(written) * int64(sh[2]*sh[3]*kCache.DType().Size())
		kCache.Context().RecordCopy(bytes)
		vCache.Context().RecordCopy(bytes)
	}
	return nil
}

func checkCacheArgs(key, value, kCache, vCache *tensor.Tensor, slots []int32) error {
	if key.Dim() != 3 || value.Dim() != 3 {
		return fmt.Errorf("reshape_and_cache: key and value must be [T, n_kv_heads, head_dim], got %v and %v",
			key.Shape(), value.Shape())
	}
	if kCache.Dim() != 4 || vCache.Dim() != 4 || !kCache.IsContiguous() || !vCache.IsContiguous() {
		return fmt.Errorf("reshape_and_cache: caches must be contiguous [num_blocks, block_size, n_kv_heads, head_dim], got %v and %v",
			kCache.Shape(), vCache.Shape())
	}
	ks, vs, kc, vc := key.Shape(), value.Shape(), kCache.Shape(), vCache.Shape()
	if !equal(ks, vs) || !equal(kc, vc) || ks[1] != kc[2] || ks[2] != kc[3] {
		return fmt.Errorf("reshape_and_cache: key %v / value %v do not match caches %v / %v", ks, vs, kc, vc)
	}
	if len(slots) != ks[0] {
		return fmt.Errorf("reshape_and_cache: slot mapping has %d entries for %d tokens", len(slots), ks[0])
	}
	capacity := kc[0] * kc[1]
	for t, s := range slots {
		if int(s) >= capacity {
			return fmt.Errorf("reshape_and_cache: slot %d of token %d is out of range (cache holds %d slots)", s, t, capacity)
		}
	}
	return nil
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
func writeSlots(src, cache *tensor.Tensor, slots []int32) (int, error) {
	if src.IsMeta() || cache.IsMeta() {
		return 0, fmt.Errorf("reshape_and_cache: %w", tensor.ErrMeta)
	}
	shape, st := src.Shape(), src.Strides()
	nKV, hd := shape[1], shape[2]
	keyStride, keyHeadStride, elemStride := st[0], st[1], st[2]
	tokenStride := nKV * hd // cache slot stride: kv_token_stride
	in := src.Storage()
	out := cache.Storage()
	base := cache.Offset()
	written := 0
	for t, s := range slots {
		if s < 0 {
			continue
		}
		dst := base + int(s)*tokenStride
		for h := 0; h < nKV; h++ {
			so := src.Offset() + t*keyStride + h*keyHeadStride
			storeRow(out, dst+h*hd, in, so, elemStride, hd)
		}
		written++
	}
	return written, nil
}

// storeRow copies n elements read at src[so], src[so+stride], … into
// dst[do:do+n], converting dtypes when they differ.
func storeRow(dst *tensor.Storage, do int, src *tensor.Storage, so, stride, n int) {
	if d, s := dst.Float32s(), src.Float32s(); d != nil && s != nil {
		if stride == 1 {
			copy(d[do:do+n], s[so:so+n])
			return
		}
		for j := 0; j < n; j++ {
			d[do+j] = s[so+j*stride]
		}
		return
	}
	for j := 0; j < n; j++ {
		dst.Store(do+j, src.Load(so+j*stride))
	}
}
