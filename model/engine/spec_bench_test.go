package engine

import (
	"runtime"
	"testing"
	"time"

	"github.com/stride-lm/stride/model"
)

// The workloads of docs/speculative.md on stories260K. repetitive: greedy
// continuations that fall into the model's own loops (the three of eight
// short prompts tried whose 512-position greedy runs loop; the other five
// stop at BOS within ~250 tokens). open-ended: sampled stories (T = 1,
// top-p 0.9) from the five others.
var specWorkloads = []struct {
	name    string
	prompts []string
	steps   int
	temp    float32
}{
	{"repetitive", []string{"Lily and Ben went to the park", "Tom had a red car", "The dog ran and ran"}, 512, 0},
	{"open-ended", []string{"The sun was hot", "Sam was sad", "One day, a little bird", "Once upon a time, there was a big cat", ""}, 256, 1},
}

// BenchmarkSpeculativeStories260K runs each workload with speculation off,
// on (the defaults: ngram, k = 4, n = 1…3, adaptive), with k = 8, and with the defaults but without the adaptive rule
// (fixed k = 4, no pause), interleaved in every iteration (the order rotating), each
// prompt alone (batch 1). It reports each mode's generated tokens per
// second of wall time and their ratio to off, the drafts' acceptance
// rate, and the tokens a sequence keeps per step, all from the same
// runs: go test ./model/engine -run '^$' -bench SpeculativeStories260K -benchtime 5x
func BenchmarkSpeculativeStories260K(b *testing.B) {
	m, tok := stories260K(b)
	modes := []struct {
		name string
		spec Speculation
	}{{"off", Speculation{}}, {"ngram", ngram}, {"ngram-k8", Speculation{Method: "ngram", Draft: 8}}, {"ngram-always", Speculation{Method: "ngram", always: true}}}
	for _, w := range specWorkloads {
		b.Run(w.name, func(b *testing.B) {
			var prompts [][]int
			for _, p := range w.prompts {
				ids, err := tok.Encode(p, true, false)
				if err != nil {
					b.Fatal(err)
				}
				prompts = append(prompts, ids)
			}
			engines := make([]*Engine, len(modes))
			for i, md := range modes {
				engines[i] = newEngine(b, m, Options{Threads: 1, DisablePrefixSharing: true, Speculation: md.spec})
			}
			elapsed, cpu := make([]time.Duration, len(modes)), make([]time.Duration, len(modes))
			tokens, steps, drafted, accepted := make([]int, len(modes)), make([]int, len(modes)), make([]int, len(modes)), make([]int, len(modes))
			haveCPU := true
			run := func(i, j int, count bool) {
				ids := prompts[j]
				req := Request{Prompt: ids, Steps: w.steps, Sampler: model.NewSampler(512, w.temp, 0.9, uint64(100+j))}
				c0, _ := threadCPU()
				t0 := time.Now()
				res, st, err := engines[i].Generate([]Request{req}, nil)
				dt := time.Since(t0)
				c1, ok := threadCPU()
				if err != nil || res[0].Err != nil {
					b.Fatal(err, res[0].Err)
				}
				if !count {
					return
				}
				haveCPU = haveCPU && ok
				elapsed[i] += dt
				cpu[i] += c1 - c0
				tokens[i] += len(res[0].Tokens) - (len(ids) - 1)
				steps[i] += st.Steps
				drafted[i] += st.DraftTokens
				accepted[i] += st.AcceptedTokens
			}
			// One OS thread runs everything (Threads: 1 runs the kernels
			// inline), so its CPU time is the runs' compute time.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for j := range prompts {
				for i := range modes {
					run(i, j, false) // warm-up
				}
			}
			b.ResetTimer()
			for it := 0; it < b.N; it++ {
				// Every prompt runs in every mode back to back, the mode
				// order rotating, so drift on a shared machine touches all
				// modes alike.
				for j := range prompts {
					for r := range modes {
						run((it+j+r)%len(modes), j, true)
					}
				}
			}
			b.StopTimer()
			for i, md := range modes {
				rate := float64(tokens[i]) / elapsed[i].Seconds()
				b.ReportMetric(rate, md.name+"_tok/s")
				if i == 0 {
					continue
				}
				b.ReportMetric(rate/(float64(tokens[0])/elapsed[0].Seconds()), md.name+"_wall_speedup")
				if haveCPU {
					b.ReportMetric((float64(tokens[i])/cpu[i].Seconds())/(float64(tokens[0])/cpu[0].Seconds()), md.name+"_cpu_speedup")
				}
				if drafted[i] > 0 {
					b.ReportMetric(float64(accepted[i])/float64(drafted[i]), md.name+"_accept")
				}
				b.ReportMetric(float64(tokens[i])/float64(steps[i]), md.name+"_tok/step")
			}
			b.Logf("%s: %d runs of %d prompts per mode; tokens %v, steps %v, drafted %v, accepted %v",
				w.name, b.N, len(prompts), tokens, steps, drafted, accepted)
		})
	}
}
