package attention

import (
	"fmt"
	"testing"

	"github.com/stride-lm/stride/tensor/kernels"
)

// BenchmarkPrefillSmallHeads is one layer's prefill of S = 512 tokens for
// small heads (8 query heads on 4 KV heads, as stories260K) on each
// kernel implementation this CPU has: S = Q·Kᵀ goes through axpyScores
// for heads narrower than simdPad. Run it with -cpu 1 for one worker.
func BenchmarkPrefillSmallHeads(b *testing.B) {
	was := kernels.CurrentImpl()
	defer kernels.SetImpl(was)
	for _, impl := range kernels.Available() {
		for _, D := range []int{8, 16, 24} {
			b.Run(fmt.Sprintf("%v/H8-KVH4-D%d/S=512", impl, D), func(b *testing.B) {
				if err := kernels.SetImpl(impl); err != nil {
					b.Fatal(err)
				}
				p, led, in, batch := benchStep(b, "fused", 8, 4, D, 512, 0)
				runSteps(b, p, led, in, batch)
			})
		}
	}
}
