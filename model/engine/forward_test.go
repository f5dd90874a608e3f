package engine

import (
	"fmt"
	"math"
	"testing"

	"github.com/stride-lm/stride/attention"
	"github.com/stride-lm/stride/kvcache"
	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/tensor"
)

// The scheduler adds nothing to the arithmetic: a sequence run through
// Generate samples from exactly the logits a bare loop over
// model.Forward and a paged cache computes (its prompt in one prefill,
// then one token per step), bit for bit, on both paths and every KV
// dtype. Package model's tests drive that bare loop (stepper_test.go) in
// place of the engine, which is why it must agree.
func TestGenerateEqualsBareForwardLoop(t *testing.T) {
	m := tinyGQA(t)
	c := m.Config
	prompt := []int{model.BOSID, 5, 6, 7, 9}
	const steps = 40
	for _, kv := range []tensor.DType{tensor.F32, tensor.BF16} {
		for _, path := range []string{"fused", "naive"} {
			t.Run(fmt.Sprintf("%v/%s", kv, path), func(t *testing.T) {
				var got [][]float32
				e := newEngine(t, m, Options{Path: path, KVDType: kv, OnLogits: func(seq, pos int, lg []float32) {
					got = append(got, append([]float32(nil), lg...))
				}})
				res, _, err := e.Generate([]Request{{Prompt: prompt, Steps: steps, Sampler: model.NewSampler(c.VocabSize, 0, 0, 1)}}, nil)
				if err != nil || res[0].Err != nil {
					t.Fatal(err, res[0].Err)
				}
				fed := append(append([]int(nil), prompt...), res[0].Tokens[len(prompt)-1:]...)
				want := bareLoop(t, m, path, kv, fed[:len(prompt)+len(got)-1], len(prompt))
				if len(want) != len(got) {
					t.Fatalf("%d logit vectors from Generate, %d from the bare loop", len(got), len(want))
				}
				for i := range want {
					for j := range want[i] {
						if math.Float32bits(got[i][j]) != math.Float32bits(want[i][j]) {
							t.Fatalf("step %d logit %d: Generate %v, bare loop %v", i, j, got[i][j], want[i][j])
						}
					}
				}
			})
		}
	}
}

// bareLoop feeds tokens through a Forward over a fresh paged cache: the
// first prefill tokens in one step, then one per step, and returns the
// logits of each step's last token.
func bareLoop(t *testing.T, m *model.Model, path string, kv tensor.DType, tokens []int, prefill int) [][]float32 {
	t.Helper()
	c := m.Config
	p, proj, err := newPath(path, attention.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := model.NewForward(m, model.ForwardOptions{Projection: proj, Path: p})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cache, err := kvcache.New(nil, kvcache.Config{NumLayers: c.NLayers, NumKVHeads: c.NKVHeads, HeadDim: c.HeadDim(),
		BlockSize: 16, NumBlocks: (c.SeqLen + 15) / 16, DType: kv})
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Release()
	var caches []model.LayerCache
	for l := 0; l < c.NLayers; l++ {
		k, v := cache.Layer(l)
		caches = append(caches, model.LayerCache{K: k, V: v})
	}
	if _, err := cache.AddSequence(0, tokens[:prefill]); err != nil {
		t.Fatal(err)
	}
	var out [][]float32
	for start, n := 0, prefill; start < len(tokens); start, n = start+n, 1 {
		slots, err := cache.Slots(0, start, n)
		if err != nil {
			t.Fatal(err)
		}
		table, err := cache.BlockTable(0)
		if err != nil {
			t.Fatal(err)
		}
		pos := make([]int, n)
		for i := range pos {
			pos[i] = start + i
		}
		lg, err := f.Run(tokens[start:start+n], pos, newBatch(n, start+n, table, slots), caches, []int{n - 1})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, append([]float32(nil), lg...))
	}
	return out
}
