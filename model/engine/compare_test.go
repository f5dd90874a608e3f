package engine

import (
	"testing"

	"github.com/stride-lm/stride/model"
)

func TestCompareSameTokensAndFusedCopiesLess(t *testing.T) {
	m := tinyGQA(t)
	specs := mixedRequests()[:3]
	cmp, err := Compare(m, Options{BlockSize: 8}, func() []Request { return build(specs, m.Config.VocabSize) })
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.TokensIdentical {
		t.Fatalf("paths disagree: naive %v fused %v", cmp.Naive.Tokens, cmp.Fused.Tokens)
	}
	if cmp.MaxAbsDeltaLogit > 1e-3 || cmp.MaxAbsDeltaLogit < 0 {
		t.Fatalf("max |Δlogit| = %g", cmp.MaxAbsDeltaLogit)
	}
	if cmp.Naive.Stats.BytesCopied <= cmp.Fused.Stats.BytesCopied || cmp.Naive.Stats.CopyOps <= cmp.Fused.Stats.CopyOps {
		t.Fatalf("naive copied %v, fused %v: the naive path must copy more", cmp.Naive.Stats, cmp.Fused.Stats)
	}
	if cmp.Naive.DecodeTokens != cmp.Fused.DecodeTokens || cmp.Naive.DecodeTokens == 0 {
		t.Fatalf("decode tokens naive %d fused %d", cmp.Naive.DecodeTokens, cmp.Fused.DecodeTokens)
	}
}

func TestContextRequestsBounds(t *testing.T) {
	m := tinyGQA(t)
	if _, err := contextRequests(m.Config, m.Config.SeqLen, 1); err == nil {
		t.Fatal("a context filling seq_len leaves no room for decode and must be refused")
	}
	mk, err := contextRequests(m.Config, 32, 4)
	if err != nil {
		t.Fatal(err)
	}
	r := mk()[0]
	if len(r.Prompt) != 32 || r.Prompt[0] != model.BOSID || r.Steps != 36 {
		t.Fatalf("bad sweep request: %d tokens, steps %d", len(r.Prompt), r.Steps)
	}
	for _, tok := range r.Prompt {
		if tok < 0 || tok >= m.Config.VocabSize {
			t.Fatalf("token %d outside vocab", tok)
		}
	}
}
