package kvcache

import (
	"strings"
	"testing"

	"github.com/stride-lm/stride/tensor"
)

func TestBytesPerTokenFormula(t *testing.T) {
	// Hand-computed from 2·n_layers·n_kv_heads·head_dim·elem_size.
	for _, tc := range []struct {
		name string
		cfg  Config
		want int64
	}{
		// llama2.c stories260K: dim 64, 8 heads, 4 kv heads → head_dim 8, 5 layers, f32.
		{"stories260K f32", Config{NumLayers: 5, NumKVHeads: 4, HeadDim: 8, DType: tensor.F32}, 2 * 5 * 4 * 8 * 4},
		// Llama-2-7B, MHA: 32 layers, 32 kv heads of 128, f16 → 512 KiB per token.
		{"llama2-7b f16 MHA", Config{NumLayers: 32, NumKVHeads: 32, HeadDim: 128, DType: tensor.F16}, 524288},
		// Llama-2-70B, GQA: 80 layers, 8 kv heads of 128, f16 → 320 KiB per token.
		{"llama2-70b f16 GQA", Config{NumLayers: 80, NumKVHeads: 8, HeadDim: 128, DType: tensor.F16}, 327680},
		{"bf16 is 2 bytes", Config{NumLayers: 1, NumKVHeads: 1, HeadDim: 1, DType: tensor.BF16}, 4},
	} {
		tc.cfg.BlockSize = 16
		if got := tc.cfg.BytesPerToken(); got != tc.want {
			t.Errorf("%s: BytesPerToken = %d, want %d", tc.name, got, tc.want)
		}
		if got := tc.cfg.BytesPerBlock(); got != 16*tc.want {
			t.Errorf("%s: BytesPerBlock = %d, want %d", tc.name, got, 16*tc.want)
		}
	}
}

func TestConfigBlocksFromBudget(t *testing.T) {
	cfg := Config{NumLayers: 2, NumKVHeads: 2, HeadDim: 4, BlockSize: 8, DType: tensor.F32}
	bpb := int64(2 * 2 * 2 * 4 * 4 * 8) // 1024 bytes per block
	if cfg.BytesPerBlock() != bpb {
		t.Fatalf("BytesPerBlock = %d, want %d", cfg.BytesPerBlock(), bpb)
	}
	cfg.MemoryBudget = 10*bpb + bpb/2 // rounds down to 10 blocks
	if n, err := cfg.Blocks(); err != nil || n != 10 {
		t.Fatalf("Blocks = %d, %v; want 10", n, err)
	}
	cfg.NumBlocks = 10 // fits exactly
	if n, err := cfg.Blocks(); err != nil || n != 10 {
		t.Fatalf("explicit Blocks = %d, %v; want 10", n, err)
	}
	cfg.NumBlocks = 11 // does not fit the budget
	if _, err := cfg.Blocks(); err == nil || !strings.Contains(err.Error(), "budget") {
		t.Fatalf("11 blocks in a 10.5-block budget: err = %v", err)
	}
	cfg.NumBlocks, cfg.MemoryBudget = 0, bpb-1
	if _, err := cfg.Blocks(); err == nil || !strings.Contains(err.Error(), "smaller than one block") {
		t.Fatalf("sub-block budget: err = %v", err)
	}
}

func TestConfigValidateErrors(t *testing.T) {
	ok := Config{NumLayers: 1, NumKVHeads: 1, HeadDim: 1, BlockSize: 1, NumBlocks: 1, DType: tensor.F32}
	if err := ok.Validate(); err != nil {
		t.Fatalf("minimal config: %v", err)
	}
	for _, tc := range []struct {
		name, want string
		mut        func(*Config)
	}{
		{"zero layers", "num_layers", func(c *Config) { c.NumLayers = 0 }},
		{"negative heads", "num_kv_heads", func(c *Config) { c.NumKVHeads = -1 }},
		{"zero head dim", "head_dim", func(c *Config) { c.HeadDim = 0 }},
		{"zero block size", "block_size", func(c *Config) { c.BlockSize = 0 }},
		{"huge block size", "block_size", func(c *Config) { c.BlockSize = 1 << 30 }},
		{"negative blocks", "num_blocks", func(c *Config) { c.NumBlocks = -3 }},
		{"negative budget", "memory_budget", func(c *Config) { c.MemoryBudget = -1 }},
		{"neither set", "num_blocks or memory_budget", func(c *Config) { c.NumBlocks = 0 }},
		{"bad dtype", "dtype", func(c *Config) { c.DType = tensor.DType(9) }},
		{"int32 slots", "int32", func(c *Config) { c.BlockSize = 1 << 16; c.NumBlocks = 1 << 16 }},
		{"numel", "2^53", func(c *Config) {
			c.NumKVHeads, c.HeadDim, c.BlockSize, c.NumBlocks = 1<<20, 1<<20, 1<<10, 1<<10
		}},
		{"overflowing block", "overflows", func(c *Config) {
			c.NumLayers, c.NumKVHeads, c.HeadDim, c.BlockSize = 1<<20, 1<<20, 1<<20, 1<<20
		}},
	} {
		c := ok
		tc.mut(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to mention %q", tc.name, err, tc.want)
		}
		if _, err := New(nil, c); err == nil {
			t.Errorf("%s: New accepted the config", tc.name)
		}
	}
	big := Config{NumLayers: 1 << 20, NumKVHeads: 1 << 20, HeadDim: 1 << 20, BlockSize: 1, DType: tensor.F32}
	if big.BytesPerToken() != 0 || big.BytesPerBlock() != 0 {
		t.Errorf("overflowing config: BytesPerToken %d BytesPerBlock %d, want 0", big.BytesPerToken(), big.BytesPerBlock())
	}
	if (Config{}).BytesPerToken() != 0 {
		t.Error("zero config has a nonzero BytesPerToken")
	}
}
