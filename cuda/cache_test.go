package cuda

import (
	"math/rand/v2"
	"testing"

	"github.com/stride-lm/stride/tensor"
)

// qkvViews returns k and v as [T, KVH, D] views of a fused QKV output
// [T, (H+2·KVH)·D]: token stride (H+2·KVH)·D, head stride D.
func qkvViews(t *testing.T, dt tensor.DType, T, H, KVH, D int) (q, k, v *tensor.Tensor) {
	t.Helper()
	qkv := tensor.Must(tensor.Meta(dt, T, (H+2*KVH)*D))
	q = tensor.Must(tensor.Must(qkv.Narrow(1, 0, H*D)).View(T, H, D))
	k = tensor.Must(tensor.Must(qkv.Narrow(1, H*D, KVH*D)).View(T, KVH, D))
	v = tensor.Must(tensor.Must(qkv.Narrow(1, (H+KVH)*D, KVH*D)).View(T, KVH, D))
	return q, k, v
}

func TestReshapeAndCacheAggregateEqualsReplay(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for i := 0; i < 120; i++ {
		dt := []tensor.DType{tensor.F32, tensor.F16, tensor.BF16}[r.IntN(3)]
		T, KVH := 1+r.IntN(20), 1+r.IntN(4)
		H := KVH * (1 + r.IntN(3))
		D := []int{4, 8, 12, 16, 33, 64, 128}[r.IntN(7)]
		bs := []int{1, 4, 16}[r.IntN(3)]
		nb := (T+bs-1)/bs + r.IntN(3)
		_, k, v := qkvViews(t, dt, T, H, KVH, D)
		if r.IntN(4) == 0 { // a contiguous K, a strided V
			k = tensor.Must(tensor.Meta(dt, T, KVH, D))
			big := tensor.Must(tensor.Meta(dt, T, KVH, 2*D))
			v = tensor.Must(big.Slice(2, 0, 2*D, 2))
		}
		as := NewAddressSpace()
		if r.IntN(3) == 0 {
			as.Alloc(int64(dt.Size()) * int64(1+r.IntN(7))) // shift the next bases off 256
		}
		kc := tensor.Must(tensor.Meta(dt, nb, bs, KVH, D))
		vc := tensor.Must(tensor.Meta(dt, nb, bs, KVH, D))
		perm := r.Perm(nb * bs)
		slots := make([]int32, T)
		for j := range slots {
			slots[j] = int32(perm[j])
			if r.IntN(5) == 0 {
				slots[j] = -1
			}
		}
		ko, vo, kco, vco := as.Operand(k), as.Operand(v), as.Operand(kc), as.Operand(vc)
		sa := as.Ints(T)
		agg, err := SimulateReshapeAndCache(ko, vo, kco, vco, slots, sa, Aggregate)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := SimulateReshapeAndCache(ko, vo, kco, vco, slots, sa, Replay)
		if err != nil {
			t.Fatal(err)
		}
		if !sameTraffic(agg, rep) || agg.Vectorized != rep.Vectorized {
			t.Fatalf("case %d (%v T=%d KVH=%d D=%d): aggregate\n%v\nreplay\n%v", i, dt, T, KVH, D, agg, rep)
		}
		// Analytic: every written token stores exactly KVH·D elements per
		// cache; the stores are contiguous rows.
		valid := int64(0)
		for _, s := range slots {
			if s >= 0 {
				valid++
			}
		}
		if rep.Stores.BytesRequested != 2*valid*int64(KVH*D*dt.Size()) {
			t.Fatalf("stored %d bytes, want %d", rep.Stores.BytesRequested, 2*valid*int64(KVH*D*dt.Size()))
		}
	}
}

// The seed-sized fused QKV of an H=32, D=128 fp16 layer: 16-byte vectors,
// 100% coalescing, and the only bytes read are the K and V slices.
func TestReshapeAndCacheQKVView(t *testing.T) {
	const T, H, KVH, D, bs = 4096, 32, 8, 128, 16
	_, k, v := qkvViews(t, tensor.F16, T, H, KVH, D)
	as := NewAddressSpace()
	kc := tensor.Must(tensor.Meta(tensor.F16, T/bs, bs, KVH, D))
	vc := tensor.Must(tensor.Meta(tensor.F16, T/bs, bs, KVH, D))
	slots := make([]int32, T)
	for i := range slots {
		slots[i] = int32(i)
	}
	l, err := SimulateReshapeAndCache(as.Operand(k), as.Operand(v), as.Operand(kc), as.Operand(vc), slots, as.Ints(T), Aggregate)
	if err != nil {
		t.Fatal(err)
	}
	if !l.Vectorized {
		t.Fatal("aligned QKV views must take the 16-byte path")
	}
	kvBytes := int64(2 * T * KVH * D * 2)
	// loads: the K/V slabs (100%) plus one broadcast slot load per warp
	warps := int64(T * (KVH * D / 8 / 32))
	if l.Loads.Requests != warps+2*int64(T*KVH*D/8/32) {
		t.Fatalf("load requests %d", l.Loads.Requests)
	}
	if l.Loads.Sectors != warps+kvBytes/32 {
		t.Fatalf("load sectors %d, want %d", l.Loads.Sectors, warps+kvBytes/32)
	}
	if l.Stores.Efficiency() != 1 || l.Stores.HBMBytes() != kvBytes {
		t.Fatalf("stores %v", l.Stores)
	}
	if l.Loads.HBMBytes() != kvBytes+T*4 {
		t.Fatalf("distinct bytes read %d, want K+V+slots = %d", l.Loads.HBMBytes(), kvBytes+T*4)
	}
}

func TestGatherKVAggregateEqualsReplay(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 1))
	for i := 0; i < 60; i++ {
		dt := []tensor.DType{tensor.F32, tensor.F16}[r.IntN(2)]
		KVH, D, bs := 1+r.IntN(4), []int{8, 20, 64}[r.IntN(3)], []int{1, 3, 16}[r.IntN(3)]
		nb := 2 + r.IntN(6)
		R := 1 + r.IntN(nb*bs)
		kc := tensor.Must(tensor.Meta(dt, nb, bs, KVH, D))
		vc := tensor.Must(tensor.Meta(dt, nb, bs, KVH, D))
		ko := tensor.Must(tensor.Meta(dt, R, KVH, D))
		vo := tensor.Must(tensor.Meta(dt, R, KVH, D))
		rows := make([]int32, R)
		for j := range rows {
			rows[j] = int32(r.IntN(nb * bs))
		}
		as := NewAddressSpace()
		a := []Operand{as.Operand(ko), as.Operand(vo), as.Operand(kc), as.Operand(vc)}
		sa := as.Ints(R)
		agg, err := SimulateGatherKV(a[0], a[1], a[2], a[3], rows, sa, Aggregate)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := SimulateGatherKV(a[0], a[1], a[2], a[3], rows, sa, Replay)
		if err != nil {
			t.Fatal(err)
		}
		if !sameTraffic(agg, rep) {
			t.Fatalf("aggregate\n%v\nreplay\n%v", agg, rep)
		}
	}
}

func TestCacheErrors(t *testing.T) {
	as := NewAddressSpace()
	k := as.Operand(tensor.Must(tensor.Meta(tensor.F32, 4, 2, 8)))
	kc := as.Operand(tensor.Must(tensor.Meta(tensor.F32, 2, 4, 2, 8)))
	h := as.Operand(tensor.Must(tensor.Meta(tensor.F16, 2, 4, 2, 8)))
	if _, err := SimulateReshapeAndCache(k, k, kc, kc, []int32{0, 1, 2}, 0, Aggregate); err == nil {
		t.Error("short slot mapping accepted")
	}
	if _, err := SimulateReshapeAndCache(k, k, kc, kc, []int32{0, 1, 2, 8}, 0, Aggregate); err == nil {
		t.Error("slot out of range accepted")
	}
	if _, err := SimulateReshapeAndCache(k, k, h, h, []int32{0, 1, 2, 3}, 0, Aggregate); err == nil {
		t.Error("dtype mismatch accepted")
	}
	if _, err := SimulateReshapeAndCache(kc, kc, kc, kc, []int32{0}, 0, Aggregate); err == nil {
		t.Error("4-D key accepted")
	}
	if _, err := SimulateGatherKV(k, k, kc, kc, []int32{0, 1, 2, 9}, 0, Aggregate); err == nil {
		t.Error("gather of a slot out of range accepted")
	}
}
