package kvcache

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stride-lm/stride/tensor"
)

// kvModels are attention shapes of real models, plus the same 7B shape
// with its KV heads cut to 8 (GQA) and 1 (MQA) to isolate that effect.
var kvModels = []struct {
	name       string
	layers     int
	heads, kvh int
	headDim    int
	dt         tensor.DType
}{
	{"stories260K_GQA_8q4kv_f32", 5, 8, 4, 8, tensor.F32},
	{"llama2-7B_MHA_32q32kv_f16", 32, 32, 32, 128, tensor.F16},
	{"7B-shape_GQA_32q8kv_f16", 32, 32, 8, 128, tensor.F16},
	{"7B-shape_MQA_32q1kv_f16", 32, 32, 1, 128, tensor.F16},
	{"llama2-70B_GQA_64q8kv_f16", 80, 64, 8, 128, tensor.F16},
}

// BenchmarkBytesPerToken reports, per model shape, the cache bytes one
// token costs and how many tokens fit in 1 GiB (metrics, not timings).
func BenchmarkBytesPerToken(b *testing.B) {
	for _, m := range kvModels {
		b.Run(m.name, func(b *testing.B) {
			cfg := Config{NumLayers: m.layers, NumKVHeads: m.kvh, HeadDim: m.headDim, BlockSize: 16, DType: m.dt}
			var bpt int64
			for b.Loop() {
				bpt = cfg.BytesPerToken()
			}
			mha := Config{NumLayers: m.layers, NumKVHeads: m.heads, HeadDim: m.headDim, BlockSize: 16, DType: m.dt}
			b.ReportMetric(float64(bpt), "B/token")
			b.ReportMetric(float64(int64(1<<30)/bpt), "tokens/GiB")
			b.ReportMetric(float64(mha.BytesPerToken())/float64(bpt), "x_vs_MHA")
		})
	}
}

// BenchmarkReshapeAndCache writes T tokens of K and V (8 KV heads of 128,
// the 7B-GQA shape of one layer) into random cache slots. "strided" reads
// K and V as views of a fused QKV buffer [T, (32+2·8)·128]; "contiguous"
// reads [T, 8, 128] tensors; "copy-then-write" is the naive path that makes
// the strided views contiguous first. SetBytes is the bytes written to the
// caches, so MB/s is cache-write bandwidth.
func BenchmarkReshapeAndCache(b *testing.B) {
	const H, KV, D, bs = 32, 8, 128, 16
	for _, T := range []int{1, 512} {
		for _, cacheDT := range []tensor.DType{tensor.F32, tensor.F16} {
			for _, mode := range []string{"contiguous", "strided", "copy-then-write"} {
				b.Run(fmt.Sprintf("T=%d/%v/%s", T, cacheDT, mode), func(b *testing.B) {
					led := tensor.NewLedger()
					blocks := (T + bs - 1) / bs * 2
					kc := must(tensor.Zeros(led, cacheDT, blocks, bs, KV, D))
					vc := must(tensor.Zeros(led, cacheDT, blocks, bs, KV, D))
					var key, value *tensor.Tensor
					if mode == "contiguous" {
						key = must(tensor.Randn(led, tensor.F32, 1, T, KV, D))
						value = must(tensor.Randn(led, tensor.F32, 2, T, KV, D))
					} else {
						qkv := must(tensor.Randn(led, tensor.F32, 1, T, (H+2*KV)*D))
						key = must(must(qkv.Narrow(1, H*D, KV*D)).View(T, KV, D))
						value = must(must(qkv.Narrow(1, (H+KV)*D, KV*D)).View(T, KV, D))
					}
					r := rand.New(rand.NewPCG(3, 4))
					slots := make([]int32, T)
					for i, p := range r.Perm(blocks * bs)[:T] {
						slots[i] = int32(p)
					}
					b.SetBytes(int64(2 * T * KV * D * cacheDT.Size()))
					before := led.Stats()
					for b.Loop() {
						k, v := key, value
						if mode == "copy-then-write" {
							k, v = must(key.Contiguous()), must(value.Contiguous())
						}
						if err := ReshapeAndCache(k, v, kc, vc, slots); err != nil {
							b.Fatal(err)
						}
					}
					d := led.Stats().Sub(before)
					b.ReportMetric(float64(d.BytesCopied)/float64(b.N), "copiedB/op")
					b.ReportMetric(float64(d.BytesAllocated)/float64(b.N), "allocB/op")
				})
			}
		}
	}
}

// BenchmarkSlotsDecode measures the bookkeeping of one decode step for a
// batch of 64 sequences: Slots(id, len, 1) for each, growing tables.
func BenchmarkSlotsDecode(b *testing.B) {
	c := must(New(nil, Config{NumLayers: 1, NumKVHeads: 1, HeadDim: 1, BlockSize: 16, NumBlocks: 1 << 16, DType: tensor.F32}))
	const B = 64
	for id := range B {
		must(c.AddSequence(id, seqTokens(32, id*100)))
		must(c.Slots(id, 0, 32))
	}
	lens := make([]int, B)
	for i := range lens {
		lens[i] = 32
	}
	for b.Loop() {
		for id := range B {
			if lens[id] >= 4096 {
				must(0, c.Truncate(id, 32))
				lens[id] = 32
			}
			must(c.Slots(id, lens[id], 1))
			lens[id]++
		}
	}
}

// BenchmarkAppendStepDecode is BenchmarkSlotsDecode through AppendStep:
// the same 64 decode positions in one call, one lock, the tables
// published, nothing allocated.
func BenchmarkAppendStepDecode(b *testing.B) {
	c := must(New(nil, Config{NumLayers: 1, NumKVHeads: 1, HeadDim: 1, BlockSize: 16, NumBlocks: 1 << 16, DType: tensor.F32}))
	const B = 64
	seqs := make([]StepSeq, B)
	for id := range B {
		must(c.AddSequence(id, seqTokens(32, id*100)))
		must(0, c.Reserve(id, 4096))
		must(c.Slots(id, 0, 32))
		seqs[id] = StepSeq{ID: id, N: 1}
	}
	var st Step
	n := 32
	b.ReportAllocs()
	for b.Loop() {
		if n >= 4096 {
			for id := range B {
				must(0, c.Truncate(id, 32))
			}
			n = 32
		}
		must(0, c.AppendStep(&st, seqs))
		n++
	}
}
