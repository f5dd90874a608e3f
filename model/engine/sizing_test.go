package engine

import (
	"strings"
	"testing"

	"github.com/stride-lm/stride/model"
)

// KVPool is the one pool formula: NumBlocks, else KVMemory, else
// DefaultKVSequences sequences of Context (seq_len when 0 or larger).
func TestKVPool(t *testing.T) {
	c := model.Config{Dim: 64, HiddenDim: 172, NLayers: 5, NHeads: 8, NKVHeads: 4, VocabSize: 512, SeqLen: 512,
		RopeTheta: 10000, NormEps: 1e-5}
	for _, tc := range []struct {
		opts       Options
		blocks     int
		wantBudget int64
	}{
		{Options{}, 8 * 512 / 16, 0},
		{Options{BlockSize: 32}, 8 * 512 / 32, 0},
		{Options{Context: 100}, 8 * 7, 0}, // ceil(100/16) blocks per sequence
		{Options{Context: 4096}, 8 * 512 / 16, 0},
		{Options{NumBlocks: 3, Context: 100}, 3, 0},
		{Options{KVMemory: 1 << 20, Context: 100}, 0, 1 << 20},
	} {
		kc := KVPool(c, tc.opts)
		if kc.NumBlocks != tc.blocks || kc.MemoryBudget != tc.wantBudget || kc.NumLayers != 5 || kc.NumKVHeads != 4 || kc.HeadDim != 8 {
			t.Errorf("%+v: %+v, want %d blocks, budget %d", tc.opts, kc, tc.blocks, tc.wantBudget)
		}
	}
}

// A pool beyond physical memory is one error naming both sizes, from
// CheckMemory and from New, before anything is allocated.
func TestPoolBeyondPhysicalMemory(t *testing.T) {
	phys, err := PhysicalMemory()
	if err != nil {
		t.Skip(err)
	}
	m := tinyGQA(t)
	opts := Options{KVMemory: 2 * phys}
	if err := CheckMemory(m.Config, opts); err == nil || !strings.Contains(err.Error(), "physical memory") {
		t.Fatalf("CheckMemory: %v", err)
	}
	if _, err := New(m, opts); err == nil || !strings.Contains(err.Error(), "the KV cache pool") {
		t.Fatalf("New: %v", err)
	}
	if err := CheckMemory(m.Config, Options{}); err != nil {
		t.Fatalf("default pool: %v", err)
	}
}

// CheckWeights refuses weights beyond physical memory before they are
// drawn, passes a small model, and leaves an invalid config to its
// caller.
func TestCheckWeights(t *testing.T) {
	if _, err := PhysicalMemory(); err != nil {
		t.Skip(err)
	}
	c := model.Config{Dim: 64, HiddenDim: 172, NLayers: 5, NHeads: 8, NKVHeads: 4, VocabSize: 512, SeqLen: 512,
		RopeTheta: 10000, NormEps: 1e-5}
	if err := CheckWeights("the weights", c); err != nil {
		t.Errorf("a small model: %v", err)
	}
	huge := c
	huge.Dim, huge.HiddenDim, huge.NLayers, huge.NHeads, huge.NKVHeads = 65536, 262144, 64, 64, 64
	if err := CheckWeights("the weights", huge); err == nil || !strings.HasPrefix(err.Error(), "the weights would take") ||
		!strings.Contains(err.Error(), "physical memory") {
		t.Errorf("a model beyond memory: %v", err)
	}
	bad := huge
	bad.NHeads = 0
	if err := CheckWeights("the weights", bad); err != nil {
		t.Errorf("an invalid config is its caller's to report: %v", err)
	}
}

// ContextSize: 0 is min(seq_len, 4096), more than seq_len is seq_len
// (and says so), anything else is what was asked.
func TestContextSize(t *testing.T) {
	for _, tc := range []struct {
		seqLen, asked, want int
		clamped             bool
	}{
		{131072, 0, MaxDefaultContext, false}, {256, 0, 256, false}, {256, 100, 100, false},
		{256, 256, 256, false}, {256, 300, 256, true}, {131072, 8192, 8192, false},
	} {
		n, clamped := ContextSize(model.Config{SeqLen: tc.seqLen}, tc.asked)
		if n != tc.want || clamped != tc.clamped {
			t.Errorf("seq_len %d, asked %d: %d %v, want %d %v", tc.seqLen, tc.asked, n, clamped, tc.want, tc.clamped)
		}
	}
}
