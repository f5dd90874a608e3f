package kvcache

// Layout is the shape of one layer's K (or V) cache:
// [NumBlocks, BlockSize, NumKVHeads, HeadDim], row-major.
type Layout struct {
	NumBlocks  int
	BlockSize  int
	NumKVHeads int
	HeadDim    int
}

// BlockStride is kv_block_stride: elements between block b and b+1.
func (l Layout) BlockStride() int { return l.BlockSize * l.NumKVHeads * l.HeadDim }

// TokenStride is kv_token_stride: elements between slot s and s+1 of a block.
func (l Layout) TokenStride() int { return l.NumKVHeads * l.HeadDim }

// HeadStride is kv_head_stride: elements between KV head h and h+1.
func (l Layout) HeadStride() int { return l.HeadDim }

// Shape returns the cache tensor's shape.
func (l Layout) Shape() []int { return []int{l.NumBlocks, l.BlockSize, l.NumKVHeads, l.HeadDim} }
