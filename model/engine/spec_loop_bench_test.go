package engine

import (
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/checkpoint"
	"github.com/stride-lm/stride/tensor"
)

// BenchmarkSpeculativeLooping runs greedy generation from BOS (300
// positions, batch 1, one thread) with speculation off and on (the
// defaults), interleaved, on two Q8_0 models whose greedy output loops:
// the llama.cpp-made synthetic GGUF of TestSpeculativeLoopingFormats
// (dim 256, 4 layers, 4/2 heads of 64) and the stories110M GQA shape of
// issue 26 (dim 768, hidden 2048, 12 layers, 12/4 heads, vocabulary
// 32000; synthetic weights quantized to Stride's Q8_0). It reports the
// ratio of ngram to off in wall time and in the thread's CPU time, and
// the tokens per step: go test ./model/engine -run '^$' -bench SpeculativeLooping -benchtime 3x
func BenchmarkSpeculativeLooping(b *testing.B) {
	for _, name := range []string{"gguf-q8_0", "110m-gqa-q8_0"} {
		b.Run(name, func(b *testing.B) {
			m := loopingModel(b, name)
			modes := []Speculation{{}, ngram}
			engines := []*Engine{
				newEngine(b, m, Options{Threads: 1, DisablePrefixSharing: true, Speculation: modes[0]}),
				newEngine(b, m, Options{Threads: 1, DisablePrefixSharing: true, Speculation: modes[1]}),
			}
			var elapsed, cpu [2]time.Duration
			var tokens, steps [2]int
			haveCPU := true
			run := func(i int, count bool) {
				req := Request{Prompt: []int{model.BOSID}, Steps: 300, Sampler: model.NewSampler(m.Config.VocabSize, 0, 0.9, 1)}
				c0, _ := threadCPU()
				t0 := time.Now()
				res, st, err := engines[i].Generate([]Request{req}, nil)
				dt := time.Since(t0)
				c1, ok := threadCPU()
				if err != nil || res[0].Err != nil {
					b.Fatal(err, res[0].Err)
				}
				if count {
					haveCPU = haveCPU && ok
					elapsed[i] += dt
					cpu[i] += c1 - c0
					tokens[i] += len(res[0].Tokens) - 1
					steps[i] += st.Steps
				}
			}
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			run(0, false)
			run(1, false)
			b.ResetTimer()
			for it := 0; it < b.N; it++ {
				run(it%2, true)
				run(1-it%2, true)
			}
			b.StopTimer()
			rate := func(i int, d [2]time.Duration) float64 { return float64(tokens[i]) / d[i].Seconds() }
			b.ReportMetric(rate(0, elapsed), "off_tok/s")
			b.ReportMetric(rate(1, elapsed)/rate(0, elapsed), "ngram_wall_speedup")
			if haveCPU {
				b.ReportMetric(rate(1, cpu)/rate(0, cpu), "ngram_cpu_speedup")
			}
			b.ReportMetric(float64(tokens[1])/float64(steps[1]), "ngram_tok/step")
		})
	}
}

// loopingModel is BenchmarkSpeculativeLooping's model of that name.
func loopingModel(b *testing.B, name string) *model.Model {
	if name == "gguf-q8_0" {
		m, err := checkpoint.Load(filepath.Join(sharedDir(b), "models", "gguf", "synthetic-k256-q8_0.gguf"), model.LoadOptions{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { m.Close() })
		return m
	}
	m, err := model.Synthesize(model.Config{
		Dim: 768, HiddenDim: 2048, NLayers: 12, NHeads: 12, NKVHeads: 4, VocabSize: 32000, SeqLen: 1024,
		RopeTheta: 10000, NormEps: 1e-5, SharedClassifier: true, WeightDType: tensor.F32,
	}, 42)
	if err != nil {
		b.Fatal(err)
	}
	if err := model.QuantizeQ8_0(m, 0); err != nil {
		b.Fatal(err)
	}
	return m
}
