package attention

import "github.com/stride-lm/stride/tensor"

// Batch describes the sequences of one attention step. The new tokens of
// all sequences are packed row after row into one token dimension T
// (vLLM's varlen layout; for B sequences of equal length S it is exactly
// the [B, S, ·] layout flattened): sequence i owns rows
// [QueryStart[i], QueryStart[i]+QueryLen[i]).
type Batch struct {
	// QueryStart is the first token row of each sequence.
	QueryStart []int
	// QueryLen is the number of new tokens of each sequence in this step
	// (the prompt length for a prefill, 1 for a decode step).
	QueryLen []int
	// ContextLen is the number of cached positions of each sequence once
	// this step's tokens are written, so its new tokens sit at positions
	// ContextLen-QueryLen … ContextLen-1 and attend causally to every
	// position up to their own.
	ContextLen []int
	// BlockTables lists, per sequence, the cache blocks holding positions
	// 0, block_size, 2·block_size, … in order.
	BlockTables [][]int32
	// SlotMapping gives the cache slot of every token row (negative =
	// padding, not written).
	SlotMapping []int32
}

// Path is one implementation of an attention layer's step, from the Q, K
// and V of the new tokens to the [T, H·D] input of the output projection.
type Path interface {
	// Name is "naive" or "fused".
	Name() string
	// Attend writes k and v into the layer's caches at b.SlotMapping and
	// returns softmax(q·kᵀ/√D)·v for every new token, causally over its
	// sequence's cached positions, as a contiguous [T, H·D] tensor.
	//
	// q is [T, H, D] and k, v are [T, KVH, D] with any strides: views into
	// a fused QKV buffer or contiguous tensors. kCache and vCache are the
	// layer's [num_blocks, block_size, KVH, D] caches. tr, if non-nil,
	// receives one row per stage.
	Attend(q, k, v, kCache, vCache *tensor.Tensor, b *Batch, tr *tensor.Trace) (*tensor.Tensor, error)
}
