package model

import (
	"fmt"
	"math"
	"os"
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

// decodeStep prefills a ctxLen-token prompt into a stepper's cache and
// returns a function that runs one decode step at position ctxLen
// (context ctxLen+1). The slot, block table and batch are set up once: the
// step rewrites the same cache slot every time, which is what a decode
// step costs once the scheduler has handed out its slot.
func decodeStep(tb testing.TB, m *Model, path string, threads, ctxLen int) func() {
	tb.Helper()
	prompt := make([]int, ctxLen)
	prompt[0] = BOSID
	for i := 1; i < ctxLen; i++ {
		prompt[i] = 3 + i%(m.Config.VocabSize-3)
	}
	s := newStepper(tb, m, stepOpts{path: path, threads: threads})
	s.feed(tb, prompt...)
	batch, pos := s.batch(tb, []int{5})
	tok, rows := []int{5}, []int{0}
	return func() {
		if _, err := s.fwd.Run(tok, pos, batch, s.caches, rows); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkDecodeStep measures one decode step (one token through every
// layer and the classifier) at a short context, per path and thread count.
// The fused rows report 0 allocs/op: see TestDecodeStepAllocatesNothing.
func BenchmarkDecodeStep(b *testing.B) {
	for _, name := range []string{"stories260K", "stories15M-shape"} {
		for _, path := range []string{"fused", "naive"} {
			for _, threads := range []int{1, 2} {
				b.Run(fmt.Sprintf("%s/%s/threads=%d", name, path, threads), func(b *testing.B) {
					m := benchModel(b, name)
					step := decodeStep(b, m, path, threads, 64)
					step() // warm the step's buffers (T = 1 views, output tensor)
					b.ReportAllocs()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						step()
					}
					b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
				})
			}
		}
	}
}

// BenchmarkDecodeStepFile is BenchmarkDecodeStep on the checkpoint named
// by $STRIDE_DECODE_MODEL (any file the loader reads, a GGUF included), on
// 2 threads at context 64: the batch-1 decode profile of a model that is
// not in ../shared (docs/performance.md, "Issue 26 side by side"):
//
//	STRIDE_DECODE_MODEL=/tmp/s110-gqa-q8_0.gguf go test ./model -run '^$' \
//	    -bench DecodeStepFile -benchtime 400x -cpuprofile q8_0.prof
func BenchmarkDecodeStepFile(b *testing.B) {
	path := os.Getenv("STRIDE_DECODE_MODEL")
	if path == "" {
		b.Skip("STRIDE_DECODE_MODEL is not set: no checkpoint to profile")
	}
	m, err := Load(path, LoadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	step := decodeStep(b, m, "fused", 2, 64)
	step()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		step()
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
}

// A steady decode step of the fused path allocates nothing: the forward
// buffers, the q/k/v views, the attention output, the kernel's arguments,
// work list and scratch are all reused, and the layout checks read shapes
// into stack arrays. Checked for MHA and GQA heads, a small head (the
// inline loops) and a wide one (the SIMD loops), on one and two threads
// (the kernel and the matmuls dispatched to the pool).
func TestDecodeStepAllocatesNothing(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"gqa-D8", Config{Dim: 64, HiddenDim: 172, NLayers: 2, NHeads: 8, NKVHeads: 4, VocabSize: 512, SeqLen: 128,
			RopeTheta: 10000, NormEps: 1e-5}},
		{"mha-D48", Config{Dim: 96, HiddenDim: 256, NLayers: 2, NHeads: 2, NKVHeads: 2, VocabSize: 300, SeqLen: 128,
			RopeTheta: 10000, NormEps: 1e-5, SharedClassifier: true}},
	} {
		m, err := Synthesize(c.cfg, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, threads := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/threads=%d", c.name, threads), func(t *testing.T) {
				step := decodeStep(t, m, "fused", threads, 37)
				if a := testing.AllocsPerRun(20, step); a != 0 {
					t.Fatalf("a fused decode step allocates %v times; want 0", a)
				}
			})
		}
	}
}

// swiglu's inline exponential gives what run.c's formula with a correctly
// rounded expf gives, z·(1/(1 + float32(e^−z)))·h, bit for bit on a sweep
// of arguments (a 1-ulp difference is allowed in at most one case in 10^5,
// where the 4e-14 error of its exponential straddles a float32 rounding
// boundary), and on the edges: the z > 18 and z < −89 shortcuts, the
// subnormal range of e^−z, ±Inf, ±0 and NaN.
func TestSwigluMatchesExpf(t *testing.T) {
	ref := func(z, h float32) float32 {
		return z * (1 / (1 + float32(math.Exp(float64(-z))))) * h
	}
	var zs []float32
	for i := 0; i <= 400000; i++ {
		zs = append(zs, float32(-100+200*float64(i)/400000))
	}
	zs = append(zs, 0, float32(math.Copysign(0, -1)), 17.999, 18, 18.001, -88.72, -88.73, -89, -89.001, 87.5, 100,
		float32(math.Inf(1)), float32(math.Inf(-1)), math.MaxFloat32, -math.MaxFloat32)
	hb := append([]float32(nil), zs...)
	hb2 := make([]float32, len(zs))
	for i := range hb2 {
		hb2[i] = 1.5 - float32(i%3)
	}
	swiglu(hb, hb2)
	off := 0
	for i, z := range zs {
		want := ref(z, hb2[i])
		got := hb[i]
		if math.Float32bits(got) == math.Float32bits(want) {
			continue
		}
		if d := math.Float32bits(got) - math.Float32bits(want); math.IsNaN(float64(want)) || (d != 1 && d != 1<<32-1) {
			t.Fatalf("swiglu(%v)·%v = %v, want %v", z, hb2[i], got, want)
		}
		off++
	}
	t.Logf("%d of %d results 1 ulp off", off, len(zs))
	if off > len(zs)/100000 {
		t.Fatalf("%d of %d results are 1 ulp off", off, len(zs))
	}
	nan := []float32{float32(math.NaN())}
	swiglu(nan, []float32{1})
	if !math.IsNaN(float64(nan[0])) {
		t.Fatalf("swiglu(NaN) = %v", nan[0])
	}
}
