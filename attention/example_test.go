package attention_test

import (
	"fmt"

	"github.com/stride-lm/stride/attention"
	"github.com/stride-lm/stride/tensor"
	"github.com/stride-lm/stride/tensor/kernels"
)

// A prompt of 5 tokens, then one decode step, through the fused path with
// q, k, v cut out of one fused QKV buffer. The only bytes copied are the
// K and V written into the paged cache.
func ExampleNewFused() {
	const H, KVH, D, bs = 4, 2, 8, 4
	led := tensor.NewLedger()
	kCache := tensor.Must(tensor.Zeros(led, tensor.F32, 8, bs, KVH, D))
	vCache := tensor.Must(tensor.Zeros(led, tensor.F32, 8, bs, KVH, D))
	pool := kernels.NewPool(2) // optional: persistent workers
	defer pool.Close()
	fused := attention.NewFused(attention.Options{Runner: pool})

	step := func(T, past int) {
		W := (H + 2*KVH) * D
		qkv := tensor.Must(tensor.Randn(led, tensor.F32, uint64(past), T, W))
		q := tensor.Must(tensor.Must(qkv.Narrow(1, 0, H*D)).View(T, H, D))
		k := tensor.Must(tensor.Must(qkv.Narrow(1, H*D, KVH*D)).View(T, KVH, D))
		v := tensor.Must(tensor.Must(qkv.Narrow(1, (H+KVH)*D, KVH*D)).View(T, KVH, D))
		b, _, err := attention.NewLinearBatch([]int{T}, []int{past + T}, bs)
		if err != nil {
			panic(err)
		}
		before := led.Stats()
		out, err := fused.Attend(q, k, v, kCache, vCache, b, nil)
		if err != nil {
			panic(err)
		}
		d := led.Stats().Sub(before)
		fmt.Printf("T=%d past=%d: out %s contiguous=%v, copied %d bytes (cache write %d)\n",
			T, past, tensor.FormatInts(out.Shape()), out.IsContiguous(), d.BytesCopied, 2*T*KVH*D*4)
	}
	step(5, 0) // prefill
	step(1, 5) // decode: reads the 5 cached positions through the block table
	// Output:
	// T=5 past=0: out [5, 32] contiguous=true, copied 640 bytes (cache write 640)
	// T=1 past=5: out [1, 32] contiguous=true, copied 128 bytes (cache write 128)
}

// The seed notes' MHA walk-through (B=2, S=4096, H=32, D=128) traced with
// meta tensors: the 4 GiB score matrix and the 128 MiB contiguous() copy
// of the naive path, computed without allocating them.
func ExampleTraceLayer() {
	tr, err := attention.TraceLayer("naive", attention.TraceConfig{B: 2, S: 4096, H: 32, KVH: 32, D: 128, Meta: true})
	if err != nil {
		panic(err)
	}
	for _, s := range tr.Steps {
		fmt.Printf("%-46s %-20s %-31s %-5v %s\n", s.Op, tensor.FormatInts(s.Shape), tensor.FormatInts(s.Strides), s.Contiguous, tensor.FormatBytes(s.BytesCopied))
	}
	// Output:
	// Q = x @ Wqᵀ                                    [2, 4096, 4096]      [16777216, 4096, 1]             true  0 B
	// K = x @ Wkᵀ                                    [2, 4096, 4096]      [16777216, 4096, 1]             true  0 B
	// V = x @ Wvᵀ                                    [2, 4096, 4096]      [16777216, 4096, 1]             true  0 B
	// reshape_and_cache(k, v)                        [512, 16, 32, 128]   [65536, 4096, 128, 1]           true  256.0 MiB
	// q = Q.view(2, 4096, 32, 128)                   [2, 4096, 32, 128]   [16777216, 4096, 128, 1]        true  0 B
	// q = q.transpose(1, 2)                          [2, 32, 4096, 128]   [16777216, 128, 4096, 1]        false 0 B
	// k = K.view(2, 4096, 32, 128).transpose(1, 2)   [2, 32, 4096, 128]   [16777216, 128, 4096, 1]        false 0 B
	// v = V.view(2, 4096, 32, 128).transpose(1, 2)   [2, 32, 4096, 128]   [16777216, 128, 4096, 1]        false 0 B
	// scores = q @ k.transpose(-2, -1)               [2, 32, 4096, 4096]  [536870912, 16777216, 4096, 1]  true  0 B
	// attn = softmax(scores, dim=-1)                 [2, 32, 4096, 4096]  [536870912, 16777216, 4096, 1]  true  0 B
	// out = attn @ v                                 [2, 32, 4096, 128]   [16777216, 524288, 128, 1]      true  0 B
	// out = out.transpose(1, 2)                      [2, 4096, 32, 128]   [16777216, 128, 524288, 1]      false 0 B
	// out = out.contiguous()                         [2, 4096, 32, 128]   [16777216, 4096, 128, 1]        true  128.0 MiB
	// out = out.view(2, 4096, 4096)                  [2, 4096, 4096]      [16777216, 4096, 1]             true  0 B
}
