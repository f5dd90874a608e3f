// Package kvcache is Stride's paged KV cache, in the manner of vLLM's
// PagedAttention.
//
// Each layer keeps a K cache and a V cache laid out
//
//	[num_blocks, block_size, n_kv_heads, head_dim]
//
// so the element (block b, slot-in-block s, head h, dim d) lives at
//
//	b·kv_block_stride + s·kv_token_stride + h·kv_head_stride + d
//	kv_block_stride = block_size·n_kv_heads·head_dim
//	kv_token_stride = n_kv_heads·head_dim
//	kv_head_stride  = head_dim
//
// A sequence owns a block table: the list of block ids holding its
// positions in order. Position p of a sequence lives in slot
//
//	slot = block_table[p / block_size]·block_size + p % block_size
//
// and the slot mapping of a step lists that slot for every new token.
// Attention kernels receive the block tables themselves and walk them in
// place; nothing gathers a sequence's KV into a contiguous tensor.
package kvcache
