package engine

import (
	"fmt"
	"testing"

	"github.com/stride-lm/stride/model"
)

// BenchmarkGenerate256 measures a whole 256-token greedy generation from
// BOS (run.c's -n 256) through Engine.Generate, reporting tokens per
// second, on one thread and on all cores.
func BenchmarkGenerate256(b *testing.B) {
	for _, name := range []string{"stories260K", "stories15M-shape"} {
		for _, path := range []string{"fused", "naive"} {
			for _, threads := range []int{1, 0} {
				b.Run(fmt.Sprintf("%s/%s/threads=%d", name, path, threads), func(b *testing.B) {
					m := benchModel(b, name)
					e := newEngine(b, m, Options{Path: path, BlockSize: 16, Threads: threads})
					steps := min(256, m.Config.SeqLen)
					b.ReportAllocs()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						res, _, err := e.Generate([]Request{{Prompt: []int{model.BOSID}, Steps: steps,
							Sampler: model.NewSampler(m.Config.VocabSize, 0, 0, 1)}}, nil)
						if err != nil || res[0].Err != nil {
							b.Fatal(err, res[0].Err)
						}
					}
					b.ReportMetric(float64(b.N*steps)/b.Elapsed().Seconds(), "tok/s")
				})
			}
		}
	}
}
