package tensor

import (
	"fmt"
	"testing"
)

// Benchmarks for the layout claims of the seed notes. They assert nothing
// about time; docs/readme/tensor.md records the numbers and the command.

var benchSink *Tensor
var benchSum float32

// BenchmarkViewOps shows that a view op costs O(ndim), not O(numel): the
// same ops on 1e3 and 1e7 elements (real and meta) take the same time.
func BenchmarkViewOps(b *testing.B) {
	for _, n := range []int{1000, 10_000_000} {
		for _, meta := range []bool{false, true} {
			var x *Tensor
			if meta {
				x = Must(Meta(F32, n/10, 10))
			} else {
				x = Must(Zeros(nil, F32, n/10, 10))
			}
			kind := "real"
			if meta {
				kind = "meta"
			}
			ops := []struct {
				name string
				f    func() (*Tensor, error)
			}{
				{"View", func() (*Tensor, error) { return x.View(10, n/100, 10) }},
				{"Transpose", func() (*Tensor, error) { return x.Transpose(0, 1) }},
				{"Expand", func() (*Tensor, error) { return x.Expand(4, n/10, 10) }},
			}
			for _, op := range ops {
				b.Run(fmt.Sprintf("%s/numel=%.0e/%s", op.name, float64(n), kind), func(b *testing.B) {
					for b.Loop() {
						benchSink, _ = op.f()
					}
				})
			}
		}
	}
}

// BenchmarkContiguous4096 compares making a transposed 4096x4096 F32
// contiguous (a strided gather: the cache-miss penalty) with cloning an
// already contiguous one (one memmove). Both write 64 MiB.
func BenchmarkContiguous4096(b *testing.B) {
	const n = 4096
	x := Must(Randn(nil, F32, 1, n, n))
	xt := Must(x.T())
	b.Run("transposed", func(b *testing.B) {
		b.SetBytes(n * n * 4)
		for b.Loop() {
			benchSink, _ = xt.Contiguous()
		}
	})
	// The same copy without the cache-blocked path: the "before" of copyTiled.
	b.Run("transposed-untiled", func(b *testing.B) {
		b.SetBytes(n * n * 4)
		for b.Loop() {
			out := Must(Empty(nil, F32, n, n))
			copyWalk(out, xt, out.st.f32, xt.st.f32)
			benchSink = out
		}
	})
	b.Run("clone-contiguous", func(b *testing.B) {
		b.SetBytes(n * n * 4)
		for b.Loop() {
			benchSink, _ = x.Clone()
		}
	})
}

// BenchmarkRowVsColumnSum is the seed's experiment 4 in Go: summing a
// 4096x4096 F32 matrix row by row walks memory with stride 1; column by
// column it jumps 16 KiB per element and misses the cache almost every
// time.
func BenchmarkRowVsColumnSum(b *testing.B) {
	const n = 4096
	m := Must(Full(nil, F32, 1, n, n))
	data := m.Storage().Float32s()
	rs, cs := m.strides[0], m.strides[1] // 4096, 1
	b.Run("row-sum", func(b *testing.B) {
		b.SetBytes(n * n * 4)
		for b.Loop() {
			var total float32
			for i := 0; i < n; i++ {
				var s float32
				row := data[i*rs : i*rs+n]
				for _, v := range row {
					s += v
				}
				total += s
			}
			benchSum = total
		}
	})
	b.Run("column-sum", func(b *testing.B) {
		b.SetBytes(n * n * 4)
		for b.Loop() {
			var total float32
			for j := 0; j < n; j++ {
				var s float32
				for i := 0; i < n; i++ {
					s += data[i*rs+j*cs]
				}
				total += s
			}
			benchSum = total
		}
	})
}
