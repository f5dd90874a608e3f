package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestDotAxpyScale(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	withImpl(t, func(t *testing.T, impl Impl) {
		for _, n := range []int{0, 1, 3, 7, 8, 15, 16, 17, 31, 63, 64, 65, 100, 257} {
			for _, off := range []int{0, 1, 3} {
				a := offsetF32(n, off)
				b := offsetF32(n+5, off+1) // longer: only the common prefix counts
				randF32(rng, a)
				randF32(rng, b)
				var want, mag float64
				for i := 0; i < n; i++ {
					want += float64(a[i]) * float64(b[i])
					mag += math.Abs(float64(a[i]) * float64(b[i]))
				}
				if got := Dot(a, b); math.Abs(float64(got)-want) > tol(n, mag) {
					t.Fatalf("n=%d Dot = %v, want %v", n, got, want)
				}
				if got := Dot(b, a); math.Abs(float64(got)-want) > tol(n, mag) {
					t.Fatalf("n=%d Dot(b, a) = %v, want %v", n, got, want)
				}

				y := append([]float32(nil), b...)
				const alpha = float32(-0.75)
				Axpy(alpha, a, y)
				for i := range y {
					if i >= n {
						if y[i] != b[i] {
							t.Fatalf("n=%d Axpy touched y[%d] past len(x)", n, i)
						}
						continue
					}
					p := float64(alpha) * float64(a[i])
					w := float64(b[i]) + p
					// One multiply and one add (or one FMA): at most 2 roundings.
					if d := math.Abs(float64(y[i]) - w); d > 0x1p-23*(math.Abs(float64(b[i]))+math.Abs(p)) {
						t.Fatalf("n=%d Axpy y[%d] = %v, want %v", n, i, y[i], w)
					}
				}

				s := append([]float32(nil), a...)
				Scale(3, s)
				for i := range s {
					if s[i] != 3*a[i] { // one rounding, the same in every impl
						t.Fatalf("n=%d Scale s[%d] = %v, want %v", n, i, s[i], 3*a[i])
					}
				}

				if got, w := sum(impl, b), sumRef(b); math.Abs(float64(got)-w.v) > tol(len(b), w.mag) {
					t.Fatalf("n=%d sum = %v, want %v", n, got, w.v)
				}
			}
		}
	})
}

type sumVal struct{ v, mag float64 }

func sumRef(a []float32) sumVal {
	var s sumVal
	for _, v := range a {
		s.v += float64(v)
		s.mag += math.Abs(float64(v))
	}
	return s
}

func TestReadBandwidth(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	for _, pool := range []*Pool{nil, p} {
		bw := NewBandwidthProbe(1<<20).Measure(pool, 5)
		if !(bw > 0) || math.IsInf(bw, 0) {
			t.Fatalf("bandwidth %v GB/s", bw)
		}
	}
}

// A BandwidthProbe measures the same kind of figure repeatedly from one
// buffer: positive and finite every time.
func TestBandwidthProbe(t *testing.T) {
	pr := NewBandwidthProbe(1 << 20)
	for i := 0; i < 3; i++ {
		if bw := pr.Measure(nil, 2); !(bw > 0) || math.IsInf(bw, 0) {
			t.Fatalf("measure %d: %v GB/s", i, bw)
		}
	}
}

// Scale computes x[i] *= a for every i with the current Impl's scaleSIMD
// (no program scales a vector; the kernel stays for its test).
func Scale(a float32, x []float32) {
	impl := CurrentImpl()
	m := 0
	if impl != ImplGeneric {
		m = len(x) &^ (vecWidth(impl) - 1)
		if m > 0 {
			scaleSIMD(impl, a, &x[0], m)
		}
	}
	for i := m; i < len(x); i++ {
		x[i] *= a
	}
}
