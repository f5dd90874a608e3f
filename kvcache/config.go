package kvcache

import (
	"fmt"
	"math"

	"github.com/stride-lm/stride/tensor"
)

// Config sizes a paged KV cache.
//
// The pool is NumBlocks blocks; each block holds BlockSize token slots of
// every layer's K and V, so one block costs
//
//	bytes_per_block = block_size · bytes_per_token
//	bytes_per_token = 2 · n_layers · n_kv_heads · head_dim · elem_size
//
// (the 2 is K and V). Setting NumBlocks to 0 derives it from MemoryBudget:
// NumBlocks = ⌊MemoryBudget / bytes_per_block⌋, which is how vLLM sizes
// its pool from gpu_memory_utilization.
type Config struct {
	NumLayers  int // transformer layers: one K and one V cache tensor each
	NumKVHeads int // key/value heads (n_kv_heads < n_heads is GQA)
	HeadDim    int // width of one head
	BlockSize  int // token slots per block
	NumBlocks  int // blocks in the pool; 0 = derive from MemoryBudget

	// MemoryBudget is the byte budget of the whole cache (all layers, K
	// and V). It sets NumBlocks when NumBlocks is 0; when both are set,
	// NumBlocks must fit in it. ParseBytes reads strings like "64MiB".
	MemoryBudget int64

	// DType is the storage type of the cache: F32, F16 or BF16. Kernels
	// compute in float32 and round on the cache write.
	DType tensor.DType

	// DisablePrefixSharing turns off prefix caching: AddSequence then
	// never shares blocks and always reports 0 cached tokens. The zero
	// value (sharing on) is the normal mode; the switch exists to measure
	// what sharing saves.
	DisablePrefixSharing bool

	// PrefixAlignBlocks makes AddSequence share a cached prefix only in
	// whole multiples of this many blocks (0 or 1: any number of blocks).
	// An attention kernel that splits a prefill into query tiles counted
	// from its first new token computes a prompt's suffix exactly as it
	// computes it inside the whole prompt when the suffix starts at a
	// multiple of its tile: the scheduler sets this to that alignment, so
	// a prefix hit cannot change a sequence's logits.
	PrefixAlignBlocks int
}

// maxConfigDim bounds every size of a Config so the byte products below
// cannot overflow int64 whatever a config file says.
const maxConfigDim = 1 << 20

// Validate checks the sizes and the dtype, and that the pool resolves to at
// least one block whose slots are addressable by an int32 slot mapping.
func (c Config) Validate() error {
	_, err := c.Blocks()
	return err
}

func (c Config) validateShape() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"num_layers", c.NumLayers}, {"num_kv_heads", c.NumKVHeads}, {"head_dim", c.HeadDim}, {"block_size", c.BlockSize}} {
		if f.v <= 0 {
			return fmt.Errorf("kvcache: config: %s must be > 0 (got %d)", f.name, f.v)
		}
		if f.v > maxConfigDim {
			return fmt.Errorf("kvcache: config: %s = %d is beyond the supported maximum %d", f.name, f.v, maxConfigDim)
		}
	}
	if c.DType > tensor.BF16 {
		return fmt.Errorf("kvcache: config: unknown dtype %v (want float32, float16 or bfloat16)", c.DType)
	}
	if c.NumBlocks < 0 {
		return fmt.Errorf("kvcache: config: num_blocks must be >= 0 (got %d)", c.NumBlocks)
	}
	if c.PrefixAlignBlocks < 0 || c.PrefixAlignBlocks > maxConfigDim {
		return fmt.Errorf("kvcache: config: prefix_align_blocks must be in [0, %d] (got %d)", maxConfigDim, c.PrefixAlignBlocks)
	}
	if c.MemoryBudget < 0 {
		return fmt.Errorf("kvcache: config: memory_budget must be >= 0 (got %d)", c.MemoryBudget)
	}
	return nil
}

// BytesPerToken is the cache memory one token position costs across the
// whole model: 2·n_layers·n_kv_heads·head_dim·elem_size bytes (K and V of
// every layer). It is 0 for an invalid config.
func (c Config) BytesPerToken() int64 {
	if c.validateShape() != nil {
		return 0
	}
	// Each size is ≤ 2^20, so the product can reach 2·2^60·4 = 2^63 and
	// overflow int64: test the magnitude in float64, then compute exactly.
	f := 2 * float64(c.NumLayers) * float64(c.NumKVHeads) * float64(c.HeadDim) * float64(c.DType.Size())
	if f >= math.MaxInt64/2 {
		return 0
	}
	return 2 * int64(c.NumLayers) * int64(c.NumKVHeads) * int64(c.HeadDim) * int64(c.DType.Size())
}

// BytesPerBlock is block_size·BytesPerToken: the memory one pool block
// costs across all layers, K and V. It is 0 for an invalid config.
func (c Config) BytesPerBlock() int64 {
	bpt := c.BytesPerToken()
	if bpt == 0 || bpt > math.MaxInt64/int64(c.BlockSize) {
		return 0
	}
	return bpt * int64(c.BlockSize)
}

// Blocks validates c and returns the number of blocks the pool will have:
// NumBlocks, or ⌊MemoryBudget / BytesPerBlock⌋ when NumBlocks is 0.
func (c Config) Blocks() (int, error) {
	if err := c.validateShape(); err != nil {
		return 0, err
	}
	bpb := c.BytesPerBlock()
	if bpb == 0 {
		return 0, fmt.Errorf("kvcache: config: one block (%d layers × %d kv heads × %d head_dim × %d slots) overflows int64 bytes",
			c.NumLayers, c.NumKVHeads, c.HeadDim, c.BlockSize)
	}
	n := int64(c.NumBlocks)
	switch {
	case n == 0 && c.MemoryBudget == 0:
		return 0, fmt.Errorf("kvcache: config: set num_blocks or memory_budget")
	case n == 0:
		n = c.MemoryBudget / bpb
		if n == 0 {
			return 0, fmt.Errorf("kvcache: config: memory budget %s is smaller than one block (%s = block_size %d × %s per token)",
				formatBytes(c.MemoryBudget), formatBytes(bpb), c.BlockSize, formatBytes(c.BytesPerToken()))
		}
	case c.MemoryBudget > 0 && n > c.MemoryBudget/bpb:
		return 0, fmt.Errorf("kvcache: config: %d blocks of %s do not fit the memory budget %s",
			n, formatBytes(bpb), formatBytes(c.MemoryBudget))
	}
	// Slot ids are int32 (vLLM's slot_mapping dtype): every slot
	// block·block_size + offset must fit.
	if n > math.MaxInt32/int64(c.BlockSize) {
		return 0, fmt.Errorf("kvcache: config: %d blocks × block_size %d = %d slots exceed the int32 slot range",
			n, c.BlockSize, n*int64(c.BlockSize))
	}
	// One layer's K tensor holds num_blocks·block_size·n_kv_heads·head_dim
	// elements; keep it inside the tensor package's numel bound.
	if float64(n)*float64(c.BlockSize)*float64(c.NumKVHeads)*float64(c.HeadDim) > 1<<53 {
		return 0, fmt.Errorf("kvcache: config: a %d-block layer cache has more than 2^53 elements", n)
	}
	return int(n), nil
}

// Layout returns the shape of one layer's K (or V) cache tensor once the
// block count is resolved (see Blocks).
func (c Config) Layout() (Layout, error) {
	n, err := c.Blocks()
	if err != nil {
		return Layout{}, err
	}
	return Layout{NumBlocks: n, BlockSize: c.BlockSize, NumKVHeads: c.NumKVHeads, HeadDim: c.HeadDim}, nil
}
