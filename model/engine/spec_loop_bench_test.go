package engine

import (
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/tensor"
)

// BenchmarkSpeculativeLooping runs greedy generation from BOS (300
// positions, batch 1, one thread) with speculation off and on (the
// defaults, k = 8, and without the adaptive rule), interleaved, on two Q8_0 models whose greedy output loops:
// the llama.cpp-made synthetic GGUF of TestSpeculativeLoopingFormats
// (dim 256, 4 layers, 4/2 heads of 64) and the stories110M GQA shape of
// issue 26 (dim 768, hidden 2048, 12 layers, 12/4 heads, vocabulary
// 32000; synthetic weights quantized to Stride's Q8_0). It reports the
// ratio of each mode to off in wall time and in the thread's CPU time, and
// the tokens per step: go test ./model/engine -run '^$' -bench SpeculativeLooping -benchtime 3x
func BenchmarkSpeculativeLooping(b *testing.B) {
	for _, name := range []string{"gguf-q8_0", "110m-gqa-q8_0"} {
		b.Run(name, func(b *testing.B) {
			m := loopingModel(b, name)
			modes := []struct {
				name string
				spec Speculation
			}{{"off", Speculation{}}, {"ngram", ngram}, {"ngram-k8", Speculation{Method: "ngram", Draft: 8}}, {"ngram-always", Speculation{Method: "ngram", always: true}}}
			engines := make([]*Engine, len(modes))
			for i, md := range modes {
				engines[i] = newEngine(b, m, Options{Threads: 1, DisablePrefixSharing: true, Speculation: md.spec})
			}
			elapsed, cpu := make([]time.Duration, len(modes)), make([]time.Duration, len(modes))
			tokens, steps := make([]int, len(modes)), make([]int, len(modes))
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
			for i := range modes {
				run(i, false)
			}
			b.ResetTimer()
			for it := 0; it < b.N; it++ {
				for r := range modes { // the mode order rotating
					run((it+r)%len(modes), true)
				}
			}
			b.StopTimer()
			rate := func(i int, d []time.Duration) float64 { return float64(tokens[i]) / d[i].Seconds() }
			b.ReportMetric(rate(0, elapsed), "off_tok/s")
			for i, md := range modes[1:] {
				i++
				b.ReportMetric(rate(i, elapsed)/rate(0, elapsed), md.name+"_wall_speedup")
				if haveCPU {
					b.ReportMetric(rate(i, cpu)/rate(0, cpu), md.name+"_cpu_speedup")
				}
				b.ReportMetric(float64(tokens[i])/float64(steps[i]), md.name+"_tok/step")
			}
		})
	}
}

// loopingModel is BenchmarkSpeculativeLooping's model of that name.
func loopingModel(b *testing.B, name string) *model.Model {
	if name == "gguf-q8_0" {
		m, err := loadCheckpoint(filepath.Join(sharedDir(b), "models", "gguf", "synthetic-k256-q8_0.gguf"), model.LoadOptions{})
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
