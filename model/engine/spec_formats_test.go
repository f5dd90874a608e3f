package engine

import (
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stride-lm/stride/model"
)

// TestSpeculativeLoopingFormats: greedy output with n-gram speculation is
// the plain run's, id for id over 300 positions, and every sampled logit
// vector is the same bits, in every weight format whose multi-row verify
// once rounded differently from decode: the llama.cpp-made synthetic GGUF
// model (whose greedy output loops, so drafts are accepted) in F32, Q8_0
// and Q4_K_M, and stories260K with --weights q8_0 on "Lucy went to"
// (whose greedy output diverged from token 85 before issue 26).
func TestSpeculativeLoopingFormats(t *testing.T) {
	dir := sharedDir(t)
	for _, tc := range []struct{ name, file string }{
		{"synthetic F32", "gguf/synthetic-k256-f32.gguf"},
		{"synthetic Q8_0", "gguf/synthetic-k256-q8_0.gguf"},
		{"synthetic Q4_K_M", "gguf/synthetic-k256-q4_k_m.gguf"},
		{"stories260K q8_0", "stories260K.bin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := loadCheckpoint(filepath.Join(dir, "models", tc.file), model.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { m.Close() })
			if tc.file == "stories260K.bin" {
				if err := model.QuantizeQ8_0(m, 0); err != nil {
					t.Fatal(err)
				}
			}
			prompt := []int{model.BOSID}
			if tc.file == "stories260K.bin" {
				_, tok := stories260K(t)
				if prompt, err = tok.Encode("Lucy went to", true, false); err != nil {
					t.Fatal(err)
				}
			}
			steps := min(300, m.Config.SeqLen)
			var ids [2][]int
			var logits [2]map[int][]uint32
			for i, spec := range []Speculation{{}, {Method: "ngram"}} {
				lg := map[int][]uint32{}
				logits[i] = lg
				e := newEngine(t, m, Options{Speculation: spec, OnLogits: func(_, pos int, l []float32) {
					bits := make([]uint32, len(l))
					for j, v := range l {
						bits[j] = math.Float32bits(v)
					}
					lg[pos] = bits
				}})
				res, _, err := e.Generate([]Request{{Prompt: prompt, Steps: steps, Sampler: model.NewSampler(m.Config.VocabSize, 0, 0.9, 1)}}, nil)
				if err != nil {
					t.Fatal(err)
				}
				if res[0].Err != nil {
					t.Fatal(res[0].Err)
				}
				ids[i] = res[0].Tokens
				if spec.On() {
					t.Logf("%d tokens, %d verify steps, %d drafted, %d accepted", len(res[0].Tokens), res[0].VerifySteps, res[0].DraftTokens, res[0].AcceptedTokens)
					if res[0].AcceptedTokens < 5 {
						t.Fatalf("only %d drafts accepted: the output does not loop enough to test verification", res[0].AcceptedTokens)
					}
				}
			}
			if len(ids[0]) < 256 {
				t.Fatalf("only %d tokens generated, want >= 256", len(ids[0]))
			}
			if i := firstDiff(ids[0], ids[1]); i >= 0 {
				t.Fatalf("speculation changed greedy output from token %d:\n off %v\n  on %v", i, ids[0], ids[1])
			}
			for pos, want := range logits[0] {
				if !slices.Equal(logits[1][pos], want) {
					t.Fatalf("position %d: logits with speculation are not the plain run's bits", pos)
				}
			}
		})
	}
}

// firstDiff is the first index where a and b differ, or -1 if they are
// equal.
func firstDiff(a, b []int) int {
	if slices.Equal(a, b) {
		return -1
	}
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
