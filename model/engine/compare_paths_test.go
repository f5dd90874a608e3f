package engine

import (
	"path/filepath"
	"testing"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/tensor"
)

// pathPrompts are the 16 prompts of the naive/fused agreement test.
var pathPrompts = []string{"Lucy went to", "Once upon a time", "The cat sat", "Lily and Ben went to the park",
	"Tom had a red car", "The dog ran and ran", "The sun was hot", "Sam was sad", "One day, a little bird",
	"Once upon a time, there was a big cat", "Mom said", "The little girl", "A boy named Tim", "The tree was",
	"She liked to play", "They went to the beach"}

// TestPathsAgreeOnStories260K: the naive and the fused path share every
// matmul, norm and activation kernel, so on stories260K their greedy
// tokens are equal over 16 prompts of 256 positions for --weights f32,
// f16 and bf16, their logits within 1e-4. With q8_0 the activations are
// quantized to int8 before every matmul, which turns the attention
// arithmetic's last-bit differences (online against materialized
// softmax) into quantization steps; there the test requires that where
// the tokens part, Compare reports it, both picks are greedy (margins ≥ 0)
// and the logits' difference there exceeds the margin that separated
// them (the flip is a near tie, not a wrong kernel).
func TestPathsAgreeOnStories260K(t *testing.T) {
	_, tok := stories260K(t)
	var prompts [][]int
	for _, p := range pathPrompts {
		ids, err := tok.Encode(p, true, false)
		if err != nil {
			t.Fatal(err)
		}
		prompts = append(prompts, ids)
	}
	if testing.Short() {
		prompts = prompts[:4]
	}
	reqs := func() []Request {
		var rs []Request
		for _, p := range prompts {
			rs = append(rs, Request{Prompt: p, Steps: 256, Sampler: model.NewSampler(512, 0, 0.9, 1)})
		}
		return rs
	}
	for _, w := range []string{"f32", "f16", "bf16", "q8_0"} {
		t.Run(w, func(t *testing.T) {
			dt := tensor.F32
			if w != "q8_0" {
				var err error
				if dt, err = tensor.ParseDType(w); err != nil {
					t.Fatal(err)
				}
			}
			m, err := loadCheckpoint(filepath.Join(sharedDir(t), "models", "stories260K.bin"), model.LoadOptions{WeightDType: dt})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if w == "q8_0" {
				if err := model.QuantizeQ8_0(m, 0); err != nil {
					t.Fatal(err)
				}
			}
			cmp, err := Compare(m, Options{}, reqs)
			if err != nil {
				t.Fatal(err)
			}
			if w != "q8_0" {
				if !cmp.TokensIdentical || cmp.First != nil || cmp.MaxAbsDeltaLogit > 1e-4 {
					t.Fatalf("paths disagree: tokens identical %v, max |Δlogit| %g, first %+v", cmp.TokensIdentical, cmp.MaxAbsDeltaLogit, cmp.First)
				}
				return
			}
			if cmp.TokensIdentical {
				if cmp.First != nil {
					t.Fatalf("identical tokens but a divergence reported: %+v", cmp.First)
				}
				return
			}
			d := cmp.First
			if d == nil {
				t.Fatal("tokens differ but no divergence reported")
			}
			t.Logf("first divergence: %+v", *d)
			if d.NaiveMargin < 0 || d.FusedMargin < 0 || d.NaiveMargin+d.FusedMargin > 2*d.DeltaLogit {
				t.Fatalf("divergence %+v is not a near tie: a kernel differs between the paths", *d)
			}
		})
	}
}

// TestFirstDivergence: the earliest differing token over all requests,
// its picks and their margins read off the logits of its position.
func TestFirstDivergence(t *testing.T) {
	naive := [][]int{{5, 6, 7, 8}, {1, 2, 0}}
	fused := [][]int{{5, 6, 7, 9}, {1, 2, 3}}
	nl := map[logitKey][]float32{{0, 3}: {0, 0, 0, 0, 0, 0, 0, 0, 1.0, 0.9}, {1, 2}: {2.0, 0, 0, 1.5}}
	fl := map[logitKey][]float32{{0, 3}: {0, 0, 0, 0, 0, 0, 0, 0, 0.95, 1.0}, {1, 2}: {1.0, 0, 0, 1.25}}
	d := firstDivergence(naive, fused, nl, fl)
	want := Divergence{Seq: 1, Pos: 2, NaiveToken: 0, FusedToken: 3, DeltaLogit: 1.0, NaiveMargin: 0.5, FusedMargin: 0.25}
	if d == nil || *d != want {
		t.Fatalf("got %+v, want %+v", d, want)
	}
	if d := firstDivergence(naive[:1], naive[:1], nl, fl); d != nil {
		t.Fatalf("equal tokens: got %+v", d)
	}
}
