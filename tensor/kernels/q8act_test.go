package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestQuantizeRow checks runq.c's activation quantizer on hand-made groups:
// scale = max|x|/127 and q = round(x/scale) with C's round (half away from
// zero, unlike the weights' torch.round, half to even).
func TestQuantizeRow(t *testing.T) {
	x := []float32{
		127, 0.5, -0.5, 1.5, -2.5, 63.5, // scale 1: halves round away from zero
		0, 0, 0, 0, 0, 0, // an all-zero group: scale 0, q 0
		-254, 1, 127, -3, 2, 0, // scale 2: 0.5 → 1, 63.5 → 64, -1.5 → -2
		1, float32(math.NaN()), 2, 3, 4, 5, // NaN: scale NaN, q 0
	}
	q := make([]int8, len(x))
	s := make([]float32, 4)
	quantizeRow(q, s, x, 6)
	wantQ := []int8{127, 1, -1, 2, -3, 64, 0, 0, 0, 0, 0, 0, -127, 1, 64, -2, 1, 0, 0, 0, 0, 0, 0, 0}
	for j := range wantQ {
		if q[j] != wantQ[j] {
			t.Errorf("q[%d] = %d, want %d (x = %v)", j, q[j], wantQ[j], x[j])
		}
	}
	if s[0] != 1 || s[1] != 0 || s[2] != 2 || !math.IsNaN(float64(s[3])) {
		t.Errorf("scales = %v, want [1 0 2 NaN]", s)
	}
}

// TestQuantizeRowBounds: on random data every group's largest |x| maps to
// ±127, every value is within half a step of q·scale, and |q| ≤ 127.
func TestQuantizeRowBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, gs := range []int{1, 3, 4, 32, 64} {
		n := gs * 9
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64() * math.Exp(rng.NormFloat64()*3))
		}
		q := make([]int8, n)
		s := make([]float32, n/gs)
		quantizeRow(q, s, x, gs)
		for g := range s {
			var amax float64
			peak := 0
			for j := g * gs; j < (g+1)*gs; j++ {
				if a := math.Abs(float64(x[j])); a > amax {
					amax, peak = a, j
				}
			}
			if want := float32(amax) / 127; s[g] != want {
				t.Fatalf("gs %d group %d: scale %v, want max|x|/127 = %v", gs, g, s[g], want)
			}
			if q[peak] != 127 && q[peak] != -127 {
				t.Fatalf("gs %d group %d: the largest |x| quantized to %d", gs, g, q[peak])
			}
			for j := g * gs; j < (g+1)*gs; j++ {
				if q[j] < -127 {
					t.Fatalf("q[%d] = %d < -127", j, q[j])
				}
				// |x − q·s| ≤ s/2, plus the rounding of x/s and of s itself.
				if d := math.Abs(float64(x[j]) - float64(q[j])*float64(s[g])); d > float64(s[g])*(0.5+1e-5) {
					t.Fatalf("gs %d: x[%d] = %v, q·s = %v: error %g > scale/2", gs, j, x[j], float64(q[j])*float64(s[g]), d)
				}
			}
		}
	}
}

// q8Routes runs f once per Q8_0 route this CPU has: generic Go, the float32
// assembly kernels on dequantized activations (with VNNI switched off),
// and VNNI.
func q8Routes(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	prevImpl, prevVNNI := CurrentImpl(), useVNNI
	defer func() { _ = SetImpl(prevImpl); useVNNI = prevVNNI }()
	type route struct {
		name string
		impl Impl
		vnni bool
	}
	routes := []route{{"generic", ImplGeneric, false}}
	for _, impl := range Available()[1:] {
		routes = append(routes, route{impl.String() + "-float", impl, false})
	}
	if hasVNNI {
		routes = append(routes, route{"avx512-vnni", ImplAVX512, true})
	} else {
		t.Log("no AVX-512 VNNI on this CPU: the VNNI kernels are not exercised")
	}
	for _, r := range routes {
		_ = SetImpl(r.impl)
		useVNNI = r.vnni
		t.Run(r.name, f)
	}
}

// TestMatMulQ8Routes checks each Q8_0 route against the float64 oracle on
// the shapes that reach every VNNI kernel: "sub" groups (4…32 columns, a
// masked gather of 64/GroupSize scales per chunk) and "grp" groups (64 and
// 128, one broadcast scale per group), rows past whole 8-row blocks, a
// column tail of whole groups after the last 64-column chunk (172 is
// stories260K's hidden size), and token counts around the 4×3 block.
func TestMatMulQ8Routes(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	type shape struct{ rows, cols, gs int }
	shapes := []shape{
		{37, 172, 4}, {19, 256, 4}, {21, 200, 8}, {9, 192, 16}, {13, 96, 32},
		{45, 320, 64}, {17, 768, 64}, {11, 384, 128}, {3, 64, 64}, {40, 36, 4},
		{7, 80, 16}, {29, 288, 32}, {10, 32, 32}, {8, 16, 16},
	}
	pool := NewPool(2)
	defer pool.Close()
	q8Routes(t, func(t *testing.T) {
		for si, sh := range shapes {
			m := makeMatrix(t, rng, Q8_0, sh.rows, sh.cols, sh.gs, si%3)
			for _, T := range []int{1, 2, 3, 4, 7, 20} {
				x := make([]float32, T*sh.cols)
				randF32(rng, x)
				ref, mag := refMatMul(m, x, T)
				out := make([]float32, T*sh.rows)
				p := pool
				if T%2 == 1 {
					p = nil
				}
				if err := MatMul(p, out, x, m, T); err != nil {
					t.Fatal(err)
				}
				for k := range ref {
					if d := math.Abs(float64(out[k]) - ref[k]); !(d <= tol(sh.cols, mag[k])) {
						t.Fatalf("%+v T=%d out[%d] = %v, float64 reference %v (|diff| %g)", sh, T, k, out[k], ref[k], d)
					}
				}
				// One token at a time gives the same bits as the batch.
				for tok := 0; tok < T; tok++ {
					one := make([]float32, sh.rows)
					if err := MatMul(pool, one, x[tok*sh.cols:(tok+1)*sh.cols], m, 1); err != nil {
						t.Fatal(err)
					}
					for i := range one {
						if math.Float32bits(one[i]) != math.Float32bits(out[tok*sh.rows+i]) {
							t.Fatalf("%+v token %d row %d: T=1 gives %v, T=%d gives %v", sh, tok, i, one[i], T, out[tok*sh.rows+i])
						}
					}
				}
			}
		}
	})
}

// TestMatMulQ8MatchesRunq: the generic route is runq.c's matmul, value for
// value: the same int32 group sums and the same float32 expression order,
// val += ((float) ival) * w_scale * x_scale. The oracle here is written
// straight from runq.c, on the quantizer's output.
func TestMatMulQ8MatchesRunq(t *testing.T) {
	prev := CurrentImpl()
	defer func() { _ = SetImpl(prev) }()
	SetSIMD(false)
	rng := rand.New(rand.NewPCG(25, 26))
	const rows, cols, gs, T = 29, 96, 32, 3
	m := makeMatrix(t, rng, Q8_0, rows, cols, gs, 0)
	x := make([]float32, T*cols)
	randF32(rng, x)
	out := make([]float32, T*rows)
	if err := MatMul(nil, out, x, m, T); err != nil {
		t.Fatal(err)
	}
	xq := make([]int8, cols)
	xs := make([]float32, cols/gs)
	for tok := 0; tok < T; tok++ {
		quantizeRow(xq, xs, x[tok*cols:(tok+1)*cols], gs)
		for i := 0; i < rows; i++ {
			var val float32
			in := i * cols
			for j := 0; j <= cols-gs; j += gs {
				var ival int32
				for k := 0; k < gs; k++ {
					ival += int32(xq[j+k]) * int32(m.Q[in+j+k])
				}
				val += float32(ival) * m.Scales[(in+j)/gs] * xs[j/gs]
			}
			if got := out[tok*rows+i]; math.Float32bits(got) != math.Float32bits(val) {
				t.Fatalf("token %d row %d: %v, runq.c's loop gives %v", tok, i, got, val)
			}
		}
	}
}

// TestQuantRowAVX512MatchesGo: the assembly quantizer gives the same
// values, scales and VNNI side data as quantizeRow and laneAux, bit for
// bit, on random groups, exact halves, zero groups, NaN, ±Inf and values
// near the float32 limit.
func TestQuantRowAVX512MatchesGo(t *testing.T) {
	if !available[ImplAVX512] {
		t.Skip("no AVX-512 on this CPU: the assembly quantizer is not used here")
	}
	rng := rand.New(rand.NewPCG(27, 28))
	for it := 0; it < 600; it++ {
		gs := []int{16, 32, 64, 128, 4, 8}[it%6]
		cols := gs * (1 + rng.IntN(12))
		if gs < 16 {
			cols = gs * (1 + rng.IntN(50)) // any multiple of the group
		}
		x := make([]float32, cols)
		for i := range x {
			x[i] = float32(rng.NormFloat64() * math.Exp(rng.NormFloat64()*3))
		}
		for g := 0; g < cols/gs; g++ {
			grp := x[g*gs : (g+1)*gs]
			switch rng.IntN(8) {
			case 0: // exact halves of the step
				for i := range grp {
					grp[i] = float32(rng.IntN(255)-127) / 2
				}
				grp[0] = 127
			case 1:
				clear(grp)
			case 2:
				grp[rng.IntN(gs)] = float32(math.NaN())
			case 3:
				grp[rng.IntN(gs)] = float32(math.Inf(1 - 2*rng.IntN(2)))
			case 4:
				grp[rng.IntN(gs)] = math.MaxFloat32
			}
		}
		qs := (cols + 63) &^ 63
		qGo, qAsm := make([]int8, cols), make([]int8, qs) // the assembly writes whole 16-value steps
		sGo, sAsm := make([]float32, cols/gs), make([]float32, cols/gs)
		auxGo, auxAsm := make([]int32, qs/2), make([]int32, qs/2)
		quantizeRow(qGo, sGo, x, gs)
		laneAux(auxGo, qGo, sGo, cols, gs)
		if gs < 16 {
			quantRowSmallAVX512(&x[0], &qAsm[0], &sAsm[0], &auxAsm[0], cols, gs)
		} else {
			quantRowAVX512(&x[0], &qAsm[0], &sAsm[0], &auxAsm[0], cols/gs, gs)
		}
		for j := range qGo {
			if qGo[j] != qAsm[j] {
				t.Fatalf("gs %d: q[%d] asm %d, Go %d (x = %v, scale %v)", gs, j, qAsm[j], qGo[j], x[j], sGo[j/gs])
			}
		}
		for g := range sGo {
			if math.Float32bits(sGo[g]) != math.Float32bits(sAsm[g]) {
				t.Fatalf("gs %d: scale[%d] asm %v, Go %v", gs, g, sAsm[g], sGo[g])
			}
		}
		for i := 0; i < cols/64*32; i++ {
			if auxGo[i] != auxAsm[i] {
				t.Fatalf("gs %d: aux[%d] asm %#x, Go %#x", gs, i, auxAsm[i], auxGo[i])
			}
		}
	}
}
