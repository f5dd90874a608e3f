package attention

import (
	"fmt"
	"math"
	"testing"

	"github.com/stride-lm/stride/tensor"
	"github.com/stride-lm/stride/tensor/kernels"
)

// benchShapes are the head layouts benchmarked: stories260K's small GQA
// heads (head_dim 8), stories15M's MHA and a GQA layer.
var benchShapes = []struct {
	name      string
	H, KVH, D int
}{
	{"stories260K-H8-KVH4-D8", 8, 4, 8},
	{"stories15M-H6-D48", 6, 6, 48},
	{"gqa-H12-KVH4-D64", 12, 4, 64},
}

// benchStep builds one sequence's step: S new tokens on top of past cached
// ones, with q, k, v laid out as each path gets them in the model (views
// of the fused QKV output for fused, separate contiguous tensors for
// naive).
func benchStep(b *testing.B, path string, H, KVH, D, S, past int) (Path, *tensor.Ledger, [5]*tensor.Tensor, *Batch) {
	b.Helper()
	const bs = 16
	led := tensor.NewLedger()
	batch, nb, err := NewLinearBatch([]int{S}, []int{past + S}, bs)
	if err != nil {
		b.Fatal(err)
	}
	kc := tensor.Must(tensor.Randn(led, tensor.F32, 1, nb, bs, KVH, D))
	vc := tensor.Must(tensor.Randn(led, tensor.F32, 2, nb, bs, KVH, D))
	var q, k, v *tensor.Tensor
	var p Path
	if path == "fused" || path == "fused+pool" {
		W := (H + 2*KVH) * D
		qkv := tensor.Must(tensor.Randn(led, tensor.F32, 3, S, W))
		q = tensor.Must(tensor.Must(qkv.Narrow(1, 0, H*D)).View(S, H, D))
		k = tensor.Must(tensor.Must(qkv.Narrow(1, H*D, KVH*D)).View(S, KVH, D))
		v = tensor.Must(tensor.Must(qkv.Narrow(1, (H+KVH)*D, KVH*D)).View(S, KVH, D))
		opts := Options{}
		if path == "fused+pool" {
			pool := kernels.NewPool(0)
			b.Cleanup(pool.Close)
			opts.Runner = pool
		}
		p = NewFused(opts)
	} else {
		q = tensor.Must(tensor.Randn(led, tensor.F32, 3, S, H, D))
		k = tensor.Must(tensor.Randn(led, tensor.F32, 4, S, KVH, D))
		v = tensor.Must(tensor.Randn(led, tensor.F32, 5, S, KVH, D))
		p = NewNaive(Options{})
	}
	return p, led, [5]*tensor.Tensor{q, k, v, kc, vc}, batch
}

func runSteps(b *testing.B, p Path, led *tensor.Ledger, in [5]*tensor.Tensor, batch *Batch) {
	// One warm-up step, so the fused path's output buffer exists.
	if _, err := p.Attend(in[0], in[1], in[2], in[3], in[4], batch, nil); err != nil {
		b.Fatal(err)
	}
	before := led.Stats()
	n := 0
	b.ResetTimer()
	for b.Loop() {
		out, err := p.Attend(in[0], in[1], in[2], in[3], in[4], batch, nil)
		if err != nil {
			b.Fatal(err)
		}
		if p.Name() == "naive" {
			out.Release()
		}
		n++
	}
	d := led.Stats().Sub(before)
	b.ReportMetric(float64(d.BytesCopied)/float64(n), "B-copied/op")
	b.ReportMetric(float64(d.BytesAllocated)/float64(n), "B-alloc/op")
}

// BenchmarkPrefill is one layer's attention step for a prompt of S tokens
// with no earlier context: from q, k, v to the [S, H·D] output, cache
// write included.
func BenchmarkPrefill(b *testing.B) {
	for _, sh := range benchShapes {
		for _, S := range []int{128, 512, 2048} {
			for _, path := range []string{"naive", "fused"} {
				b.Run(fmt.Sprintf("%s/S=%d/%s", sh.name, S, path), func(b *testing.B) {
					p, led, in, batch := benchStep(b, path, sh.H, sh.KVH, sh.D, S, 0)
					runSteps(b, p, led, in, batch)
				})
			}
		}
	}
}

// BenchmarkDecode is one layer's attention step for one new token of a
// sequence with context C (C−1 cached positions plus the new one).
// "fused+pool" runs the fused path on a persistent kernels.Pool instead
// of starting goroutines per call.
func BenchmarkDecode(b *testing.B) {
	for _, sh := range benchShapes {
		for _, C := range []int{128, 1024, 4096} {
			for _, path := range []string{"naive", "fused", "fused+pool"} {
				b.Run(fmt.Sprintf("%s/ctx=%d/%s", sh.name, C, path), func(b *testing.B) {
					p, led, in, batch := benchStep(b, path, sh.H, sh.KVH, sh.D, 1, C-1)
					runSteps(b, p, led, in, batch)
				})
			}
		}
	}
}

// BenchmarkPagedDecodeVsGather isolates what reading the blocks in place
// saves: the same decode kernel run (a) on the paged cache through the
// block table and (b) after gathering the sequence's K and V into
// contiguous [C, KVH, D] buffers, the copy a kernel that needs contiguous
// KV pays every step. The gather's bytes are reported per step.
func BenchmarkPagedDecodeVsGather(b *testing.B) {
	const H, KVH, D, bs = 12, 4, 64, 16
	scale := 1 / float32(math.Sqrt(D))
	for _, C := range []int{256, 1024, 4096} {
		led := tensor.NewLedger()
		batch, nb, err := NewLinearBatch([]int{1}, []int{C}, bs)
		if err != nil {
			b.Fatal(err)
		}
		// Scatter the blocks: a real cache's blocks are not in order.
		tbl := batch.BlockTables[0]
		for i := 0; i < nb/2; i += 2 { // swap pairs of blocks across the table
			tbl[i], tbl[nb-1-i] = tbl[nb-1-i], tbl[i]
		}
		kc := tensor.Must(tensor.Randn(led, tensor.F32, 1, nb, bs, KVH, D))
		vc := tensor.Must(tensor.Randn(led, tensor.F32, 2, nb, bs, KVH, D))
		q := tensor.Must(tensor.Randn(led, tensor.F32, 3, 1, H, D))
		out := tensor.Must(tensor.Zeros(led, tensor.F32, 1, H*D))
		b.Run(fmt.Sprintf("ctx=%d/paged", C), func(b *testing.B) {
			for b.Loop() {
				if err := PagedDecode(out, q, kc, vc, batch.BlockTables, []int{C}, scale, Options{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(0, "B-copied/op")
		})
		b.Run(fmt.Sprintf("ctx=%d/gather-then-attend", C), func(b *testing.B) {
			// Gather into one contiguous "block" of C slots, then run the
			// kernel on it with the trivial block table [0].
			gk := tensor.Must(tensor.Zeros(led, tensor.F32, 1, C, KVH, D))
			gv := tensor.Must(tensor.Zeros(led, tensor.F32, 1, C, KVH, D))
			d := dims{KVH: KVH, D: D, blockSize: bs}
			before := led.Stats()
			n := 0
			for b.Loop() {
				gatherInto(gk, kc, batch.BlockTables[0], C, d)
				gatherInto(gv, vc, batch.BlockTables[0], C, d)
				led.RecordCopy(int64(2 * C * KVH * D * 4))
				if err := PagedDecode(out, q, gk, gv, [][]int32{{0}}, []int{C}, scale, Options{}); err != nil {
					b.Fatal(err)
				}
				n++
			}
			b.ReportMetric(float64(led.Stats().Sub(before).BytesCopied)/float64(n), "B-copied/op")
		})
	}
}

// gatherInto copies positions 0 … C−1 of a paged cache into dst
// [1, C, KVH, D], block by block.
func gatherInto(dst, cache *tensor.Tensor, table []int32, C int, d dims) {
	out := dst.Storage().Float32s()
	src := cache.Storage().Float32s()
	row := d.KVH * d.D
	for p := 0; p < C; p += d.blockSize {
		n := min(d.blockSize, C-p)
		so := int(table[p/d.blockSize]) * d.blockSize * row
		copy(out[p*row:(p+n)*row], src[so:so+n*row])
	}
}

// BenchmarkDecodeHeadWidth is one layer's GQA decode step (8 query heads
// on 4 KV heads, 256 keys) at the narrow head widths where the choice
// between kernels.DotRows/AxpyRows and the inline row loops is made
// (smallHeadDim): "kernels" is the default, "inline" turns the SIMD
// kernels off (kernels.SetSIMD(false)), which sends every width to the
// row loops and the softmax exponential to its portable loop.
func BenchmarkDecodeHeadWidth(b *testing.B) {
	for _, D := range []int{8, 16, 24, 32} {
		for _, mode := range []string{"kernels", "inline"} {
			b.Run(fmt.Sprintf("D=%d/%s", D, mode), func(b *testing.B) {
				if mode == "inline" {
					kernels.SetSIMD(false)
					defer kernels.SetSIMD(true)
				}
				p, led, in, batch := benchStep(b, "fused", 8, 4, D, 1, 255)
				runSteps(b, p, led, in, batch)
			})
		}
	}
}
