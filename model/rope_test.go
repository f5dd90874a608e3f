package model

import (
	"math"
	"testing"

	"github.com/stride-lm/stride/attention"
)

// The RoPE tables grow with the positions run, and whatever their size,
// every entry is bit-identical to the table built for all of seq_len up
// front (what NewForward computed before the tables grew lazily).
func TestRopeTablesGrowWithPositionsUsed(t *testing.T) {
	c := Config{Dim: 16, HiddenDim: 32, NLayers: 1, NHeads: 2, NKVHeads: 2, VocabSize: 32, SeqLen: 1 << 20,
		RopeTheta: 10000, NormEps: 1e-5}
	m, err := Synthesize(c, 5)
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewForward(m, ForwardOptions{Projection: FusedQKV, Path: attention.NewFused(attention.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if len(f.ropeCos) != 0 {
		t.Fatalf("NewForward built %d table entries before any position ran", len(f.ropeCos))
	}
	half := c.HeadDim() / 2
	const bs = 16
	caches := denseCaches(t, c, bs, 4)
	for pos := 0; pos < 40; pos++ {
		b, _, err := attention.NewLinearBatch([]int{1}, []int{pos + 1}, bs)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Run([]int{3 + pos%20}, []int{pos}, b, caches, []int{0}); err != nil {
			t.Fatal(err)
		}
		if f.ropeLen <= pos || f.ropeLen > 2*(pos+1) || len(f.ropeCos) != f.ropeLen*half {
			t.Fatalf("after position %d the tables cover %d positions (%d entries)", pos, f.ropeLen, len(f.ropeCos))
		}
	}
	// The up-front tables of the first 4096 positions, as NewForward
	// built them for seq_len.
	full := c
	full.SeqLen = 4096
	wantCos, wantSin := ropeTables(full, full.SeqLen)
	f.ReservePositions(full.SeqLen)
	for i := range wantCos {
		if math.Float32bits(f.ropeCos[i]) != math.Float32bits(wantCos[i]) || math.Float32bits(f.ropeSin[i]) != math.Float32bits(wantSin[i]) {
			t.Fatalf("entry %d (position %d): cos %v sin %v, want %v %v", i, i/half, f.ropeCos[i], f.ropeSin[i], wantCos[i], wantSin[i])
		}
	}
	// Reserved positions cost nothing more; positions past seq_len are
	// never built.
	if a := testing.AllocsPerRun(10, func() { f.growRope([]int{0, 4095, 17}) }); a != 0 {
		t.Fatalf("growRope within reserved positions allocates %v times", a)
	}
	small := c
	small.SeqLen = 10
	ms, err := Synthesize(small, 5)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewForward(ms, ForwardOptions{Projection: FusedQKV, Path: attention.NewFused(attention.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	g.ReservePositions(1 << 30)
	if g.ropeLen != small.SeqLen {
		t.Fatalf("reserving past seq_len built %d positions, want %d", g.ropeLen, small.SeqLen)
	}
}
