package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// Benchmarks. Run them all with
//
//	go test -run x -bench . -benchtime 20x ./tensor/kernels
//
// Every matvec/matmul benchmark reports GFLOP/s (2·Rows·Cols·T flops per
// call), GB/s of weight bytes streamed (Matrix.Bytes per call) and allocs.

type benchShape struct {
	name       string
	rows, cols int
}

var matvecShapes = []benchShape{
	{"288x288", 288, 288},       // stories15M dim: cache resident
	{"768x2048", 768, 2048},     // stories110M w2 (hidden→dim)
	{"2048x768", 2048, 768},     // stories110M w1/w3 (dim→hidden)
	{"32000x768", 32000, 768},   // stories110M classifier
	{"768x768", 768, 768},       // stories110M wq/wk/wv/wo
	{"4096x4096", 4096, 4096},   // 7B-sized square, 64 MiB f32
	{"11008x4096", 11008, 4096}, // 7B w1, 172 MiB f32: beyond most LLCs
}

// benchMatrix builds a shape in a format from deterministic random values.
func benchMatrix(b testing.TB, f Format, rows, cols int) *Matrix {
	b.Helper()
	rng := rand.New(rand.NewPCG(uint64(rows), uint64(cols)))
	data := make([]float32, rows*cols)
	for i := range data {
		data[i] = float32(rng.NormFloat64()) * 0.02
	}
	var m *Matrix
	var err error
	switch f {
	case F32:
		m, err = NewF32(rows, cols, data)
	case BF16:
		m, err = ToBF16(rows, cols, data)
	case F16:
		m, err = ToF16(rows, cols, data)
	case Q8_0:
		m, err = QuantizeQ8_0(rows, cols, data, 32)
	}
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// benchImpls runs f per implementation. For Q8_0 on a VNNI CPU, avx512 is
// the VNNI integer kernels and avx512-float the float32 kernels on
// dequantized activations (useVNNI off), measured side by side.
func benchImpls(b *testing.B, format Format, f func(b *testing.B)) {
	prev := CurrentImpl()
	defer func() { _ = SetImpl(prev) }()
	for _, impl := range Available() {
		_ = SetImpl(impl)
		b.Run(impl.String(), f)
		if format == Q8_0 && impl == ImplAVX512 && hasVNNI {
			useVNNI = false
			b.Run("avx512-float", f)
			useVNNI = true
		}
	}
}

func runMatMul(b *testing.B, p *Pool, m *Matrix, T int) {
	x := make([]float32, T*m.Cols)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	out := make([]float32, T*m.Rows)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := MatMul(p, out, x, m, T); err != nil {
			b.Fatal(err)
		}
	}
	s := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(2*float64(m.Rows)*float64(m.Cols)*float64(T)/s/1e9, "GFLOP/s")
	b.ReportMetric(float64(m.Bytes())/s/1e9, "GB/s")
	b.ReportMetric(s*1e6/float64(T), "µs/token")
}

// BenchmarkMatVec is the decode matvec (T = 1) per shape, format, impl and
// thread count. Large shapes are skipped under -short.
func BenchmarkMatVec(b *testing.B) {
	pools := map[int]*Pool{1: nil, 2: NewPool(2)}
	defer pools[2].Close()
	for _, sh := range matvecShapes {
		if testing.Short() && sh.rows*sh.cols > 1<<22 {
			continue
		}
		b.Run(sh.name, func(b *testing.B) {
			for _, f := range []Format{F32, BF16, F16, Q8_0} {
				m := benchMatrix(b, f, sh.rows, sh.cols)
				b.Run(f.String(), func(b *testing.B) {
					benchImpls(b, f, func(b *testing.B) {
						for _, th := range []int{1, 2} {
							b.Run(fmt.Sprintf("t%d", th), func(b *testing.B) { runMatMul(b, pools[th], m, 1) })
						}
					})
				})
			}
		})
	}
}

// BenchmarkPrefill compares T = 64 and 512 (batched) with T = 1 on the same matrix:
// µs/token is the number to compare; GB/s for T = 64 is weight bytes per
// call, so it drops as compute takes over.
func BenchmarkPrefill(b *testing.B) {
	p := NewPool(2)
	defer p.Close()
	for _, sh := range []benchShape{{"768x768", 768, 768}, {"2048x768", 2048, 768}, {"768x2048", 768, 2048}} {
		b.Run(sh.name, func(b *testing.B) {
			for _, f := range []Format{F32, BF16, F16, Q8_0} {
				m := benchMatrix(b, f, sh.rows, sh.cols)
				b.Run(f.String(), func(b *testing.B) {
					benchImpls(b, f, func(b *testing.B) {
						for _, T := range []int{1, 64, 512} {
							b.Run(fmt.Sprintf("T%d", T), func(b *testing.B) { runMatMul(b, p, m, T) })
						}
					})
				})
			}
		})
	}
}

// BenchmarkDecodeStories110M runs one token's worth of matvecs through a
// stories110M-sized weight set in the model's shapes (12 layers × the
// fused wqkv 2304×768, wo 768×768, w1, w3 2048×768, w2 768×2048, plus the
// 32000×768 classifier: 61 matvecs, 438 MB in f32), so the weights stream
// from memory as in real decode rather than sitting in the last-level
// cache. tok/s is the matmul-only ceiling.
func BenchmarkDecodeStories110M(b *testing.B) {
	if testing.Short() {
		b.Skip("allocates up to 438 MB")
	}
	p := NewPool(2)
	defer p.Close()
	for _, f := range []Format{F32, BF16, F16, Q8_0} {
		var ms []*Matrix
		for l := 0; l < 12; l++ {
			for _, sh := range []benchShape{{"", 2304, 768}, {"", 768, 768}, {"", 2048, 768}, {"", 2048, 768}, {"", 768, 2048}} {
				ms = append(ms, benchMatrix(b, f, sh.rows, sh.cols))
			}
		}
		ms = append(ms, benchMatrix(b, f, 32000, 768))
		var bytes, flops float64
		for _, m := range ms {
			bytes += float64(m.Bytes())
			flops += 2 * float64(m.Rows) * float64(m.Cols)
		}
		// A random x: Q8_0 quantizes it on every call, and a zero vector
		// would take quantization's all-zero shortcut.
		x := make([]float32, 2048)
		randF32(rand.New(rand.NewPCG(1, 1)), x)
		out := make([]float32, 32000)
		b.Run(f.String(), func(b *testing.B) {
			benchImpls(b, f, func(b *testing.B) {
				if CurrentImpl() == ImplGeneric {
					b.Skip("generic is compute-bound; see BenchmarkMatVec")
				}
				for _, th := range []int{1, 2} {
					pool := p
					if th == 1 {
						pool = nil
					}
					b.Run(fmt.Sprintf("t%d", th), func(b *testing.B) {
						b.ReportAllocs()
						for i := 0; i < b.N; i++ {
							for _, m := range ms {
								if err := MatMul(pool, out, x, m, 1); err != nil {
									b.Fatal(err)
								}
							}
						}
						s := b.Elapsed().Seconds() / float64(b.N)
						b.ReportMetric(bytes/s/1e9, "GB/s")
						b.ReportMetric(flops/s/1e9, "GFLOP/s")
						b.ReportMetric(1/s, "tok/s")
						b.ReportMetric(bytes/1e6, "MB/token")
					})
				}
			})
		})
		ms = nil
	}
}

// BenchmarkReadBandwidth is BandwidthProbe's streaming sum on a
// preallocated buffer: L2-sized, LLC-sized and DRAM-sized.
func BenchmarkReadBandwidth(b *testing.B) {
	p := NewPool(2)
	defer p.Close()
	sizes := []int{1 << 20, 32 << 20, 1 << 30}
	if testing.Short() {
		sizes = sizes[:2]
	}
	for _, size := range sizes {
		buf := make([]float32, size/4)
		for i := range buf {
			buf[i] = 1
		}
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			for _, th := range []int{1, 2} {
				pool := p
				if th == 1 {
					pool = nil
				}
				b.Run(fmt.Sprintf("t%d", th), func(b *testing.B) {
					impl := CurrentImpl()
					b.SetBytes(int64(size))
					b.ReportAllocs()
					for i := 0; i < b.N; i++ {
						streamSum(pool, impl, buf)
					}
					b.ReportMetric(float64(size)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
				})
			}
		})
	}
}

// BenchmarkDot is the attention-sized dot product (head_size 64 and 128).
func BenchmarkDot(b *testing.B) {
	for _, n := range []int{64, 128, 4096} {
		a := make([]float32, n)
		c := make([]float32, n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			benchImpls(b, F32, func(b *testing.B) {
				var s float32
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					s += Dot(a, c)
				}
				b.ReportMetric(2*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				_ = s
			})
		})
	}
}

// BenchmarkParallelForHandoff is the fixed cost of one ParallelFor over two
// threads with (almost) no work: publish, wake a polling worker, run, and
// collect. MatMul's minWorkPerPart is sized from it.
func BenchmarkParallelForHandoff(b *testing.B) {
	p := NewPool(2)
	defer p.Close()
	var sink [2][16]int // one cache line per range
	f := func(s, e int) { sink[s][0] += e }
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		p.ParallelFor(2, 1, f)
	}
}
