package attention

import (
	"fmt"
	"math"
)

// Validate checks that b describes tokens packed rows over a cache of
// numBlocks blocks of blockSize slots, so a kernel can walk it without
// further checks:
//
//   - the per-sequence slices have one entry per sequence and SlotMapping
//     one entry per token row;
//   - each sequence has 1 ≤ QueryLen ≤ ContextLen and owns the rows
//     [QueryStart, QueryStart+QueryLen) inside [0, tokens), disjoint from
//     every other sequence's rows;
//   - its block table covers its ContextLen positions with block ids in
//     [0, numBlocks);
//   - the slot of each of its rows is the slot of that token's position
//     p = ContextLen − QueryLen + j in the block table,
//     table[p/blockSize]·blockSize + p%blockSize, so what the cache write
//     puts down is exactly what the attention kernel reads back;
//   - rows outside every sequence are padding and have a negative slot.
//
// Two sequences writing the same slot (a shared block) are not detected.
func (b *Batch) Validate(tokens, numBlocks, blockSize int) error {
	if b == nil {
		return fmt.Errorf("attention: nil batch")
	}
	n := len(b.QueryLen)
	if len(b.QueryStart) != n || len(b.ContextLen) != n || len(b.BlockTables) != n {
		return fmt.Errorf("attention: batch has %d query starts, %d query lens, %d context lens and %d block tables; want one of each per sequence",
			len(b.QueryStart), n, len(b.ContextLen), len(b.BlockTables))
	}
	if len(b.SlotMapping) != tokens {
		return fmt.Errorf("attention: slot mapping has %d entries for %d token rows", len(b.SlotMapping), tokens)
	}
	if blockSize <= 0 || numBlocks < 0 {
		return fmt.Errorf("attention: cache of %d blocks of size %d", numBlocks, blockSize)
	}
	// owner[t] is the sequence index + 1 owning row t; 0 = padding. Steps
	// of up to ownerStack rows (every decode step of a modest batch) keep
	// it on the stack: Validate runs for every layer of every step.
	var stack [ownerStack]int32
	var owner []int32
	if tokens <= ownerStack {
		owner = stack[:tokens]
	} else {
		owner = make([]int32, tokens)
	}
	for i := 0; i < n; i++ {
		qs, ql, cl := b.QueryStart[i], b.QueryLen[i], b.ContextLen[i]
		if ql < 1 || ql > cl {
			return fmt.Errorf("attention: sequence %d has query length %d and context length %d; want 1 ≤ query ≤ context", i, ql, cl)
		}
		if qs < 0 || qs > tokens-ql {
			return fmt.Errorf("attention: sequence %d rows [%d, %d) fall outside the %d token rows", i, qs, qs+ql, tokens)
		}
		table := b.BlockTables[i]
		need := (cl + blockSize - 1) / blockSize
		if len(table) < need {
			return fmt.Errorf("attention: sequence %d has %d blocks in its table; %d positions of block size %d need %d",
				i, len(table), cl, blockSize, need)
		}
		for j := 0; j < need; j++ {
			if blk := table[j]; blk < 0 || int(blk) >= numBlocks {
				return fmt.Errorf("attention: sequence %d block table entry %d is block %d; the cache has blocks [0, %d)", i, j, blk, numBlocks)
			}
		}
		for j := 0; j < ql; j++ {
			t := qs + j
			if owner[t] != 0 {
				return fmt.Errorf("attention: token row %d belongs to sequences %d and %d", t, owner[t]-1, i)
			}
			owner[t] = int32(i + 1)
			p := cl - ql + j
			want := int64(table[p/blockSize])*int64(blockSize) + int64(p%blockSize)
			if got := b.SlotMapping[t]; int64(got) != want {
				return fmt.Errorf("attention: token row %d (sequence %d, position %d) has slot %d but its block table puts position %d in slot %d",
					t, i, p, got, p, want)
			}
		}
	}
	for t, o := range owner {
		if o == 0 && b.SlotMapping[t] >= 0 {
			return fmt.Errorf("attention: token row %d belongs to no sequence but has slot %d; padding rows need a negative slot", t, b.SlotMapping[t])
		}
	}
	return nil
}

// ownerStack is the largest step whose row owners Validate tracks in a
// stack array instead of allocating.
const ownerStack = 256

// NewLinearBatch builds the Batch of sequences whose new tokens are packed
// in order (sequence i's rows follow sequence i−1's) and whose blocks are
// handed out in order from block 0: sequence i gets the next
// ⌈ContextLen/blockSize⌉ blocks. It returns the batch and the number of
// blocks used. Real schedulers hand out blocks in any order; the kernels
// only ever see the block tables.
func NewLinearBatch(queryLens, contextLens []int, blockSize int) (*Batch, int, error) {
	if len(queryLens) != len(contextLens) {
		return nil, 0, fmt.Errorf("attention: %d query lengths for %d context lengths", len(queryLens), len(contextLens))
	}
	if blockSize <= 0 {
		return nil, 0, fmt.Errorf("attention: block size %d must be positive", blockSize)
	}
	b := &Batch{}
	row, next := 0, 0
	for i, ql := range queryLens {
		if next > math.MaxInt32/blockSize-contextLens[i]/blockSize-2 {
			return nil, 0, fmt.Errorf("attention: %d blocks of %d slots overflow int32 slot numbers", next, blockSize)
		}
		cl := contextLens[i]
		if ql < 1 || ql > cl {
			return nil, 0, fmt.Errorf("attention: sequence %d has query length %d and context length %d; want 1 ≤ query ≤ context", i, ql, cl)
		}
		nb := (cl + blockSize - 1) / blockSize
		table := make([]int32, nb)
		for j := range table {
			table[j] = int32(next + j)
		}
		next += nb
		b.QueryStart = append(b.QueryStart, row)
		b.QueryLen = append(b.QueryLen, ql)
		b.ContextLen = append(b.ContextLen, cl)
		b.BlockTables = append(b.BlockTables, table)
		for j := 0; j < ql; j++ {
			p := cl - ql + j
			b.SlotMapping = append(b.SlotMapping, int32(int(table[p/blockSize])*blockSize+p%blockSize))
		}
		row += ql
	}
	return b, next, nil
}
