package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// gatherCase builds a base buffer and n row offsets of width D, spread
// like paged-cache rows (a stride, some jumps, some repeats).
func gatherCase(rng *rand.Rand, D, n int) (base []float32, rows []int) {
	base = make([]float32, 4096+3*D)
	randF32(rng, base)
	rows = make([]int, n)
	for j := range rows {
		rows[j] = rng.IntN(len(base) - D + 1)
	}
	return base, rows
}

// TestDotRowsAxpyRows checks both kernels, per implementation, against
// float64 sums, and AxpyRows against a sequence of Axpy calls bit for bit.
func TestDotRowsAxpyRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	withImpl(t, func(t *testing.T, impl Impl) {
		for _, D := range []int{1, 8, 16, 24, 48, 64, 100, 128, 256, 272} {
			for _, n := range []int{0, 1, 5, 33} {
				base, rows := gatherCase(rng, D, n)
				q := make([]float32, D)
				randF32(rng, q)
				out := make([]float32, n+1)
				out[n] = 777
				if err := DotRows(out, q, base, rows); err != nil {
					t.Fatal(err)
				}
				if out[n] != 777 {
					t.Fatalf("D=%d n=%d: DotRows wrote past its rows", D, n)
				}
				for j, o := range rows {
					var want, mag float64
					for d := 0; d < D; d++ {
						p := float64(q[d]) * float64(base[o+d])
						want += p
						mag += math.Abs(p)
					}
					if diff := math.Abs(float64(out[j]) - want); diff > tol(D, mag) {
						t.Fatalf("D=%d key %d: %v, float64 %v", D, j, out[j], want)
					}
				}

				p := make([]float32, n)
				randF32(rng, p)
				acc := make([]float32, D)
				randF32(rng, acc)
				seq := append([]float32(nil), acc...)
				want := make([]float64, D)
				for d := range want {
					want[d] = float64(acc[d])
				}
				if err := AxpyRows(acc, p, base, rows); err != nil {
					t.Fatal(err)
				}
				for j, o := range rows {
					Axpy(p[j], base[o:o+D], seq)
					for d := range want {
						want[d] += float64(p[j]) * float64(base[o+d])
					}
				}
				// Axpy's scalar tail (D mod 16 on AVX-512, D mod 8 on
				// AVX2) multiplies and adds in two roundings where the
				// row kernels fuse them, so only whole-vector widths must
				// match bit for bit.
				exact := impl == ImplGeneric || D%vecWidth(impl) == 0
				for d := range acc {
					if exact && math.Float32bits(acc[d]) != math.Float32bits(seq[d]) {
						t.Fatalf("D=%d n=%d: AxpyRows acc[%d] = %v, Axpy calls give %v", D, n, d, acc[d], seq[d])
					}
					if diff := math.Abs(float64(acc[d]) - want[d]); diff > 1e-4*(1+math.Abs(want[d]))*float64(n+1) {
						t.Fatalf("D=%d n=%d: acc[%d] = %v, float64 %v", D, n, d, acc[d], want[d])
					}
				}
			}
		}
	})
}

func TestGatherErrors(t *testing.T) {
	base := make([]float32, 64)
	q := make([]float32, 16)
	out := make([]float32, 4)
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"row past the end", DotRows(out, q, base, []int{0, 49}), "offset 49"},
		{"negative row", DotRows(out, q, base, []int{-1}), "offset -1"},
		{"short out", DotRows(out[:1], q, base, []int{0, 16}), "room for 1"},
		{"axpy row past the end", AxpyRows(q, out, base, []int{60}), "offset 60"},
		{"short p", AxpyRows(q, out[:1], base, []int{0, 1}), "room for 1"},
	} {
		if c.err == nil || !contains(c.err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to mention %q", c.name, c.err, c.want)
		}
	}
}

func ExampleDotRows() {
	// Two keys of width 2 at offsets 4 and 0 of a flat cache.
	cache := []float32{1, 2, 0, 0, 3, 4}
	scores := make([]float32, 2)
	_ = DotRows(scores, []float32{1, 1}, cache, []int{4, 0})
	fmt.Println(scores)
	// Output: [7 3]
}

func BenchmarkDotRows(b *testing.B) {
	rng := rand.New(rand.NewPCG(43, 44))
	for _, D := range []int{64, 128} {
		base, rows := gatherCase(rng, D, 64)
		q := make([]float32, D)
		randF32(rng, q)
		out := make([]float32, 64)
		b.Run(fmt.Sprintf("D%d/rows", D), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				_ = DotRows(out, q, base, rows)
			}
		})
		b.Run(fmt.Sprintf("D%d/dot-per-row", D), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				for j, o := range rows {
					out[j] = Dot(q, base[o:o+D])
				}
			}
		})
		p := make([]float32, 64)
		acc := make([]float32, D)
		b.Run(fmt.Sprintf("D%d/axpyrows", D), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				_ = AxpyRows(acc, p, base, rows)
			}
		})
		b.Run(fmt.Sprintf("D%d/axpy-per-row", D), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				for j, o := range rows {
					Axpy(p[j], base[o:o+D], acc)
				}
			}
		})
	}
}

// TestRowsNMatchOneRowCalls: DotRowsN and AxpyRowsN give every query row
// (accumulator) the bits DotRows (AxpyRows) gives it alone, write nothing
// between the rows' strides, and refuse short buffers and strides.
func TestRowsNMatchOneRowCalls(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 46))
	withImpl(t, func(t *testing.T, impl Impl) {
		for _, D := range []int{8, 16, 24, 64} {
			for _, nq := range []int{1, 2, 3, 4, 5, 6, 9, 12} {
				nk := 1 + rng.IntN(40)
				if nq > 3 {
					nk = 1 + rng.IntN(300) // several groups of 16 and staging chunks
				}
				base, rows := gatherCase(rng, D, nk)
				ld := nk + 3
				q := make([]float32, nq*D)
				randF32(rng, q)
				got := make([]float32, nq*ld)
				for i := range got {
					got[i] = -7
				}
				if err := DotRowsN(got, ld, q, D, nq, base, rows); err != nil {
					t.Fatal(err)
				}
				acc := make([]float32, nq*D)
				randF32(rng, acc)
				want := slices.Clone(acc)
				if err := AxpyRowsN(acc, D, nq, got, ld, base, rows); err != nil {
					t.Fatal(err)
				}
				for i := 0; i < nq; i++ {
					one := make([]float32, nk)
					if err := DotRows(one, q[i*D:(i+1)*D], base, rows); err != nil {
						t.Fatal(err)
					}
					for j, v := range one {
						if math.Float32bits(got[i*ld+j]) != math.Float32bits(v) {
							t.Fatalf("%v D=%d row %d key %d: DotRowsN %v, DotRows %v", impl, D, i, j, got[i*ld+j], v)
						}
					}
					for j := nk; j < ld; j++ {
						if got[i*ld+j] != -7 {
							t.Fatalf("%v D=%d row %d: DotRowsN wrote past the row's keys", impl, D, i)
						}
					}
					w := want[i*D : (i+1)*D]
					if err := AxpyRows(w, got[i*ld:i*ld+nk], base, rows); err != nil {
						t.Fatal(err)
					}
					for d := range w {
						if math.Float32bits(acc[i*D+d]) != math.Float32bits(w[d]) {
							t.Fatalf("%v D=%d acc %d[%d]: AxpyRowsN %v, AxpyRows %v", impl, D, i, d, acc[i*D+d], w[d])
						}
					}
				}
				if DotRowsN(got[:len(got)-ld+nk-1], ld, q, D, nq, base, rows) == nil ||
					DotRowsN(got, nk-1, q, D, nq, base, rows) == nil ||
					AxpyRowsN(acc[:nq*D-1], D, nq, got, ld, base, rows) == nil {
					t.Fatalf("D=%d n=%d: a short buffer or stride was accepted", D, nq)
				}
			}
		}
	})
}

// DotRows is DotRowsN for one query row (the tests' one-row form): it sets out[j] = Σ_d q[d]·base[rows[j]+d] (d < len(q)) for every
// j < len(rows): the scores of one query row against len(rows) key rows at
// the given element offsets of base. It returns an error, writing nothing,
// if out is shorter than rows or a row does not fit in base.
func DotRows(out, q, base []float32, rows []int) error {
	return dotRows("DotRows", out, len(rows), q, len(q), 1, base, rows)
}

// AxpyRows is AxpyRowsN for one accumulator (the tests' one-row form): it adds Σ_j p[j]·base[rows[j] : rows[j]+len(acc)] to acc, key by
// key in order: each element gets one fused multiply-add per key, as a
// sequence of Axpy calls gives it when len(acc) is a whole number of
// vectors. It returns an error, touching nothing, if
// p is shorter than rows or a row does not fit in base.
func AxpyRows(acc, p, base []float32, rows []int) error {
	return axpyRows("AxpyRows", acc, len(acc), 1, p, len(rows), base, rows)
}
