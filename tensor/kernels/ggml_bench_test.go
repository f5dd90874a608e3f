package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// ggml benchmarks. Per type, per byte:
//
//	go test -run x -bench 'GGMLMatVec' -benchtime 200x ./tensor/kernels
//
// and the Q4_K_M-vs-Q8_0 decode comparison on the stories110M shape:
//
//	go test -run x -bench 'GGMLDecode110M' -benchtime 20x ./tensor/kernels

// benchGGML builds a rows×cols matrix of typ from random blocks; q8_0 is
// Stride's own runq-style Q8_0 (float32 scales), for comparison.
func benchGGML(b *testing.B, typ string, rows, cols int) *Matrix {
	b.Helper()
	rng := rand.New(rand.NewPCG(uint64(rows), uint64(cols)))
	switch typ {
	case "q8_0":
		return benchMatrix(b, Q8_0, rows, cols)
	case "F16":
		raw := make([]byte, 2*rows*cols)
		for i := 0; i < rows*cols; i++ {
			h := F16FromFloat32(float32(rng.NormFloat64()) * 0.02)
			raw[2*i], raw[2*i+1] = byte(h), byte(h>>8)
		}
		m, err := NewGGMLMatrix(TypeF16, rows, cols, raw)
		if err != nil {
			b.Fatal(err)
		}
		return m
	}
	t, err := ParseGGMLType(typ)
	if err != nil {
		b.Fatal(err)
	}
	return newRandGGML(b, rng, t, rows, cols)
}

// BenchmarkGGMLMatVec is the decode matvec (T = 1) of each ggml type next
// to Stride's q8_0, per impl and thread count; GB/s is Matrix.Bytes (the
// file's bytes) per call.
func BenchmarkGGMLMatVec(b *testing.B) {
	pools := map[int]*Pool{1: nil, 2: NewPool(2)}
	defer pools[2].Close()
	shapes := []benchShape{{"768x768", 768, 768}, {"2048x768", 2048, 768}, {"4096x4096", 4096, 4096}}
	for _, sh := range shapes {
		if testing.Short() && sh.rows*sh.cols > 1<<22 {
			continue
		}
		b.Run(sh.name, func(b *testing.B) {
			for _, typ := range []string{"q8_0", "Q8_0", "Q4_0", "Q4_K", "Q6_K", "F16"} {
				m := benchGGML(b, typ, sh.rows, sh.cols)
				b.Run(typ, func(b *testing.B) {
					benchImpls(b, F32, func(b *testing.B) {
						for _, th := range []int{1, 2} {
							b.Run(fmt.Sprintf("t%d", th), func(b *testing.B) { runMatMul(b, pools[th], m, 1) })
						}
					})
				})
			}
		})
	}
}

// BenchmarkGGMLPrefill is T = 64 on the stories110M w1 shape.
func BenchmarkGGMLPrefill(b *testing.B) {
	pool := NewPool(2)
	defer pool.Close()
	for _, typ := range []string{"q8_0", "Q8_0", "Q4_0", "Q4_K", "Q6_K"} {
		m := benchGGML(b, typ, 2048, 768)
		b.Run(typ, func(b *testing.B) {
			benchImpls(b, F32, func(b *testing.B) { runMatMul(b, pool, m, 64) })
		})
	}
}

// decode110M is one decode token's matmuls of the stories110M shape (12
// layers, dim 768, hidden 2048, vocab 32000) in a weight mix: "q8_0" all
// Stride's runq-style Q8_0 (the baseline), "Q8_0" all ggml Q8_0, as
// llama-quantize Q8_0 writes it, or "Q4_K_M" as llama-quantize
// Q4_K_M does: Q4_K, with Q6_K for the classifier and for attn_v and
// ffn_down of the layers use_more_bits picks (i < n/8, i ≥ 7n/8, or
// (i − n/8) % 3 == 2: layers 0, 3, 6, 9, 10, 11).
func decode110M(b *testing.B, mix string) []*Matrix {
	const layers, dim, hidden, vocab = 12, 768, 2048, 32000
	typ := func(more bool) string {
		switch {
		case mix == "Q8_0" || mix == "q8_0":
			return mix
		case more:
			return "Q6_K"
		}
		return "Q4_K"
	}
	var ms []*Matrix
	for l := 0; l < layers; l++ {
		more := l < layers/8 || l >= 7*layers/8 || (l-layers/8)%3 == 2
		ms = append(ms,
			benchGGML(b, typ(false), dim, dim), // wq
			benchGGML(b, typ(false), dim, dim), // wk
			benchGGML(b, typ(more), dim, dim),  // wv
			benchGGML(b, typ(false), dim, dim), // wo
			benchGGML(b, typ(false), hidden, dim),
			benchGGML(b, typ(false), hidden, dim),
			benchGGML(b, typ(more), dim, hidden), // w2 (ffn_down)
		)
	}
	return append(ms, benchGGML(b, typ(true), vocab, dim))
}

// BenchmarkGGMLDecode110M runs one decode token's matmuls (T = 1) of the
// stories110M shape on 1 and 2 threads in Stride's q8_0, ggml Q8_0 and
// the Q4_K_M mix. MB/token
// is the weight bytes streamed; Q4_K_M streams 0.55× of Q8_0's bytes, so at
// the memory wall it decodes faster although each byte costs more work.
func BenchmarkGGMLDecode110M(b *testing.B) {
	pools := map[int]*Pool{1: nil, 2: NewPool(2)}
	defer pools[2].Close()
	for _, mix := range []string{"q8_0", "Q8_0", "Q4_K_M"} {
		ms := decode110M(b, mix)
		var bytes int64
		for _, m := range ms {
			bytes += m.Bytes()
		}
		x := make([]float32, 2048)
		out := make([]float32, 32000)
		for i := range x {
			x[i] = float32(i%7) - 3
		}
		b.Run(mix, func(b *testing.B) {
			benchImpls(b, F32, func(b *testing.B) {
				for _, th := range []int{1, 2} {
					b.Run(fmt.Sprintf("t%d", th), func(b *testing.B) {
						b.ReportAllocs()
						cpu0 := processCPU()
						for i := 0; i < b.N; i++ {
							for _, m := range ms {
								if err := MatMul(pools[th], out, x[:m.Cols], m, 1); err != nil {
									b.Fatal(err)
								}
							}
						}
						s := b.Elapsed().Seconds() / float64(b.N)
						// CPU ms per token (all threads): with t1 on a shared
						// host this is the steadier number.
						b.ReportMetric((processCPU()-cpu0)*1e3/float64(b.N), "cpu-ms/token")
						b.ReportMetric(1/s, "tok/s")
						b.ReportMetric(float64(bytes)/1e6, "MB/token")
						b.ReportMetric(float64(bytes)/s/1e9, "GB/s")
					})
				}
			})
		})
	}
}
