// Package kvcache is Stride's paged KV cache, in the manner of vLLM's
// PagedAttention.
//
// # Why a paged cache
//
// Decoding token t of a sequence needs the keys and values of all its
// earlier tokens in every layer. Recomputing them each step is quadratic,
// so they are cached. A naive cache gives every sequence a contiguous
// [max_seq_len, n_kv_heads, head_dim] slab per layer; most of it sits
// empty, because nobody knows in advance how long a sequence will run.
// PagedAttention borrows the operating system's answer: cut the cache into
// fixed-size blocks (pages) of block_size token slots, hand blocks to
// sequences as they grow, and keep a per-sequence block table (page
// table) from logical block i to physical block id. Waste is then at most
// one partly filled block per sequence.
//
// # Layout and strides
//
// Each layer keeps a K cache and a V cache tensor laid out
//
//	[num_blocks, block_size, n_kv_heads, head_dim]   row-major, contiguous
//
// so the element (block b, slot-in-block s, head h, dim d) lives at
//
//	b·kv_block_stride + s·kv_token_stride + h·kv_head_stride + d
//	kv_block_stride = block_size·n_kv_heads·head_dim
//	kv_token_stride = n_kv_heads·head_dim
//	kv_head_stride  = head_dim
//
// (Layout.BlockStride, TokenStride, HeadStride). Because kv_block_stride is
// exactly block_size·kv_token_stride, a global slot number
// slot = b·block_size + s addresses a whole token row at
// slot·kv_token_stride: one head_dim-wide vector per KV head, stored
// back to back. A block id means the same rows in every layer's K and V,
// so one block table serves the whole model.
//
// What one token costs is independent of the block size:
//
//	bytes_per_token = 2 · n_layers · n_kv_heads · head_dim · elem_size
//
// (2 for K and V). With grouped-query attention n_kv_heads < n_heads and
// the cache shrinks by n_heads/n_kv_heads: Llama-2-7B (32 layers, 32 KV
// heads of 128, f16) needs 512 KiB per token; the same shape with 8 KV
// heads needs 128 KiB.
//
// # Block tables and slot mapping
//
// A sequence owns a block table: the list of block ids holding its
// positions in order. Position p of a sequence lives in slot
//
//	slot = block_table[p / block_size]·block_size + p % block_size
//
// (Layout.Slot), and the slot mapping of a step lists that slot for every
// new token. ReshapeAndCache scatters the step's K and V rows into those
// slots, reading K and V through their own strides (typically views of a
// fused QKV buffer whose token stride is (n_heads+2·n_kv_heads)·head_dim),
// so nothing is made contiguous first. Attention kernels receive the block
// tables themselves and walk them in place; nothing gathers a sequence's
// KV into a contiguous tensor.
//
// # Lifecycle of a sequence
//
//	cached, err := c.AddSequence(id, prompt) // reserve blocks, share cached prefix
//	slots, err := c.Slots(id, cached, len(prompt)-cached)
//	// model: for each layer, c.Write(l, k, v, slots) (= ReshapeAndCache)
//	err = c.Commit(id, prompt)               // publish full blocks for sharing
//	for decoding {
//		slots, err = c.Slots(id, n, 1)       // n = ContextLen(id); grows the table
//		// model step, c.Write …
//		err = c.Commit(id, tokens)           // optional each step
//	}
//	err = c.Free(id)                         // finished, aborted or preempted
//
// A scheduler serving many sequences per step calls AppendStep instead of
// Slots: one call hands out the slots of every sequence of the step, all
// or nothing, and publishes each sequence's block table, saying which
// tables changed (grown, copied on write, truncated), so the rule for
// when a table changes lives here and nowhere else. PendingPrefixBlocks
// tells it when a waiting prompt would share blocks another sequence is
// computing in this very step, so it can admit that prompt one step later
// and reuse them.
//
// Slots hands positions out strictly in order (start must equal
// ContextLen); Truncate rewinds. Fork clones a sequence for parallel
// sampling. Every call that needs blocks either succeeds completely or
// returns ErrOutOfBlocks having changed nothing, so a scheduler can
// preempt someone and retry; CanEverFit rejects requests the whole pool
// could never hold (ErrExceedsPool).
//
// # Prefix sharing, copy-on-write, eviction
//
// Prompts often share a prefix (a system prompt, few-shot examples). The
// K/V of a position depend on every token up to it (causal attention), so
// a full block can be reused exactly when the whole token prefix through
// that block matches. Commit registers each full block under a chained
// hash h_i = SHA-256(h_{i-1} ‖ tokens of block i); AddSequence walks the
// new prompt's chain and shares every leading block it finds (reference
// count + 1) instead of allocating and recomputing it. At least the last
// prompt token is always recomputed, because its logits are needed; the
// block holding it is never shared, so prefix hits never copy.
//
// A block held by several tables is read-only. Before Slots hands out a
// slot in such a block (after Fork, whose last partial block is shared,
// or after a Truncate into a shared block) it copies on write: a fresh
// block replaces the shared one in this table and the rows that were
// already valid are copied in every layer's K and V, recorded in the
// Ledger like any other copy.
//
// A freed block whose K/V are registered stays cached: it counts as free
// but keeps its content until the pool needs it, so a later prompt with
// the same prefix can revive it. Free blocks are handed out
// unregistered-first, then least recently freed (a prefix's tail before
// its head).
//
// # Concurrency and checks
//
// A Cache is safe for concurrent use; the block bookkeeping sits behind
// one mutex, while K/V writes go straight to the tensors (slots handed out
// to one sequence are never shared with another, so writers don't
// collide). CheckConsistency recomputes every invariant (reference count =
// number of tables holding the block, no block both free and in use, the
// prefix index consistent) and is what the tests run after every step.
//
// Snapshot copies the whole pool (each block's state, reference count and
// prefix hash) and every table at one instant, with Snapshot.Check to
// verify its invariants from its own contents; a Journal (SetJournal,
// TakeJournal) records the blocks allocated, freed, shared, evicted and
// copied on write in between. The engine's KV debugging view (/debug/kv
// and the /kv page of infer serve) is built on both.
package kvcache
