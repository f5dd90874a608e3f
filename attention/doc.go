// Package attention holds Stride's two interchangeable attention paths
// behind one interface, Path: the naive copying path written the textbook
// PyTorch way, and the fused path that reads Q, K and V through their
// strides and the paged KV cache through block tables.
//
// # One step, many sequences
//
// A step's new tokens are packed row after row into one token dimension T,
// vLLM's varlen layout: a Batch says which rows belong to which sequence
// (QueryStart, QueryLen), how long each sequence's context is once the
// step's tokens are written (ContextLen), where its cached positions live
// (BlockTables, one list of physical block ids per sequence) and where each
// new row is written (SlotMapping). A prefill is a sequence with many rows,
// a decode step one row, a speculative verify k+1 rows; the kernels see no
// difference. Batch.Validate checks all of it once, so the kernels can walk
// the tables without further checks.
//
// # The two paths
//
// Both take q as [T, H, D] and k, v as [T, KVH, D] with any strides, write
// k and v into the layer's [num_blocks, block_size, KVH, D] caches with
// kvcache.ReshapeAndCache, and return softmax(q·kᵀ/√D)·v as [T, H·D]:
//
//   - Naive gathers each sequence's keys and values into contiguous
//     tensors, repeats the KV heads H/KVH times (repeat_interleave),
//     materializes the [H, S, C] score matrix, masks and softmaxes it, and
//     makes the output contiguous with transpose().contiguous().view().
//     Every copy is recorded in the tensor.Ledger, which is what
//     `infer compare` prints.
//   - Fused plans work items once per step (sequence × KV head × query
//     tile, so a GQA group of H/KVH query heads shares each key it loads),
//     walks the block table one key tile at a time with an online softmax
//     (running max m, running sum l, rescaled accumulator), and writes each
//     head's output straight into its column range of the [T, H·D] buffer.
//     Nothing is gathered, repeated or made contiguous.
//
// The fused kernel's arguments (flashArgs) name every stride it reads:
// the query's token and head strides, the cache's block, token and head
// strides. That is what lets q be a view of the fused QKV projection.
//
// # Tracing
//
// TraceLayer runs one layer's attention with a tensor.Trace and records a
// row per stage (shape, strides, contiguity, shared or new storage, bytes
// copied), the numbers PyTorch prints for the same program; `infer trace`
// shows them.
package attention
