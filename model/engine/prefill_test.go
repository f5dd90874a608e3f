package engine

import "testing"

// BenchmarkPromptStories260K is infer bench's pp512 on stories260K (one
// 512-token prefill through every layer) as a Go benchmark, for
// profiling: tokens per second on one thread.
func BenchmarkPromptStories260K(b *testing.B) {
	m := benchModel(b, "stories260K")
	e := newEngine(b, m, Options{Path: "fused", Threads: 1, BlockSize: 16})
	n := min(512, m.Config.SeqLen)
	for b.Loop() {
		if _, err := e.BenchPrompt(n, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "tok/s")
}
