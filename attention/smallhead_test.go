package attention

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stride-lm/stride/tensor"
	"github.com/stride-lm/stride/tensor/kernels"
)

// axpyScores against float64 dot products, with K staged transposed the
// way axpyKeysTile stages it: every row scores at least its visible keys,
// masked rows stop at their position (rounded up to simdPad), and rows
// that see no key of the tile are left untouched.
func TestAxpyScores(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, D := range []int{8, 9, 16, 24} {
		for _, nk := range []int{1, 5, 16, 17, 40, 128} {
			ns := (nk + simdPad - 1) / simdPad * simdPad
			kRows := make([]float32, nk*D)
			for i := range kRows {
				kRows[i] = float32(r.NormFloat64())
			}
			krow := make([]int, nk)
			for j := range krow {
				krow[j] = j * D
			}
			kT := make([]float32, D*ns)
			for i := range kT {
				kT[i] = float32(math.NaN()) // padding must be overwritten with zeros
			}
			if err := stageTransposed(kT, nil, kRows, krow, D, ns); err != nil {
				t.Fatal(err)
			}
			const rows = 7
			q := make([]float32, rows*D)
			for i := range q {
				q[i] = float32(r.NormFloat64())
			}
			// Tile of keys k0 … k0+nk−1 for rows at positions around it:
			// before the tile (sees nothing), inside it, and past it.
			k0 := 50
			pos := []int{k0 - 3, k0, k0 + nk/2, k0 + nk - 1, k0 + nk + 9, k0 + 1, k0 - 1}
			const sentinel = -12345
			for _, masked := range []bool{false, true} {
				s := make([]float32, rows*ns)
				for i := range s {
					s[i] = sentinel
				}
				if err := axpyScores(s, ns, q, rows, D, kT, pos, k0, nk, masked); err != nil {
					t.Fatal(err)
				}
				for row := range rows {
					lim := nk
					if masked {
						lim = min(max(pos[row]-k0+1, 0), nk)
					}
					if lim == 0 {
						for j := range ns {
							if s[row*ns+j] != sentinel {
								t.Fatalf("D=%d nk=%d: row %d sees no key but score %d was written", D, nk, row, j)
							}
						}
						continue
					}
					for j := range lim {
						var want float64
						for d := range D {
							want += float64(q[row*D+d]) * float64(kRows[j*D+d])
						}
						if got := float64(s[row*ns+j]); math.Abs(got-want) > 1e-5*(1+math.Abs(want)) {
							t.Fatalf("D=%d nk=%d masked=%v: s[%d, %d] = %v, want %v", D, nk, masked, row, j, got, want)
						}
					}
					for j := nk; j < (lim+simdPad-1)/simdPad*simdPad; j++ {
						if s[row*ns+j] != 0 {
							t.Fatalf("D=%d nk=%d: padding key %d of row %d scored %v, want 0", D, nk, j, row, s[row*ns+j])
						}
					}
				}
			}
		}
	}
}

// A masked row's scores are bit-identical to the unmasked ones over the
// keys it sees: the mask only shortens the Axpy calls, so prefill output
// does not depend on where a tile's diagonal falls.
func TestAxpyScoresMaskDoesNotChangeBits(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	const D, nk, rows = 8, 128, 4
	kRows := make([]float32, nk*D)
	for i := range kRows {
		kRows[i] = float32(r.NormFloat64())
	}
	krow := make([]int, nk)
	for j := range krow {
		krow[j] = j * D
	}
	kT := make([]float32, D*nk)
	if err := stageTransposed(kT, nil, kRows, krow, D, nk); err != nil {
		t.Fatal(err)
	}
	q := make([]float32, rows*D)
	for i := range q {
		q[i] = float32(r.NormFloat64())
	}
	pos := []int{3, 40, 100, 127}
	full := make([]float32, rows*nk)
	part := make([]float32, rows*nk)
	if err := axpyScores(full, nk, q, rows, D, kT, pos, 0, nk, false); err != nil {
		t.Fatal(err)
	}
	if err := axpyScores(part, nk, q, rows, D, kT, pos, 0, nk, true); err != nil {
		t.Fatal(err)
	}
	for row, p := range pos {
		for j := 0; j <= p; j++ {
			if math.Float32bits(full[row*nk+j]) != math.Float32bits(part[row*nk+j]) {
				t.Fatalf("row %d key %d: masked %v, unmasked %v", row, j, part[row*nk+j], full[row*nk+j])
			}
		}
	}
}

// Prefill of small heads (the Axpy-scored MatMul tiles on a SIMD CPU, the
// row-wise loops without) against the float64 reference: GQA and MHA,
// F32 and 16-bit caches, earlier context and several key tiles, and on one
// or three workers with bit-identical results.
func TestSmallHeadPrefill(t *testing.T) {
	specs := []caseSpec{
		{H: 8, KVH: 4, D: 8, bs: 16, seqs: []seqSpec{{150, 150}}, fusedQKV: true, seed: 81},
		{H: 8, KVH: 4, D: 8, bs: 16, seqs: []seqSpec{{70, 200}, {33, 33}}, fusedQKV: true, padding: true, seed: 82},
		{H: 4, KVH: 4, D: 16, bs: 5, seqs: []seqSpec{{40, 90}}, seed: 83},
		{H: 6, KVH: 2, D: 24, bs: 7, seqs: []seqSpec{{45, 45}, {9, 20}}, seed: 84},
		{H: 4, KVH: 2, D: 12, bs: 16, seqs: []seqSpec{{30, 60}}, seed: 85},
		{H: 8, KVH: 4, D: 8, bs: 16, seqs: []seqSpec{{60, 130}}, cacheDType: tensor.F16, seed: 86},
		{H: 4, KVH: 1, D: 16, bs: 5, seqs: []seqSpec{{25, 25}}, cacheDType: tensor.BF16, seed: 87},
		{H: 8, KVH: 4, D: 8, bs: 16, seqs: []seqSpec{{64, 64}}, qScale: 30, seed: 88}, // peaked rows
	}
	was := kernels.SIMDEnabled()
	defer kernels.SetSIMD(was)
	simd := []bool{false}
	if was {
		simd = append(simd, true)
	}
	for _, on := range simd {
		kernels.SetSIMD(on)
		for _, s := range specs {
			var ref []float32
			for _, o := range []Options{{Threads: 1, KeyTile: 48}, {Threads: 3, KeyTile: 48}, {Threads: 1}} {
				tc := buildCase(t, s)
				out, err := NewFused(o).Attend(tc.q, tc.k, tc.v, tc.kCache, tc.vCache, tc.batch, nil)
				if err != nil {
					t.Fatal(err)
				}
				checkOutput(t, tc, out, 1e-5) // the reference reads the 16-bit caches' values too
				got, _ := out.Float32s()
				if o.KeyTile == 0 {
					continue // another key tile may round differently
				}
				if ref == nil {
					ref = append([]float32(nil), got...)
					continue
				}
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(ref[i]) {
						t.Fatalf("simd=%v D=%d: element %d is %v on %d workers, %v on one", on, s.D, i, got[i], o.Threads, ref[i])
					}
				}
			}
		}
	}
}
