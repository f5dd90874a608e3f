package attention

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stride-lm/stride/tensor"
	"github.com/stride-lm/stride/tensor/kernels"
)

// A verify step's rows, as one-row entries over one block table at
// consecutive positions, run as one row group (runRowGroup) and each row
// comes out with the bits of the same row computed alone, a decode step
// at its position: random shapes (head widths of every tile kind, GQA
// groups of 1 to 6 heads, F32 and 16-bit caches, key tiles that the rows
// straddle), under every kernel implementation the CPU has (the generic
// Go kernels, AVX2, AVX-512).
func TestRowGroupMatchesDecodeBits(t *testing.T) {
	prev := kernels.CurrentImpl()
	defer func() { _ = kernels.SetImpl(prev) }()
	for _, impl := range kernels.Available() {
		t.Run(impl.String(), func(t *testing.T) {
			if err := kernels.SetImpl(impl); err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(26, 1))
			for c := range 60 {
				checkRowGroup(t, r, c)
			}
		})
	}
}

func checkRowGroup(t *testing.T, r *rand.Rand, c int) {
	t.Helper()
	KVH := 1 + r.IntN(3)
	g := []int{1, 2, 3, 4, 6}[r.IntN(5)]
	H := KVH * g
	D := []int{8, 9, 16, 24, 48, 64}[r.IntN(6)]
	bs := []int{1, 3, 8, 16}[r.IntN(4)]
	dt := []tensor.DType{tensor.F32, tensor.F32, tensor.F16, tensor.BF16}[r.IntN(4)]
	n := 2 + r.IntN(15)     // rows of the group
	ctx0 := 1 + r.IntN(300) // context of its first row
	opts := Options{KeyTile: []int{0, 5, 16, 64}[r.IntN(4)], QueryTile: []int{0, 8, 64}[r.IntN(3)]}
	name := fmt.Sprintf("case %d: H=%d KVH=%d D=%d bs=%d %v rows=%d ctx=%d opts=%+v", c, H, KVH, D, bs, dt, n, ctx0, opts)

	led := tensor.NewLedger()
	cl := ctx0 + n - 1
	nb := (cl+bs-1)/bs + 3
	kc := tensor.Must(tensor.Zeros(led, dt, nb, bs, KVH, D))
	vc := tensor.Must(tensor.Zeros(led, dt, nb, bs, KVH, D))
	for i := range nb * bs * KVH * D {
		kc.Storage().Store(i, float32(r.NormFloat64()))
		vc.Storage().Store(i, float32(r.NormFloat64()))
	}
	table := make([]int32, (cl+bs-1)/bs) // blocks in a shuffled order
	for i, p := range r.Perm(nb)[:len(table)] {
		table[i] = int32(p)
	}
	qbuf := make([]float32, n*H*D)
	for i := range qbuf {
		qbuf[i] = float32(r.NormFloat64() * 2)
	}
	q := tensor.Must(tensor.FromFloat32(led, tensor.F32, qbuf, n, H, D))
	tables, ctxs := make([][]int32, n), make([]int, n)
	for i := range n {
		tables[i], ctxs[i] = table[:(ctx0+i+bs-1)/bs], ctx0+i
	}
	scale := 1 / float32(math.Sqrt(float64(D)))
	out := tensor.Must(tensor.Zeros(led, tensor.F32, n, H*D))
	if err := PagedDecode(out, q, kc, vc, tables, ctxs, scale, opts); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	got := out.Storage().Float32s()
	for i := range n {
		// The row alone: one entry, its own copy of the table, so no group.
		qi := tensor.Must(tensor.FromFloat32(led, tensor.F32, qbuf[i*H*D:(i+1)*H*D], 1, H, D))
		oi := tensor.Must(tensor.Zeros(led, tensor.F32, 1, H*D))
		own := append([]int32(nil), tables[i]...)
		if err := PagedDecode(oi, qi, kc, vc, [][]int32{own}, []int{ctxs[i]}, scale, opts); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for j, w := range oi.Storage().Float32s() {
			if g := got[i*H*D+j]; math.Float32bits(g) != math.Float32bits(w) {
				t.Fatalf("%s: row %d element %d is %v in the group, %v alone", name, i, j, g, w)
			}
		}
	}
}

// plan merges exactly the runs of one-row entries that share a table and
// count up in row and context length.
func TestRowGroupPlan(t *testing.T) {
	tab, other := []int32{0, 1, 2}, []int32{0, 1, 2}
	a := &flashArgs{
		qStart:      []int{0, 1, 2, 3, 4, 5, 7, 8},
		qLen:        []int{1, 1, 1, 1, 1, 2, 1, 1},
		ctxLen:      []int{5, 6, 7, 9, 10, 12, 3, 4},
		blockTables: [][]int32{tab, tab, tab[:2], tab, other, tab, tab, tab},
	}
	want := []int{3, 1, 1, 1, 2}
	var got []int
	for s := 0; s < len(a.qLen); {
		n := rowGroup(a, s, 16)
		got = append(got, n)
		s += n
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("groups %v, want %v", got, want)
	}
	if n := rowGroup(a, 0, 2); n != 2 {
		t.Fatalf("capped group of %d, want 2", n)
	}
}
