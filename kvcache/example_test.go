package kvcache_test

import (
	"fmt"

	"github.com/stride-lm/stride/kvcache"
	"github.com/stride-lm/stride/tensor"
)

// BytesPerToken is 2·n_layers·n_kv_heads·head_dim·elem_size: GQA shrinks
// the cache by n_heads/n_kv_heads.
func ExampleConfig_BytesPerToken() {
	mha := kvcache.Config{NumLayers: 32, NumKVHeads: 32, HeadDim: 128, BlockSize: 16, DType: tensor.F16}
	gqa := mha
	gqa.NumKVHeads = 8
	fmt.Println(tensor.FormatBytes(mha.BytesPerToken()), tensor.FormatBytes(gqa.BytesPerToken()))
	fmt.Println(tensor.FormatBytes(gqa.BytesPerBlock()), "per block of 16 tokens")
	// Output:
	// 512.0 KiB 128.0 KiB
	// 2.0 MiB per block of 16 tokens
}

// A scheduler's view of the cache: add a prompt, compute the positions
// that are not cached, commit, decode; a second prompt with the same
// first block shares it.
func ExampleCache() {
	budget, _ := kvcache.ParseBytes("64KiB")
	c, err := kvcache.New(nil, kvcache.Config{
		NumLayers: 2, NumKVHeads: 2, HeadDim: 4, BlockSize: 4, MemoryBudget: budget, DType: tensor.F32,
	})
	if err != nil {
		panic(err)
	}
	// 2 (K,V) × 2 layers × 2 heads × 4 dims × 4 bytes = 128 bytes per token,
	// 512 per block of 4: 64 KiB holds 128 blocks.
	fmt.Println("blocks:", c.NumBlocks(), "bytes/token:", c.BytesPerToken())

	prompt := []int{1, 2, 3, 4, 5, 6}
	cached, _ := c.AddSequence(0, prompt)
	slots, _ := c.Slots(0, cached, len(prompt)-cached) // prefill: 6 new positions
	table, _ := c.BlockTable(0)
	fmt.Println("cached:", cached, "table:", table, "slots:", slots)
	// … the model runs, ReshapeAndCache writes K/V at those slots …
	_ = c.Commit(0, prompt)

	next, _ := c.Slots(0, len(prompt), 1) // decode step: position 6
	fmt.Println("decode slot:", next)

	cached, _ = c.AddSequence(1, []int{1, 2, 3, 4, 9, 9})
	table, _ = c.BlockTable(1)
	fmt.Println("second prompt cached:", cached, "table:", table)
	st := c.Stats()
	fmt.Println("used:", st.UsedBlocks, "shared:", st.SharedBlocks)

	_ = c.Free(0)
	_ = c.Free(1)
	fmt.Println("free:", c.FreeBlocks())
	// Output:
	// blocks: 128 bytes/token: 128
	// cached: 0 table: [0 1] slots: [0 1 2 3 4 5]
	// decode slot: [6]
	// second prompt cached: 4 table: [0 2]
	// used: 3 shared: 1
	// free: 128
}
