package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestMatMulBatchInvariant: a row's result depends only on its own
// inputs, never on how many rows share the call. For every weight format
// (Stride's F32, BF16, F16 and Q8_0, and the ggml block types Q8_0,
// Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K and Q6_K) and every Impl, MatMul over T random rows (random T in
// 1…32, several draws, on a pool of two workers so the rows are cut into
// tiles and thread ranges) gives each row the bits of the T = 1 call on
// that row alone. This is what makes a speculative verify step's logits
// the decode steps' (docs/speculative.md).
func TestMatMulBatchInvariant(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 1))
	pool := NewPool(2)
	defer pool.Close()
	type weights struct {
		name string
		m    *Matrix
	}
	const rows, cols = 37, 512 // rows not a multiple of any tile's; cols a multiple of every block's
	var ws []weights
	for _, f := range []Format{F32, BF16, F16, Q8_0} {
		ws = append(ws, weights{f.String(), makeMatrix(t, rng, f, rows, cols, 32, 0)})
	}
	for _, typ := range ggmlTypes {
		ws = append(ws, weights{"ggml " + typ.String(), newRandGGML(t, rng, typ, rows, cols)})
	}
	draws := []int{1, 2, 3, 32}
	for range 4 {
		draws = append(draws, 1+rng.IntN(32))
	}
	withImpl(t, func(t *testing.T, impl Impl) {
		for _, w := range ws {
			for _, T := range draws {
				x := make([]float32, T*cols)
				randF32(rng, x)
				batch := make([]float32, T*rows)
				if err := MatMul(pool, batch, x, w.m, T); err != nil {
					t.Fatal(err)
				}
				one := make([]float32, rows)
				for tok := range T {
					if err := MatMul(nil, one, x[tok*cols:(tok+1)*cols], w.m, 1); err != nil {
						t.Fatal(err)
					}
					for i, v := range one {
						if got := batch[tok*rows+i]; math.Float32bits(got) != math.Float32bits(v) {
							t.Fatalf("%s T=%d: row %d output %d is %v, alone %v", w.name, T, tok, i, got, v)
						}
					}
				}
			}
		}
	})
}
