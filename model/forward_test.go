package model

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/stride-lm/stride/attention"
	"github.com/stride-lm/stride/tensor"
	"github.com/stride-lm/stride/tensor/testfixture"
)

// denseCaches allocates per-layer caches big enough for one sequence of
// seqLen tokens laid out in blocks 0, 1, 2, … (a linear block table).
func denseCaches(t testing.TB, c Config, blockSize, blocks int) []LayerCache {
	t.Helper()
	caches := make([]LayerCache, c.NLayers)
	for l := range caches {
		caches[l].K = tensor.Must(tensor.Zeros(nil, tensor.F32, blocks, blockSize, c.NKVHeads, c.HeadDim()))
		caches[l].V = tensor.Must(tensor.Zeros(nil, tensor.F32, blocks, blockSize, c.NKVHeads, c.HeadDim()))
	}
	return caches
}

// greedyOneByOne runs run.c's generation loop (no prompt: BOS then argmax)
// one token per Forward.Run, returning the `next` ids.
func greedyOneByOne(t *testing.T, m *Model, path attention.Path, proj Projection, steps int) []int {
	t.Helper()
	f, err := NewForward(m, ForwardOptions{Projection: proj, Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const bs = 16
	caches := denseCaches(t, m.Config, bs, (steps+bs-1)/bs)
	s := NewSampler(m.Config.VocabSize, 0, 0.9, 1)
	token := BOSID
	var ids []int
	for pos := 0; pos < steps; pos++ {
		b, _, err := attention.NewLinearBatch([]int{1}, []int{pos + 1}, bs)
		if err != nil {
			t.Fatal(err)
		}
		logits, err := f.Run([]int{token}, []int{pos}, b, caches, []int{0})
		if err != nil {
			t.Fatal(err)
		}
		next := s.Sample(logits)
		if next == BOSID {
			break
		}
		ids = append(ids, next)
		token = next
	}
	return ids
}

// TestGoldenStories260KForward reproduces llama2.c's greedy output for
// stories260K (run stories260K.bin -z tok512.bin -t 0.0 -n 256) token for
// token, through both projections and both attention paths.
func TestGoldenStories260KForward(t *testing.T) {
	dir := sharedDir(t)
	m, err := Load(filepath.Join(dir, "models", "stories260K.bin"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := testfixture.ReadIDs(t, filepath.Join(dir, "models", "golden", "stories260K.greedy.ids"))
	for _, tc := range []struct {
		name string
		path attention.Path
		proj Projection
	}{
		{"fused", attention.NewFused(attention.Options{}), FusedQKV},
		{"naive", attention.NewNaive(attention.Options{}), SeparateQKV},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() && tc.name == "naive" {
				t.Skip("-short: the naive path's golden run is covered without -short")
			}
			got := greedyOneByOne(t, m, tc.path, tc.proj, 256)
			if len(got) != len(want) {
				t.Fatalf("got %d ids, want %d", len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("id %d: got %d, want %d (first 20 got %v)", i, got[i], want[i], got[:min(20, len(got))])
				}
			}
		})
	}
}

// TestForwardMatchesFloat64Reference checks Forward.Run's logits against a
// float64 implementation of run.c's forward pass on synthetic MHA, GQA
// and MQA models, with the whole prompt processed as one batched prefill.
func TestForwardMatchesFloat64Reference(t *testing.T) {
	for _, kv := range []int{4, 2, 1} {
		c := Config{Dim: 32, HiddenDim: 48, NLayers: 2, NHeads: 4, NKVHeads: kv, VocabSize: 40, SeqLen: 32,
			RopeTheta: 10000, NormEps: 1e-5}
		m, err := Synthesize(c, uint64(100+kv))
		if err != nil {
			t.Fatal(err)
		}
		ref := newRefModel(t, m).forward([]int{1, 5, 9, 13, 2, 7, 30, 3, 11})
		for _, proj := range []Projection{FusedQKV, SeparateQKV} {
			var path attention.Path = attention.NewFused(attention.Options{})
			if proj == SeparateQKV {
				path = attention.NewNaive(attention.Options{})
			}
			f, err := NewForward(m, ForwardOptions{Projection: proj, Path: path})
			if err != nil {
				t.Fatal(err)
			}
			tokens := []int{1, 5, 9, 13, 2, 7, 30, 3, 11}
			pos := []int{0, 1, 2, 3, 4, 5, 6, 7, 8}
			b, _, err := attention.NewLinearBatch([]int{9}, []int{9}, 4)
			if err != nil {
				t.Fatal(err)
			}
			caches := denseCaches(t, c, 4, 3)
			rows := []int{0, 4, 8}
			logits, err := f.Run(tokens, pos, b, caches, rows)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range rows {
				for v := 0; v < c.VocabSize; v++ {
					got, want := float64(logits[i*c.VocabSize+v]), ref[r][v]
					if math.Abs(got-want) > 1e-4*math.Max(1, math.Abs(want)) {
						t.Fatalf("kv=%d proj=%d row %d vocab %d: got %g, want %g", kv, proj, r, v, got, want)
					}
				}
			}
		}
	}
}

// TestViewsKeptPerRowCount: the q, k, v views are built once per step
// size, so steps alternating between 1 and 3 tokens (a decode step and a
// two-draft verify step) allocate none, for both projections, and each
// size gets views of its own row count.
func TestViewsKeptPerRowCount(t *testing.T) {
	m := mustSynth(t, tinyConfig(false), 1)
	for _, proj := range []Projection{FusedQKV, SeparateQKV} {
		f, err := NewForward(m, ForwardOptions{Projection: proj, Path: attention.NewNaive(attention.Options{}), Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		f.grow(3, 3)
		step := func() {
			for _, T := range []int{1, 3} {
				q, k, v, err := f.views(T)
				if err != nil {
					t.Fatal(err)
				}
				for _, x := range []*tensor.Tensor{q, k, v} {
					if n, _ := x.Size(0); n != T {
						t.Fatalf("projection %d: a %d-token step got a view of %d rows", proj, T, n)
					}
				}
			}
		}
		step()
		if a := testing.AllocsPerRun(20, step); a != 0 {
			t.Fatalf("projection %d: alternating step sizes allocate %v times per pair; want 0", proj, a)
		}
	}
}
