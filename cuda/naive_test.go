package cuda

import (
	"math/rand/v2"
	"testing"

	"github.com/stride-lm/stride/tensor"
)

func TestNaiveAggregateEqualsReplay(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 13))
	for i := 0; i < 40; i++ {
		dt := []tensor.DType{tensor.F32, tensor.F16, tensor.BF16}[r.IntN(3)]
		H := 1 + r.IntN(4)
		D := []int{4, 8, 24, 32, 40, 64}[r.IntN(6)]
		Tq := 1 + r.IntN(40)
		L := Tq + r.IntN(30)
		as := NewAddressSpace()
		if r.IntN(3) == 0 {
			as.Alloc(int64(dt.Size()))
		}
		var q, k, v *tensor.Tensor
		if r.IntN(2) == 0 { // views of a fused QKV of L rows, q its last Tq rows
			qkv := tensor.Must(tensor.Meta(dt, L, 3*H*D))
			q = tensor.Must(tensor.Must(tensor.Must(qkv.Narrow(1, 0, H*D)).View(L, H, D)).Narrow(0, L-Tq, Tq))
			k = tensor.Must(tensor.Must(qkv.Narrow(1, H*D, H*D)).View(L, H, D))
			v = tensor.Must(tensor.Must(qkv.Narrow(1, 2*H*D, H*D)).View(L, H, D))
		} else {
			q = tensor.Must(tensor.Meta(dt, Tq, H, D))
			k = tensor.Must(tensor.Meta(dt, L, H, D))
			v = tensor.Must(tensor.Meta(dt, L, H, D))
		}
		scores := tensor.Must(tensor.Meta(dt, H, Tq, L))
		out := tensor.Must(tensor.Meta(dt, H, Tq, D))
		qo, ko, vo, so, oo := as.Operand(q), as.Operand(k), as.Operand(v), as.Operand(scores), as.Operand(out)
		type fn func(Mode) (Launch, error)
		for _, f := range []fn{
			func(m Mode) (Launch, error) { return SimulateNaiveScores(so, qo, ko, m) },
			func(m Mode) (Launch, error) { return SimulateNaiveSoftmax(so, m) },
			func(m Mode) (Launch, error) { return SimulateNaiveAV(oo, so, vo, m) },
		} {
			agg, err := f(Aggregate)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := f(Replay)
			if err != nil {
				t.Fatal(err)
			}
			if !sameTraffic(agg, rep) {
				t.Fatalf("case %d %s (%v H=%d D=%d Tq=%d L=%d): aggregate\n%v\nreplay\n%v", i, agg.Kernel, dt, H, D, Tq, L, agg, rep)
			}
		}
	}
}

// The naive kernels' compulsory traffic is each operand once: scores
// writes H·Tq·L elements, softmax reads and writes them, AV reads them.
func TestNaiveCompulsoryBytes(t *testing.T) {
	const H, Tq, L, D = 4, 64, 96, 64
	as := NewAddressSpace()
	q := as.Operand(tensor.Must(tensor.Meta(tensor.F16, Tq, H, D)))
	k := as.Operand(tensor.Must(tensor.Meta(tensor.F16, L, H, D)))
	s := as.Operand(tensor.Must(tensor.Meta(tensor.F16, H, Tq, L)))
	ls, err := SimulateNaiveScores(s, q, k, Aggregate)
	if err != nil {
		t.Fatal(err)
	}
	if ls.Stores.HBMBytes() != H*Tq*L*2 || ls.Loads.HBMBytes() != (Tq+L)*H*D*2 {
		t.Fatalf("scores: %v", ls)
	}
	// q is re-read once per column tile: L1 traffic ⌈L/32⌉ = 3 times q.
	if ls.Loads.BytesMoved() != 3*Tq*H*D*2+2*L*H*D*2 {
		t.Fatalf("scores moved %d", ls.Loads.BytesMoved())
	}
	lsm, err := SimulateNaiveSoftmax(s, Aggregate)
	if err != nil {
		t.Fatal(err)
	}
	if lsm.Loads.HBMBytes() != H*Tq*L*2 || lsm.Stores.HBMBytes() != H*Tq*L*2 || lsm.Loads.BytesMoved() != 2*H*Tq*L*2 {
		t.Fatalf("softmax: %v", lsm)
	}
}
