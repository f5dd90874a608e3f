package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
)

type mmCase struct {
	f                 Format
	rows, cols, group int
	T                 int
}

func mmCases(short bool) []mmCase {
	var cs []mmCase
	rowsList := []int{1, 2, 3, 5, 7, 8, 9, 12, 13, 17, 33}
	colsList := []int{1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 47, 64, 100, 288}
	Ts := []int{1, 2, 3, 4, 5, 9}
	if short {
		rowsList = []int{1, 3, 8, 9, 13}
		colsList = []int{1, 7, 16, 17, 33, 100}
		Ts = []int{1, 3, 5}
	}
	for _, f := range []Format{F32, BF16, F16} {
		for _, r := range rowsList {
			for _, c := range colsList {
				for _, T := range Ts {
					cs = append(cs, mmCase{f, r, c, 0, T})
				}
			}
		}
	}
	// Q8_0: group sizes that run AVX-512 (16, 32, 64), fall back to AVX2 (8,
	// 24) or to generic (3, 12).
	for _, g := range []int{3, 8, 12, 16, 24, 32, 64} {
		for _, r := range rowsList {
			for _, mult := range []int{1, 2, 5} {
				for _, T := range Ts {
					cs = append(cs, mmCase{Q8_0, r, g * mult, g, T})
				}
			}
		}
	}
	return cs
}

// TestMatMulMatchesFloat64 checks every implementation against the float64
// oracle on ragged shapes (cols not a multiple of 8/16, rows not a multiple
// of the row block, T not a multiple of the token block) with weights, x and
// out all starting at odd element offsets.
func TestMatMulMatchesFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := mmCases(testing.Short())
	pool := NewPool(2)
	defer pool.Close()
	withImpl(t, func(t *testing.T, impl Impl) {
		for ci, c := range cases {
			off := 1 + ci%3
			m := makeMatrix(t, rng, c.f, c.rows, c.cols, c.group, off)
			x := offsetF32(c.T*c.cols, off+1)
			randF32(rng, x)
			ref, mag := refMatMul(m, x, c.T)
			out := offsetF32(c.T*c.rows+2, off)
			out[len(out)-1], out[len(out)-2] = 12345, 12345 // canaries past T*Rows
			p := pool
			if ci%2 == 0 {
				p = nil
			}
			if err := MatMul(p, out, x, m, c.T); err != nil {
				t.Fatalf("%+v: %v", c, err)
			}
			for k, want := range ref {
				if d := math.Abs(float64(out[k]) - want); !(d <= tol(c.cols, mag[k])) {
					t.Fatalf("%+v out[%d] = %v, float64 reference %v (|diff| %g > tol %g)", c, k, out[k], want, d, tol(c.cols, mag[k]))
				}
			}
			if out[len(out)-1] != 12345 || out[len(out)-2] != 12345 {
				t.Fatalf("%+v wrote past T*Rows", c)
			}
		}
	})
}

// TestMatMulSIMDMatchesGeneric compares each SIMD implementation with the
// portable kernel on the same inputs (both within rounding of each other).
func TestMatMulSIMDMatchesGeneric(t *testing.T) {
	if len(Available()) == 1 {
		t.Skip("no SIMD implementation on this CPU")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	prev := CurrentImpl()
	defer func() { _ = SetImpl(prev) }()
	for _, c := range mmCases(true) {
		m := makeMatrix(t, rng, c.f, c.rows, c.cols, c.group, 1)
		x := make([]float32, c.T*c.cols)
		randF32(rng, x)
		_, mag := refMatMul(m, x, c.T)
		SetSIMD(false)
		gen := make([]float32, c.T*c.rows)
		if err := MatMul(nil, gen, x, m, c.T); err != nil {
			t.Fatal(err)
		}
		for _, impl := range Available()[1:] {
			_ = SetImpl(impl)
			got := make([]float32, c.T*c.rows)
			if err := MatMul(nil, got, x, m, c.T); err != nil {
				t.Fatal(err)
			}
			for k := range got {
				if d := math.Abs(float64(got[k] - gen[k])); !(d <= 2*tol(c.cols, mag[k])) {
					t.Fatalf("%v %+v out[%d]: simd %v generic %v", impl, c, k, got[k], gen[k])
				}
			}
		}
	}
}

// TestMatMulDeterministic: the same output bits for 1, 2 and 3 threads, for
// repeated calls, and for a batch of T tokens versus T single-token calls
// (every kernel shape of an Impl sums each output in the same order).
func TestMatMulDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	pools := []*Pool{nil, NewPool(1), NewPool(2), NewPool(3)}
	defer func() {
		for _, p := range pools {
			p.Close()
		}
	}()
	shapes := []mmCase{{F32, 301, 203, 0, 7}, {BF16, 77, 288, 0, 9}, {F16, 130, 65, 0, 4}, {Q8_0, 99, 256, 32, 6}, {Q8_0, 45, 96, 24, 5}}
	withImpl(t, func(t *testing.T, impl Impl) {
		for _, c := range shapes {
			m := makeMatrix(t, rng, c.f, c.rows, c.cols, c.group, 0)
			x := make([]float32, c.T*c.cols)
			randF32(rng, x)
			want := make([]float32, c.T*c.rows)
			if err := MatMul(nil, want, x, m, c.T); err != nil {
				t.Fatal(err)
			}
			for pi, p := range pools {
				for rep := 0; rep < 3; rep++ {
					got := make([]float32, c.T*c.rows)
					if err := MatMul(p, got, x, m, c.T); err != nil {
						t.Fatal(err)
					}
					for k := range got {
						if math.Float32bits(got[k]) != math.Float32bits(want[k]) {
							t.Fatalf("%+v pool %d rep %d: out[%d] %v != serial %v", c, pi, rep, k, got[k], want[k])
						}
					}
				}
			}
			for tok := 0; tok < c.T; tok++ {
				one := make([]float32, c.rows)
				if err := MatMul(pools[2], one, x[tok*c.cols:(tok+1)*c.cols], m, 1); err != nil {
					t.Fatal(err)
				}
				for i := range one {
					if math.Float32bits(one[i]) != math.Float32bits(want[tok*c.rows+i]) {
						t.Fatalf("%+v token %d row %d: T=1 gives %v, T=%d gives %v", c, tok, i, one[i], c.T, want[tok*c.rows+i])
					}
				}
			}
		}
	})
}

// TestMatMulBigShapes exercises the long-row paths (many chunks, several
// Q8_0 groups per row) and a multi-threaded batched call.
func TestMatMulBigShapes(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	pool := NewPool(2)
	defer pool.Close()
	withImpl(t, func(t *testing.T, impl Impl) {
		for _, f := range []Format{F32, BF16, F16, Q8_0} {
			rows, cols, T := 150, 771, 6
			g := 0
			if f == Q8_0 {
				cols, g = 768, 64
			}
			m := makeMatrix(t, rng, f, rows, cols, g, 1)
			x := make([]float32, T*cols)
			randF32(rng, x)
			ref, mag := refMatMul(m, x, T)
			out := make([]float32, T*rows)
			if err := MatMul(pool, out, x, m, T); err != nil {
				t.Fatal(err)
			}
			for k := range ref {
				if d := math.Abs(float64(out[k]) - ref[k]); !(d <= tol(cols, mag[k])) {
					t.Fatalf("%v out[%d] = %v want %v", f, k, out[k], ref[k])
				}
			}
		}
	})
}

func TestMatMulErrors(t *testing.T) {
	w, _ := NewF32(2, 3, []float32{1, 2, 3, 4, 5, 6})
	buf := make([]float32, 20)
	cases := []struct {
		name     string
		out, x   []float32
		w        *Matrix
		T        int
		contains string
	}{
		{"nil matrix", buf[:2], buf[2:5], nil, 1, "nil matrix"},
		{"negative T", buf[:2], buf[2:5], w, -1, "negative"},
		{"short x", buf[:4], buf[4:9], w, 2, "x has 5"},
		{"short out", buf[:3], buf[4:10], w, 2, "out has 3"},
		{"overlap", buf[:2], buf[1:4], w, 1, "overlaps x"},
		{"overlap weights", w.F32[:2], buf[:3], w, 1, "overlaps the weights"},
		{"bad shape", buf[:2], buf[2:5], &Matrix{Format: F32, Rows: 0, Cols: 3, F32: buf}, 1, "must be positive"},
		{"short data", buf[:2], buf[2:5], &Matrix{Format: F32, Rows: 2, Cols: 3, F32: buf[:5]}, 1, "has 5 values"},
		{"bad format", buf[:2], buf[2:5], &Matrix{Format: 99, Rows: 2, Cols: 3}, 1, "unknown matrix format"},
		{"bad group", buf[:2], buf[2:5], &Matrix{Format: Q8_0, Rows: 2, Cols: 3, Q: make([]int8, 6), Scales: make([]float32, 6), GroupSize: 2}, 1, "divide cols"},
		{"few scales", buf[:2], buf[2:5], &Matrix{Format: Q8_0, Rows: 2, Cols: 3, Q: make([]int8, 6), Scales: make([]float32, 1), GroupSize: 3}, 1, "needs 2 scales"},
		{"huge T", buf[:2], buf[2:5], w, math.MaxInt / 2, "too large"},
	}
	for _, c := range cases {
		err := MatMul(nil, c.out, c.x, c.w, c.T)
		if err == nil || !contains(err.Error(), c.contains) {
			t.Errorf("%s: err = %v, want it to mention %q", c.name, err, c.contains)
		}
	}
	if err := MatMul(nil, nil, nil, w, 0); err != nil {
		t.Errorf("T=0 should be a no-op, got %v", err)
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && (s[:len(sub)] == sub || contains(s[1:], sub)))
}

// TestMatMulZeroAllocs: neither the serial nor the pooled path allocates,
// for Stride's formats and for every ggml type (decode and the prefill
// tiles).
func TestMatMulZeroAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	pool := NewPool(2)
	defer pool.Close()
	withImpl(t, func(t *testing.T, impl Impl) {
		n := 256
		if testing.Short() {
			n = 64
		}
		var ms []*Matrix
		for _, f := range []Format{F32, BF16, F16, Q8_0} {
			ms = append(ms, makeMatrix(t, rng, f, n, n, 32, 0))
		}
		for _, typ := range append(ggmlTypes, TypeF16, TypeBF16) {
			ms = append(ms, newRandGGML(t, rng, typ, n, 256))
		}
		for _, m := range ms {
			for _, T := range []int{1, 5} {
				x := make([]float32, T*m.Cols)
				randF32(rng, x)
				out := make([]float32, T*m.Rows)
				for _, p := range []*Pool{nil, pool} {
					allocs := testing.AllocsPerRun(20, func() {
						if err := MatMul(p, out, x, m, T); err != nil {
							panic(err)
						}
					})
					if allocs != 0 {
						t.Errorf("%v (ggml %v) T=%d pool=%v: %v allocs per MatMul", m.Format, m.GGML, T, p != nil, allocs)
					}
				}
			}
		}
	})
}

func ExampleMatMul() {
	// w is (out=2, in=3); x holds T=2 tokens of 3 values.
	w, _ := NewF32(2, 3, []float32{
		1, 2, 3,
		4, 5, 6,
	})
	x := []float32{
		1, 0, 0,
		1, 1, 1,
	}
	out := make([]float32, 2*2)
	if err := MatMul(nil, out, x, w, 2); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out[:2], out[2:])
	// Output: [1 4] [6 15]
}

// TestMatMulConcurrentCallers: goroutines sharing one Pool get the same
// bits as a serial call (a caller that finds the pool busy runs alone).
func TestMatMulConcurrentCallers(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	pool := NewPool(2)
	defer pool.Close()
	m := makeMatrix(t, rng, BF16, 200, 96, 0, 0)
	const T = 3
	x := make([]float32, T*m.Cols)
	randF32(rng, x)
	want := make([]float32, T*m.Rows)
	if err := MatMul(nil, want, x, m, T); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := make([]float32, T*m.Rows)
			for i := 0; i < 30; i++ {
				if err := MatMul(pool, out, x, m, T); err != nil {
					t.Error(err)
					return
				}
				for k := range out {
					if math.Float32bits(out[k]) != math.Float32bits(want[k]) {
						t.Errorf("out[%d] = %v, serial %v", k, out[k], want[k])
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

func ExampleMatrix_Bytes() {
	data := make([]float32, 768*768) // a stories110M attention projection
	f32, _ := NewF32(768, 768, data)
	bf16, _ := ToBF16(768, 768, data)
	q8, _ := QuantizeQ8_0(768, 768, data, 32)
	fmt.Println(f32.Bytes(), bf16.Bytes(), q8.Bytes())
	// Output: 2359296 1179648 663552
}
