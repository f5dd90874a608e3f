package kvcache

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stride-lm/stride/tensor"
)

// referenceCache is the test oracle: it makes contiguous copies of key and
// value first (the naive path), then writes them element by element with
// Set at the 4-d index (slot/bs, slot%bs, h, d).
func referenceCache(t *testing.T, key, value, kCache, vCache *tensor.Tensor, slots []int32) {
	t.Helper()
	kc := tensor.Must(key.Contiguous())
	vc := tensor.Must(value.Contiguous())
	bs := kCache.Shape()[1]
	sh := key.Shape()
	for tok, s := range slots {
		if s < 0 {
			continue
		}
		for h := 0; h < sh[1]; h++ {
			for d := 0; d < sh[2]; d++ {
				for _, p := range [2][2]*tensor.Tensor{{kc, kCache}, {vc, vCache}} {
					x, err := p[0].At(tok, h, d)
					if err != nil {
						t.Fatal(err)
					}
					if err := p[1].Set(x, int(s)/bs, int(s)%bs, h, d); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
}

// rawBits returns a tensor's storage as comparable integers (F32 bits or
// 16-bit patterns), for bitwise cache comparisons.
func rawBits(t *tensor.Tensor) []uint32 {
	if f := t.Storage().Float32s(); f != nil {
		out := make([]uint32, len(f))
		for i, x := range f {
			out[i] = mathFloat32bits(x)
		}
		return out
	}
	u := t.Storage().Uint16s()
	out := make([]uint32, len(u))
	for i, x := range u {
		out[i] = uint32(x)
	}
	return out
}

// randomSlots returns T distinct slots of a pool of n slots, with every
// fifth one replaced by -1 (padding).
func randomSlots(r *rand.Rand, T, n int, pad bool) []int32 {
	perm := r.Perm(n)[:T]
	out := make([]int32, T)
	for i, p := range perm {
		out[i] = int32(p)
		if pad && i%5 == 3 {
			out[i] = -1
		}
	}
	return out
}

type rcCase struct {
	name             string
	T, H, KV, D      int
	blocks, bs       int
	inDT, cacheDT    tensor.DType
	layout           string // "fused", "contiguous", "permuted"
	pad              bool
	wantNonContigKey bool
}

// makeKV builds key and value [T, KV, D] in the requested layout, all in led.
func makeKV(t *testing.T, led *tensor.Ledger, c rcCase, seed uint64) (key, value *tensor.Tensor) {
	t.Helper()
	switch c.layout {
	case "fused":
		// qkv is the fused projection output [T, (H+2·KV)·D]; K and V are
		// column ranges of it, viewed as [T, KV, D] with token stride
		// (H+2·KV)·D: no copy.
		w := (c.H + 2*c.KV) * c.D
		qkv := tensor.Must(tensor.Randn(led, c.inDT, seed, c.T, w))
		key = tensor.Must(tensor.Must(qkv.Narrow(1, c.H*c.D, c.KV*c.D)).View(c.T, c.KV, c.D))
		value = tensor.Must(tensor.Must(qkv.Narrow(1, (c.H+c.KV)*c.D, c.KV*c.D)).View(c.T, c.KV, c.D))
		if got, want := key.Strides(), []int{w, c.D, 1}; !slices.Equal(got, want) {
			t.Fatalf("fused key strides %v, want %v", got, want)
		}
	case "permuted":
		// [D, T, KV] permuted to [T, KV, D]: element stride T·KV ≠ 1.
		k := tensor.Must(tensor.Randn(led, c.inDT, seed, c.D, c.T, c.KV))
		v := tensor.Must(tensor.Randn(led, c.inDT, seed+1, c.D, c.T, c.KV))
		key = tensor.Must(k.Permute(1, 2, 0))
		value = tensor.Must(v.Permute(1, 2, 0))
	default:
		key = tensor.Must(tensor.Randn(led, c.inDT, seed, c.T, c.KV, c.D))
		value = tensor.Must(tensor.Randn(led, c.inDT, seed+1, c.T, c.KV, c.D))
	}
	return key, value
}

func TestReshapeAndCacheMatchesContiguousReference(t *testing.T) {
	for _, c := range []rcCase{
		{name: "fused f32", T: 13, H: 8, KV: 2, D: 4, blocks: 6, bs: 4, inDT: tensor.F32, cacheDT: tensor.F32, layout: "fused", pad: true, wantNonContigKey: true},
		{name: "fused mha f32", T: 9, H: 4, KV: 4, D: 8, blocks: 3, bs: 3, inDT: tensor.F32, cacheDT: tensor.F32, layout: "fused", wantNonContigKey: true},
		{name: "contiguous f32", T: 7, H: 4, KV: 2, D: 8, blocks: 4, bs: 2, inDT: tensor.F32, cacheDT: tensor.F32, layout: "contiguous", pad: true},
		{name: "permuted f32", T: 6, H: 2, KV: 2, D: 5, blocks: 3, bs: 4, inDT: tensor.F32, cacheDT: tensor.F32, layout: "permuted", pad: true, wantNonContigKey: true},
		{name: "fused f32->f16 cache", T: 11, H: 8, KV: 2, D: 4, blocks: 4, bs: 4, inDT: tensor.F32, cacheDT: tensor.F16, layout: "fused", pad: true, wantNonContigKey: true},
		{name: "permuted f32->f16 cache", T: 5, H: 2, KV: 1, D: 6, blocks: 2, bs: 4, inDT: tensor.F32, cacheDT: tensor.F16, layout: "permuted", wantNonContigKey: true},
		{name: "f16->f16", T: 8, H: 4, KV: 2, D: 4, blocks: 4, bs: 4, inDT: tensor.F16, cacheDT: tensor.F16, layout: "fused", wantNonContigKey: true},
		{name: "f32->bf16", T: 8, H: 4, KV: 2, D: 4, blocks: 4, bs: 4, inDT: tensor.F32, cacheDT: tensor.BF16, layout: "fused", pad: true, wantNonContigKey: true},
		{name: "f16->f32", T: 8, H: 4, KV: 2, D: 4, blocks: 4, bs: 4, inDT: tensor.F16, cacheDT: tensor.F32, layout: "contiguous"},
		{name: "no tokens", T: 0, H: 4, KV: 2, D: 4, blocks: 2, bs: 4, inDT: tensor.F32, cacheDT: tensor.F32, layout: "contiguous"},
	} {
		t.Run(c.name, func(t *testing.T) {
			led := tensor.NewLedger()
			r := rand.New(rand.NewPCG(uint64(c.T), 7))
			key, value := makeKV(t, led, c, 42)
			if key.IsContiguous() == c.wantNonContigKey {
				t.Fatalf("key contiguity %v, the case wants non-contiguous=%v: %v", key.IsContiguous(), c.wantNonContigKey, key)
			}
			shape := []int{c.blocks, c.bs, c.KV, c.D}
			// Start from nonzero garbage so skipped slots are visible.
			kCache := tensor.Must(full(led, c.cacheDT, -7, shape...))
			vCache := tensor.Must(full(led, c.cacheDT, -9, shape...))
			refCtx := tensor.NewLedger()
			kRef := tensor.Must(full(refCtx, c.cacheDT, -7, shape...))
			vRef := tensor.Must(full(refCtx, c.cacheDT, -9, shape...))
			slots := randomSlots(r, c.T, c.blocks*c.bs, c.pad)

			before := led.Stats()
			if err := ReshapeAndCache(key, value, kCache, vCache, slots); err != nil {
				t.Fatal(err)
			}
			d := led.Stats().Sub(before)
			referenceCache(t, key, value, kRef, vRef, slots)

			if !slices.Equal(rawBits(kCache), rawBits(kRef)) || !slices.Equal(rawBits(vCache), rawBits(vRef)) {
				t.Fatalf("cache differs from the contiguous-copy reference")
			}
			written := 0
			for _, s := range slots {
				if s >= 0 {
					written++
				}
			}
			// Accounting: only the cache writes, no staging copy of the
			// strided key/value and no allocation.
			perCache := int64(written * c.KV * c.D * c.cacheDT.Size())
			wantOps := int64(2)
			if written == 0 {
				wantOps = 0
			}
			if d.BytesCopied != 2*perCache || d.CopyOps != wantOps || d.Allocations != 0 || d.BytesAllocated != 0 {
				t.Fatalf("accounting %v; want copied=%d (2 × %d written × %d×%d × %dB) in %d ops, no allocation",
					d, 2*perCache, written, c.KV, c.D, c.cacheDT.Size(), wantOps)
			}
		})
	}
}

// TestReshapeAndCacheSkipsNegativeSlots checks that a padding slot leaves
// every element of both caches as it was.
func TestReshapeAndCacheSkipsNegativeSlots(t *testing.T) {
	led := tensor.NewLedger()
	key := tensor.Must(full(led, tensor.F32, 1, 3, 1, 2))
	value := tensor.Must(full(led, tensor.F32, 2, 3, 1, 2))
	kCache := tensor.Must(tensor.Zeros(led, tensor.F32, 2, 2, 1, 2))
	vCache := tensor.Must(tensor.Zeros(led, tensor.F32, 2, 2, 1, 2))
	before := led.Stats()
	if err := ReshapeAndCache(key, value, kCache, vCache, []int32{-1, 2, -5}); err != nil {
		t.Fatal(err)
	}
	k := must(kCache.Float32s())
	v := must(vCache.Float32s())
	// Only slot 2 = block 1, offset 0 = elements 4, 5.
	if !slices.Equal(k, []float32{0, 0, 0, 0, 1, 1, 0, 0}) || !slices.Equal(v, []float32{0, 0, 0, 0, 2, 2, 0, 0}) {
		t.Fatalf("k %v v %v", k, v)
	}
	if d := led.Stats().Sub(before); d.BytesCopied != 2*2*4 {
		t.Fatalf("copied %d bytes, want 16 (one token of 2 floats per cache)", d.BytesCopied)
	}
}

func TestReshapeAndCacheRejectsBeforeWriting(t *testing.T) {
	led := tensor.NewLedger()
	key := tensor.Must(tensor.Randn(led, tensor.F32, 1, 4, 2, 3))
	value := tensor.Must(tensor.Randn(led, tensor.F32, 2, 4, 2, 3))
	kCache := tensor.Must(tensor.Randn(led, tensor.F32, 3, 3, 2, 2, 3))
	vCache := tensor.Must(tensor.Randn(led, tensor.F32, 4, 3, 2, 2, 3))
	meta := tensor.Must(tensor.Meta(tensor.F32, 4, 2, 3))
	f16Cache := tensor.Must(tensor.Zeros(led, tensor.F16, 3, 2, 2, 3))
	both := tensor.Must(tensor.Zeros(led, tensor.F32, 2, 3, 2, 2, 3))
	kHalf := tensor.Must(both.Select(0, 0))
	vHalf := tensor.Must(both.Select(0, 1))
	kWide := tensor.Must(tensor.Zeros(led, tensor.F32, 3, 2, 2, 6))
	kNonContig := tensor.Must(kWide.Narrow(3, 0, 3))
	// A key that is itself a view of the K cache's storage.
	aliasKey := tensor.Must(tensor.Must(kCache.Narrow(0, 0, 2)).Reshape(4, 2, 3))

	ok := []int32{0, 3, -1, 5} // the caches hold 3 blocks × 2 = 6 slots
	for _, tc := range []struct {
		name, want         string
		key, value, kc, vc *tensor.Tensor
		slots              []int32
	}{
		{"slot out of range (last token)", "out of range", key, value, kCache, vCache, []int32{0, 5, 1, 6}},
		{"huge slot", "out of range", key, value, kCache, vCache, []int32{1 << 30, 0, 1, 2}},
		{"duplicate slot", "tokens 0 and 3", key, value, kCache, vCache, []int32{4, 1, 2, 4}},
		{"short slot mapping", "3 entries for 4 tokens", key, value, kCache, vCache, ok[:3]},
		{"nil key", "nil tensor", nil, value, kCache, vCache, ok},
		{"nil cache", "nil tensor", key, value, kCache, nil, ok},
		{"meta value", "meta", key, meta, kCache, vCache, ok},
		{"2-d key", "must be [T, n_kv_heads, head_dim]", tensor.Must(key.View(4, 6)), value, kCache, vCache, ok},
		{"head mismatch", "do not match", tensor.Must(key.View(4, 3, 2)), tensor.Must(value.View(4, 3, 2)), kCache, vCache, ok},
		{"dtype mismatch", "k_cache is float32 but v_cache is float16", key, value, kCache, f16Cache, ok},
		{"non-contiguous cache", "contiguous", key, value, kNonContig, vCache, ok},
		{"caches overlap", "overlap", key, value, kCache, kCache, ok},
		{"key aliases cache", "clobber", aliasKey, value, kCache, vCache, ok},
	} {
		kSnap, vSnap := must(kCache.Float32s()), must(vCache.Float32s())
		before := led.Stats()
		err := ReshapeAndCache(tc.key, tc.value, tc.kc, tc.vc, tc.slots)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to mention %q", tc.name, err, tc.want)
			continue
		}
		if d := led.Stats().Sub(before); d.BytesCopied != 0 || d.CopyOps != 0 {
			t.Errorf("%s: %v recorded although the call failed", tc.name, d)
		}
		if !slices.Equal(must(kCache.Float32s()), kSnap) || !slices.Equal(must(vCache.Float32s()), vSnap) {
			t.Errorf("%s: a cache was modified by a failed call", tc.name)
		}
	}
	// Two halves of one [2, …] buffer are disjoint: accepted (vLLM's
	// kv_cache[0], kv_cache[1]).
	if err := ReshapeAndCache(key, value, kHalf, vHalf, ok); err != nil {
		t.Fatalf("disjoint halves of one buffer: %v", err)
	}
}

// full is torch.full: a contiguous tensor of shape with every element v.
func full(led *tensor.Ledger, dt tensor.DType, v float32, shape ...int) (*tensor.Tensor, error) {
	n := 1
	for _, s := range shape {
		n *= s
	}
	data := make([]float32, n)
	for i := range data {
		data[i] = v
	}
	return tensor.FromFloat32(led, dt, data, shape...)
}
