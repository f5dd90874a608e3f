package cuda

import (
	"math/rand/v2"
	"testing"

	"github.com/stride-lm/stride/tensor"
)

// randomSeqs returns B sequences with the given query lengths and random
// context lengths ≥ them, block tables drawn from a shuffled pool, and the
// slot mapping of the new tokens; it returns the blocks used.
func randomSeqs(r *rand.Rand, qlens []int, extra, bs int) (*Seqs, int) {
	s := &Seqs{}
	row := 0
	var ctxs []int
	total := 0
	for _, q := range qlens {
		c := q + r.IntN(extra+1)
		ctxs = append(ctxs, c)
		total += (c + bs - 1) / bs
	}
	nb := total + r.IntN(3)
	pool := r.Perm(nb)
	for i, q := range qlens {
		s.QueryStart = append(s.QueryStart, row)
		s.QueryLen = append(s.QueryLen, q)
		s.ContextLen = append(s.ContextLen, ctxs[i])
		n := (ctxs[i] + bs - 1) / bs
		t := make([]int32, n)
		for j := range t {
			t[j] = int32(pool[0])
			pool = pool[1:]
		}
		s.BlockTables = append(s.BlockTables, t)
		for p := ctxs[i] - q; p < ctxs[i]; p++ {
			s.SlotMapping = append(s.SlotMapping, int32(s.physSlot(i, p, bs)))
		}
		row += q
	}
	return s, nb
}

// attnOperands places q (a view of a fused QKV buffer, or contiguous),
// caches and out for seqs in a fresh address space.
func attnOperands(t *testing.T, r *rand.Rand, dt tensor.DType, s *Seqs, nb, bs, H, KVH, D int) (*AttentionOperands, *AddressSpace) {
	t.Helper()
	T := len(s.SlotMapping)
	as := NewAddressSpace()
	if r.IntN(3) == 0 {
		as.Alloc(int64(dt.Size()) * int64(1+r.IntN(5)))
	}
	var q *tensor.Tensor
	if r.IntN(2) == 0 {
		q, _, _ = qkvViews(t, dt, T, H, KVH, D)
	} else {
		q = tensor.Must(tensor.Meta(dt, T, H, D))
	}
	a := &AttentionOperands{
		Q:      as.Operand(q),
		KCache: as.Operand(tensor.Must(tensor.Meta(dt, nb, bs, KVH, D))),
		VCache: as.Operand(tensor.Must(tensor.Meta(dt, nb, bs, KVH, D))),
		Out:    as.Operand(tensor.Must(tensor.Meta(dt, T, H*D))),
		Seqs:   s,
	}
	a.Meta = s.Place(as)
	return a, as
}

func randomHeads(r *rand.Rand) (H, KVH, D int) {
	KVH = 1 + r.IntN(3)
	H = KVH * []int{1, 2, 4}[r.IntN(3)] // MHA, GQA, and MQA when KVH = 1
	D = []int{4, 8, 24, 32, 64, 130, 256}[r.IntN(7)]
	return
}

func TestDecodeAggregateEqualsReplay(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 4))
	for i := 0; i < 40; i++ {
		dt := []tensor.DType{tensor.F32, tensor.F16, tensor.BF16}[r.IntN(3)]
		H, KVH, D := randomHeads(r)
		bs := []int{1, 4, 16}[r.IntN(3)]
		B := 1 + r.IntN(3)
		ql := make([]int, B)
		for j := range ql {
			ql[j] = 1
		}
		s, nb := randomSeqs(r, ql, 70, bs)
		a, as := attnOperands(t, r, dt, s, nb, bs, H, KVH, D)
		part := []int{0, 0, 16, 32, 48}[r.IntN(5)]
		n := DecodeSplits(s, part)
		sc := DecodeScratch{TmpOut: as.Alloc(int64(B * H * n * D * 4)), MaxLogits: as.Alloc(int64(B * H * n * 4)), ExpSums: as.Alloc(int64(B * H * n * 4))}
		agg, err := SimulatePagedDecode(a, part, sc, Aggregate)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := SimulatePagedDecode(a, part, sc, Replay)
		if err != nil {
			t.Fatal(err)
		}
		if !sameTraffic(agg, rep) {
			t.Fatalf("case %d (%v H=%d KVH=%d D=%d bs=%d part=%d): aggregate\n%v meta=%d\nreplay\n%v meta=%d", i, dt, H, KVH, D, bs, part, agg, agg.MetaBytes, rep, rep.MetaBytes)
		}
		if part > 0 {
			agg, err := SimulateDecodeMerge(a, part, sc, Aggregate)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := SimulateDecodeMerge(a, part, sc, Replay)
			if err != nil {
				t.Fatal(err)
			}
			if !sameTraffic(agg, rep) {
				t.Fatalf("merge: aggregate\n%v\nreplay\n%v", agg, rep)
			}
		}
	}
}

func TestPrefillAggregateEqualsReplay(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 15))
	n := 40
	if testing.Short() {
		n = 15
	}
	for i := 0; i < n; i++ {
		dt := []tensor.DType{tensor.F32, tensor.F16, tensor.BF16}[r.IntN(3)]
		H, KVH, D := randomHeads(r)
		bs := []int{1, 5, 16}[r.IntN(3)]
		B := 1 + r.IntN(3)
		ql := make([]int, B)
		for j := range ql {
			ql[j] = r.IntN(40)
			if j == 0 && ql[j] == 0 {
				ql[j] = 1
			}
		}
		s, nb := randomSeqs(r, ql, []int{0, 0, 50}[r.IntN(3)], bs)
		a, _ := attnOperands(t, r, dt, s, nb, bs, H, KVH, D)
		agg, err := SimulateFusedPrefill(a, Aggregate)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := SimulateFusedPrefill(a, Replay)
		if err != nil {
			t.Fatal(err)
		}
		if !sameTraffic(agg, rep) || agg.Vectorized != rep.Vectorized {
			t.Fatalf("case %d (%v H=%d KVH=%d D=%d bs=%d ql=%v ctx=%v): aggregate\n%v meta=%d\nreplay\n%v meta=%d",
				i, dt, H, KVH, D, bs, s.QueryLen, s.ContextLen, agg, agg.MetaBytes, rep, rep.MetaBytes)
		}
	}
}
