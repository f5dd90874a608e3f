package kvcache

import (
	"fmt"
	"math"
)

// Layout is the shape of one layer's K (or V) cache:
// [NumBlocks, BlockSize, NumKVHeads, HeadDim], row-major.
//
// Element (block b, slot-in-block s, head h, dim d) lives at
//
//	b·kv_block_stride + s·kv_token_stride + h·kv_head_stride + d
//
// and a global slot number slot = b·block_size + s addresses a whole token
// row at slot·kv_token_stride, because kv_block_stride is exactly
// block_size·kv_token_stride (the blocks are packed).
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

// Strides returns the cache tensor's strides, in elements:
// [kv_block_stride, kv_token_stride, kv_head_stride, 1].
func (l Layout) Strides() []int {
	return []int{l.BlockStride(), l.TokenStride(), l.HeadStride(), 1}
}

// NumSlots is the number of token slots in the pool: num_blocks·block_size.
// Valid slots are 0 … NumSlots()-1.
func (l Layout) NumSlots() int { return l.NumBlocks * l.BlockSize }

// Slot maps position pos of a sequence with block table table to its cache
// slot:
//
//	slot = table[pos / block_size]·block_size + pos % block_size
//
// It fails when pos is negative, lies beyond the table, or the table names
// a block outside the pool.
func (l Layout) Slot(table []int32, pos int) (int32, error) {
	if l.BlockSize <= 0 {
		return 0, fmt.Errorf("kvcache: layout has block size %d", l.BlockSize)
	}
	if pos < 0 || pos/l.BlockSize >= len(table) {
		return 0, fmt.Errorf("kvcache: position %d is outside a block table of %d blocks × %d slots",
			pos, len(table), l.BlockSize)
	}
	b := table[pos/l.BlockSize]
	if b < 0 || int(b) >= l.NumBlocks {
		return 0, fmt.Errorf("kvcache: block table entry %d for position %d is block %d, outside the pool of %d blocks",
			pos/l.BlockSize, pos, b, l.NumBlocks)
	}
	slot := int64(b)*int64(l.BlockSize) + int64(pos%l.BlockSize)
	if slot > math.MaxInt32 {
		return 0, fmt.Errorf("kvcache: slot %d of position %d does not fit an int32 slot mapping", slot, pos)
	}
	return int32(slot), nil
}

// TokenOffset is the element offset of KV head h of slot slot in a cache
// tensor: slot·kv_token_stride + h·kv_head_stride. head_dim elements
// starting there are that head's K (or V) vector.
func (l Layout) TokenOffset(slot int32, h int) int {
	return int(slot)*l.TokenStride() + h*l.HeadStride()
}
