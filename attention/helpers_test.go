package attention

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stride-lm/stride/tensor"
)

// seqSpec is one sequence of a test batch: qlen new tokens on top of
// ctx−qlen cached ones.
type seqSpec struct{ qlen, ctx int }

// caseSpec describes one attention step to test.
type caseSpec struct {
	name          string
	H, KVH, D, bs int
	seqs          []seqSpec
	padding       bool         // put a padding row (slot −1) before every sequence and at the end
	fusedQKV      bool         // q, k, v as Narrow+View of one [T, (H+2·KVH)·D] buffer
	cacheDType    tensor.DType // F32 unless set
	qScale        float64      // scale of the N(0, 1) query entries (0 = 1): large values make peaked softmax rows
	seed          uint64
}

// testCase is a built step: inputs, caches and the float64 reference.
type testCase struct {
	spec           caseSpec
	led            *tensor.Ledger
	q, k, v        *tensor.Tensor
	kCache, vCache *tensor.Tensor
	batch          *Batch
	T              int
	want           []float64 // [T, H·D] reference output (padding rows 0)
	written        int       // tokens the cache write stores
}

// buildCase fills a shuffled paged cache with the earlier context of each
// sequence, draws q, k, v for the new tokens, and computes the reference
// with dense float64 attention over each sequence's positions.
func buildCase(t testing.TB, s caseSpec) *testCase {
	t.Helper()
	r := rand.New(rand.NewPCG(s.seed, 77))
	H, KVH, D, bs := s.H, s.KVH, s.D, s.bs
	tc := &testCase{spec: s, led: tensor.NewLedger()}

	// Rows: sequences in order, with optional padding rows.
	b := &Batch{}
	row := 0
	var padRows []int
	for _, sq := range s.seqs {
		if s.padding {
			padRows = append(padRows, row)
			row++
		}
		b.QueryStart = append(b.QueryStart, row)
		b.QueryLen = append(b.QueryLen, sq.qlen)
		b.ContextLen = append(b.ContextLen, sq.ctx)
		row += sq.qlen
	}
	if s.padding {
		padRows = append(padRows, row)
		row++
	}
	T := row
	tc.T = T

	// Blocks: hand out a random permutation of all blocks (plus spares).
	need := 0
	for _, sq := range s.seqs {
		need += (sq.ctx + bs - 1) / bs
	}
	numBlocks := need + 3
	perm := r.Perm(numBlocks)
	next := 0
	for _, sq := range s.seqs {
		nb := (sq.ctx + bs - 1) / bs
		table := make([]int32, nb)
		for j := range table {
			table[j] = int32(perm[next])
			next++
		}
		b.BlockTables = append(b.BlockTables, table)
	}
	b.SlotMapping = make([]int32, T)
	for i := range b.SlotMapping {
		b.SlotMapping[i] = -1
	}
	for i, sq := range s.seqs {
		for j := 0; j < sq.qlen; j++ {
			p := sq.ctx - sq.qlen + j
			b.SlotMapping[b.QueryStart[i]+j] = b.BlockTables[i][p/bs]*int32(bs) + int32(p%bs)
			tc.written++
		}
	}
	tc.batch = b

	dt := s.cacheDType
	round := func(x float32) float32 { return x }
	switch dt {
	case tensor.F16:
		round = func(x float32) float32 { return tensor.F16Float(tensor.F16Bits(x)) }
	case tensor.BF16:
		round = func(x float32) float32 { return tensor.BF16Float(tensor.BF16Bits(x)) }
	}
	var err error
	if tc.kCache, err = tensor.Zeros(tc.led, dt, numBlocks, bs, KVH, D); err != nil {
		t.Fatal(err)
	}
	if tc.vCache, err = tensor.Zeros(tc.led, dt, numBlocks, bs, KVH, D); err != nil {
		t.Fatal(err)
	}

	// Per-sequence K and V at every position (float32 values as stored).
	keys := make([][]float32, len(s.seqs)) // [ctx, KVH, D]
	vals := make([][]float32, len(s.seqs))
	for i, sq := range s.seqs {
		keys[i] = make([]float32, sq.ctx*KVH*D)
		vals[i] = make([]float32, sq.ctx*KVH*D)
		for j := range keys[i] {
			keys[i][j] = float32(r.NormFloat64())
			vals[i][j] = float32(r.NormFloat64())
		}
		// Earlier context goes straight into the cache.
		for p := 0; p < sq.ctx-sq.qlen; p++ {
			slot := int(b.BlockTables[i][p/bs])*bs + p%bs
			for x := 0; x < KVH*D; x++ {
				tc.kCache.Storage().Store(slot*KVH*D+x, keys[i][p*KVH*D+x])
				tc.vCache.Storage().Store(slot*KVH*D+x, vals[i][p*KVH*D+x])
			}
		}
	}

	// q, k, v of the new rows.
	qw, kw := H*D, KVH*D
	qbuf := make([]float32, T*qw)
	kbuf := make([]float32, T*kw)
	vbuf := make([]float32, T*kw)
	qScale := s.qScale
	if qScale == 0 {
		qScale = 1
	}
	for j := range qbuf {
		qbuf[j] = float32(r.NormFloat64() * qScale)
	}
	for _, pr := range padRows { // padding rows carry junk the cache must not see
		for x := 0; x < kw; x++ {
			kbuf[pr*kw+x] = 1e6
			vbuf[pr*kw+x] = 1e6
		}
	}
	for i, sq := range s.seqs {
		for j := 0; j < sq.qlen; j++ {
			p := sq.ctx - sq.qlen + j
			copy(kbuf[(b.QueryStart[i]+j)*kw:], keys[i][p*kw:(p+1)*kw])
			copy(vbuf[(b.QueryStart[i]+j)*kw:], vals[i][p*kw:(p+1)*kw])
		}
	}
	if s.fusedQKV {
		W := qw + 2*kw
		fused := make([]float32, T*W)
		for t := 0; t < T; t++ {
			copy(fused[t*W:], qbuf[t*qw:(t+1)*qw])
			copy(fused[t*W+qw:], kbuf[t*kw:(t+1)*kw])
			copy(fused[t*W+qw+kw:], vbuf[t*kw:(t+1)*kw])
		}
		qkv := tensor.Must(tensor.FromFloat32(tc.led, tensor.F32, fused, T, W))
		tc.q = tensor.Must(tensor.Must(qkv.Narrow(1, 0, qw)).View(T, H, D))
		tc.k = tensor.Must(tensor.Must(qkv.Narrow(1, qw, kw)).View(T, KVH, D))
		tc.v = tensor.Must(tensor.Must(qkv.Narrow(1, qw+kw, kw)).View(T, KVH, D))
	} else {
		tc.q = tensor.Must(tensor.FromFloat32(tc.led, tensor.F32, qbuf, T, H, D))
		tc.k = tensor.Must(tensor.FromFloat32(tc.led, tensor.F32, kbuf, T, KVH, D))
		tc.v = tensor.Must(tensor.FromFloat32(tc.led, tensor.F32, vbuf, T, KVH, D))
	}

	// Reference: dense causal attention in float64, per sequence and head,
	// over the values as the cache stores them.
	tc.want = make([]float64, T*qw)
	g := H / KVH
	scale := 1 / math.Sqrt(float64(D))
	for i, sq := range s.seqs {
		for j := 0; j < sq.qlen; j++ {
			row := b.QueryStart[i] + j
			pos := sq.ctx - sq.qlen + j
			for h := 0; h < H; h++ {
				kvh := h / g
				qv := qbuf[row*qw+h*D : row*qw+(h+1)*D]
				sc := make([]float64, pos+1)
				mx := math.Inf(-1)
				for p := 0; p <= pos; p++ {
					var dot float64
					for x := 0; x < D; x++ {
						dot += float64(qv[x]) * float64(round(keys[i][(p*KVH+kvh)*D+x]))
					}
					sc[p] = dot * scale
					mx = math.Max(mx, sc[p])
				}
				var sum float64
				for p := range sc {
					sc[p] = math.Exp(sc[p] - mx)
					sum += sc[p]
				}
				for x := 0; x < D; x++ {
					var acc float64
					for p := range sc {
						acc += sc[p] * float64(round(vals[i][(p*KVH+kvh)*D+x]))
					}
					tc.want[row*qw+h*D+x] = acc / sum
				}
			}
		}
	}
	return tc
}

// checkOutput compares a [T, H·D] result with the reference: every
// element within tol·(1 + |want|).
func checkOutput(t *testing.T, tc *testCase, out *tensor.Tensor, tol float64) {
	t.Helper()
	H, D := tc.spec.H, tc.spec.D
	if got := out.Shape(); len(got) != 2 || got[0] != tc.T || got[1] != H*D {
		t.Fatalf("output shape %v, want [%d, %d]", got, tc.T, H*D)
	}
	if !out.IsContiguous() || out.DType() != tensor.F32 {
		t.Fatalf("output %v is not a contiguous float32 tensor", out)
	}
	got, err := out.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	worst, at := 0.0, 0
	for i, w := range tc.want {
		e := math.Abs(float64(got[i])-w) / (1 + math.Abs(w))
		if e > worst || math.IsNaN(e) {
			worst, at = e, i
		}
	}
	if worst > tol || math.IsNaN(worst) {
		t.Fatalf("max relative error %.3g at row %d col %d (got %v, want %v), tolerance %.1g",
			worst, at/(H*D), at%(H*D), got[at], tc.want[at], tol)
	}
}

// checkCacheWrite verifies that the cache now holds every new token's K
// and V at its slot, and that no padding row (whose K/V are 1e6) was
// written anywhere.
func checkCacheWrite(t *testing.T, tc *testCase) {
	t.Helper()
	KVH, D := tc.spec.KVH, tc.spec.D
	kc, _ := tc.kCache.Float32s()
	vc, _ := tc.vCache.Float32s()
	for _, x := range kc {
		if x == 1e6 {
			t.Fatal("a padding row's K reached the cache")
		}
	}
	for _, x := range vc {
		if x == 1e6 {
			t.Fatal("a padding row's V reached the cache")
		}
	}
	for row, slot := range tc.batch.SlotMapping {
		if slot < 0 {
			continue
		}
		for h := 0; h < KVH; h++ {
			for x := 0; x < D; x++ {
				kw, _ := tc.k.At(row, h, x)
				vw, _ := tc.v.At(row, h, x)
				i := (int(slot)*KVH+h)*D + x
				if kc[i] != roundTo(tc.kCache.DType(), kw) || vc[i] != roundTo(tc.vCache.DType(), vw) {
					t.Fatalf("cache slot %d head %d dim %d holds k=%v v=%v, want %v %v", slot, h, x, kc[i], vc[i], kw, vw)
				}
			}
		}
	}
}

func roundTo(dt tensor.DType, x float32) float32 {
	switch dt {
	case tensor.F16:
		return tensor.F16Float(tensor.F16Bits(x))
	case tensor.BF16:
		return tensor.BF16Float(tensor.BF16Bits(x))
	}
	return x
}

// equivalenceCases are the configurations both paths must get right.
func equivalenceCases() []caseSpec {
	var cs []caseSpec
	heads := []struct{ H, KVH int }{{4, 4}, {4, 2}, {12, 4}, {4, 1}}
	for _, hk := range heads {
		for _, bs := range []int{1, 5, 16} {
			for _, fused := range []bool{false, true} {
				base := caseSpec{H: hk.H, KVH: hk.KVH, D: 8, bs: bs, fusedQKV: fused, seed: uint64(hk.H*100 + hk.KVH*10 + bs)}
				name := func(kind string) string {
					n := kind + "/H" + strconv.Itoa(hk.H) + "KVH" + strconv.Itoa(hk.KVH) + "/bs" + strconv.Itoa(bs)
					if fused {
						n += "/fusedqkv"
					}
					return n
				}
				c := base
				c.name, c.seqs = name("prefill"), []seqSpec{{37, 37}}
				cs = append(cs, c)
				c = base
				c.name, c.seqs = name("prefill-batch"), []seqSpec{{9, 9}, {9, 9}, {9, 9}}
				cs = append(cs, c)
				c = base
				c.name, c.seqs = name("decode"), []seqSpec{{1, 23}, {1, 1}, {1, 16}, {1, 41}}
				cs = append(cs, c)
				c = base
				c.name, c.seqs = name("decode-batch"), []seqSpec{{1, 30}, {1, 30}}
				cs = append(cs, c)
				c = base
				c.name, c.seqs, c.padding = name("varlen-padded"), []seqSpec{{6, 6}, {1, 29}, {7, 33}, {1, 1}, {3, 12}}, true
				cs = append(cs, c)
			}
		}
	}
	// Widths that are not a multiple of the unrolling, and 16-bit caches.
	cs = append(cs,
		caseSpec{name: "odd-D", H: 6, KVH: 3, D: 7, bs: 5, seqs: []seqSpec{{11, 11}, {1, 19}, {4, 25}}, seed: 5},
		caseSpec{name: "D48-fusedqkv", H: 6, KVH: 6, D: 48, bs: 16, fusedQKV: true, seqs: []seqSpec{{70, 70}, {1, 90}}, seed: 6},
		caseSpec{name: "f16-cache", H: 4, KVH: 2, D: 16, bs: 16, cacheDType: tensor.F16, fusedQKV: true, seqs: []seqSpec{{20, 20}, {1, 35}, {5, 40}}, padding: true, seed: 7},
		caseSpec{name: "bf16-cache", H: 4, KVH: 1, D: 16, bs: 5, cacheDType: tensor.BF16, seqs: []seqSpec{{13, 13}, {2, 30}}, seed: 8},
	)
	return cs
}
