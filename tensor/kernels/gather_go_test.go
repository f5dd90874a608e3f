package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// DotRows8 and AxpyRows8 against float64 sums, for every D they
// take (multiples of 8) and key counts around their two-at-a-time step,
// with scattered key offsets and weight-0 keys.
func TestDotRows8AxpyRows8(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, D := range []int{8, 16, 24} {
		for _, nk := range []int{1, 2, 3, 8, 33} {
			const stride = 40 // key rows scattered through a larger buffer
			kb := make([]float32, (nk+3)*stride)
			for i := range kb {
				kb[i] = float32(r.NormFloat64())
			}
			krow := make([]int, nk)
			for j, p := range r.Perm(nk + 3)[:nk] {
				krow[j] = p*stride + r.IntN(stride-D+1)
			}
			q := make([]float32, D)
			for i := range q {
				q[i] = float32(r.NormFloat64())
			}
			s := make([]float32, nk)
			mx := DotRows8(s, q, kb, krow)
			wantMax := math.Inf(-1)
			for j, o := range krow {
				var want float64
				for d := range D {
					want += float64(q[d]) * float64(kb[o+d])
				}
				if math.Abs(float64(s[j])-want) > 1e-5*(1+math.Abs(want)) {
					t.Fatalf("D=%d nk=%d: score %d = %v, want %v", D, nk, j, s[j], want)
				}
				wantMax = math.Max(wantMax, float64(s[j]))
			}
			if float64(mx) != wantMax {
				t.Fatalf("D=%d nk=%d: max %v, want %v", D, nk, mx, wantMax)
			}

			p := make([]float32, nk)
			for j := range p {
				if r.IntN(3) > 0 { // a third of the weights are 0
					p[j] = r.Float32()
				}
			}
			acc := make([]float32, D)
			for d := range acc {
				acc[d] = float32(d)
			}
			AxpyRows8(acc, p, kb, krow)
			for d := range D {
				want := float64(d)
				for j, o := range krow {
					want += float64(p[j]) * float64(kb[o+d])
				}
				if math.Abs(float64(acc[d])-want) > 1e-5*(1+math.Abs(want)) {
					t.Fatalf("D=%d nk=%d: acc[%d] = %v, want %v", D, nk, d, acc[d], want)
				}
			}
		}
	}
}

// RowMax is the float maximum that skips NaNs, for every arrangement of
// the values that make integer comparison of float bits tricky.
func TestRowMax(t *testing.T) {
	withImpl(t, testRowMax)
}

func testRowMax(t *testing.T, _ Impl) {
	inf := float32(math.Inf(1))
	nan := float32(math.NaN())
	negNaN := math.Float32frombits(0xffc00000)
	ref := func(s []float32) float32 {
		m := math.Inf(-1)
		for _, x := range s {
			if !math.IsNaN(float64(x)) && float64(x) > m {
				m = float64(x)
			}
		}
		return float32(m)
	}
	cases := [][]float32{
		{},
		{-inf},
		{nan},
		{negNaN},
		{nan, negNaN, nan},
		{-3, -1, -2},
		{-1e-30, -1e30, -5},
		{1, nan, 0.5},
		{negNaN, -7, -8},
		{-inf, -inf, -1e-45},
		{inf, 3, nan},
		{1e-45, -1e-45, 0},
		{-2, -1, -3, -0.5, -9, -4, -6, -8, -0.25},
		{5, 4, 3, 2, 1, 9, 8, 7, 6, 10, nan},
	}
	r := rand.New(rand.NewPCG(13, 14))
	for n := range 80 {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(20)-10)))
		}
		cases = append(cases, s)
		// The same values with NaNs of both signs, −Inf and the maximum
		// in every lane position (the SIMD kernel's two vectors, its
		// single vector and its masked tail).
		if n > 0 {
			for _, special := range []float32{nan, negNaN, -inf} {
				v := append([]float32(nil), s...)
				v[r.IntN(n)] = special
				cases = append(cases, v)
			}
			v := append([]float32(nil), s...)
			v[n-1] = 1e30
			cases = append(cases, v)
		}
	}
	for _, n := range []int{16, 20, 33, 48} { // only NaNs, or only −Inf, in SIMD lengths
		allNaN, allNegInf := make([]float32, n), make([]float32, n)
		for i := range allNaN {
			allNaN[i], allNegInf[i] = nan, -inf
		}
		allNaN[n/2] = negNaN
		cases = append(cases, allNaN, allNegInf)
	}
	for _, s := range cases {
		got, want := RowMax(s), ref(s)
		if got != want && !(got == 0 && want == 0) {
			t.Fatalf("RowMax(%v) = %v, want %v", s, got, want)
		}
	}
	// ±0: either sign is a correct maximum.
	if got := RowMax([]float32{float32(math.Copysign(0, -1)), -1}); got != 0 {
		t.Fatalf("RowMax(-0, -1) = %v", got)
	}
}

// DotRowsTile and AxpyRowsTile against float64 sums, for query-row counts
// around their two-at-a-time step, key counts around their four-at-a-time
// step, head widths that are and are not multiples of 4, scattered key
// offsets, a score stride wider than the key count, and weight-0 groups
// (which AxpyRowsTile skips). Neither may write past its rows.
func TestDotRowsTileAxpyRowsTile(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, D := range []int{1, 3, 8, 9, 16, 24} {
		for _, nq := range []int{1, 2, 3, 5} {
			for _, nk := range []int{0, 1, 3, 4, 7, 33} {
				base, rows := gatherCase(rng, D, nk)
				q := make([]float32, nq*D)
				randF32(rng, q)
				const sentinel = -777
				ss := nk + 3
				s := make([]float32, nq*ss)
				for i := range s {
					s[i] = sentinel
				}
				DotRowsTile(s, ss, q, D, base, rows)
				for r := range nq {
					for j := range ss {
						got := s[r*ss+j]
						if j >= nk {
							if got != sentinel {
								t.Fatalf("D=%d nq=%d nk=%d: score (%d, %d) written past the keys", D, nq, nk, r, j)
							}
							continue
						}
						var want, mag float64
						for d := range D {
							p := float64(q[r*D+d]) * float64(base[rows[j]+d])
							want += p
							mag += math.Abs(p)
						}
						if math.Abs(float64(got)-want) > tol(D, mag) {
							t.Fatalf("D=%d nq=%d nk=%d: score (%d, %d) = %v, float64 %v", D, nq, nk, r, j, got, want)
						}
					}
				}

				p := make([]float32, nq*ss)
				for i := range p {
					if rng.IntN(3) > 0 { // a third of the weights are 0, some groups all 0
						p[i] = rng.Float32()
					}
				}
				acc := make([]float32, nq*D+1)
				randF32(rng, acc)
				acc[nq*D] = sentinel
				want := make([]float64, nq*D)
				for i := range want {
					want[i] = float64(acc[i])
				}
				AxpyRowsTile(acc[:nq*D], D, p, ss, base, rows)
				if acc[nq*D] != sentinel {
					t.Fatalf("D=%d nq=%d nk=%d: AxpyRowsTile wrote past its rows", D, nq, nk)
				}
				for r := range nq {
					for d := range D {
						w, mag := want[r*D+d], math.Abs(want[r*D+d])
						for j, o := range rows {
							x := float64(p[r*ss+j]) * float64(base[o+d])
							w += x
							mag += math.Abs(x)
						}
						if math.Abs(float64(acc[r*D+d])-w) > tol(nk+1, mag) {
							t.Fatalf("D=%d nq=%d nk=%d: acc (%d, %d) = %v, float64 %v", D, nq, nk, r, d, acc[r*D+d], w)
						}
					}
				}
			}
		}
	}
}
