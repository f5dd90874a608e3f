package model

import (
	"fmt"
	"path/filepath"
	"testing"
)

func benchModel(b *testing.B, name string) *Model {
	b.Helper()
	switch name {
	case "stories260K":
		dir := sharedDir(b)
		m, err := Load(filepath.Join(dir, "models", "stories260K.bin"), LoadOptions{})
		if err != nil {
			b.Fatal(err)
		}
		return m
	case "stories15M-shape":
		m, err := Synthesize(stories15MShape(), 15)
		if err != nil {
			b.Fatal(err)
		}
		return m
	}
	b.Fatalf("unknown bench model %s", name)
	return nil
}

// BenchmarkDecodeStep measures one decode step (one token through every
// layer and the classifier) at a short context, per path and thread count.
func BenchmarkDecodeStep(b *testing.B) {
	for _, name := range []string{"stories260K", "stories15M-shape"} {
		for _, path := range []string{"fused", "naive"} {
			for _, threads := range []int{1, 2} {
				b.Run(fmt.Sprintf("%s/%s/threads=%d", name, path, threads), func(b *testing.B) {
					m := benchModel(b, name)
					e := newEngine(b, m, EngineOptions{Path: path, Threads: threads, BlockSize: 16})
					const ctxLen = 64
					prompt := make([]int, ctxLen)
					prompt[0] = BOSID
					for i := 1; i < ctxLen; i++ {
						prompt[i] = 3 + i
					}
					if _, err := e.cache.AddSequence(0, prompt); err != nil {
						b.Fatal(err)
					}
					run := func(tokens, pos []int, ctx int) {
						slots, err := e.cache.Slots(0, pos[0], len(tokens))
						if err != nil {
							b.Fatal(err)
						}
						table, _ := e.cache.BlockTable(0)
						batch := newBatch(len(tokens), ctx, table, slots)
						if _, err := e.fwd.Run(tokens, pos, batch, e.caches, []int{len(tokens) - 1}); err != nil {
							b.Fatal(err)
						}
					}
					pos := make([]int, ctxLen)
					for i := range pos {
						pos[i] = i
					}
					run(prompt, pos, ctxLen)
					tok, p := []int{5}, []int{ctxLen}
					b.ReportAllocs()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						// Rewrite the same position each time: a steady
						// decode step at context ctxLen+1.
						if err := e.cache.Truncate(0, ctxLen); err != nil {
							b.Fatal(err)
						}
						run(tok, p, ctxLen+1)
					}
					b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
				})
			}
		}
	}
}

// BenchmarkGenerate256 measures a whole 256-token greedy generation from
// BOS (run.c's -n 256), reporting tokens per second.
func BenchmarkGenerate256(b *testing.B) {
	for _, name := range []string{"stories260K", "stories15M-shape"} {
		for _, path := range []string{"fused", "naive"} {
			b.Run(name+"/"+path, func(b *testing.B) {
				m := benchModel(b, name)
				e := newEngine(b, m, EngineOptions{Path: path, BlockSize: 16})
				steps := min(256, m.Config.SeqLen)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					res, _, err := e.Generate([]Request{{Prompt: []int{BOSID}, Steps: steps,
						Sampler: NewSampler(m.Config.VocabSize, 0, 0, 1)}}, nil)
					if err != nil || res[0].Err != nil {
						b.Fatal(err, res[0].Err)
					}
				}
				b.ReportMetric(float64(b.N*steps)/b.Elapsed().Seconds(), "tok/s")
			})
		}
	}
}
