package kvcache

import (
	"encoding/hex"
	"fmt"
	"slices"
)

// Block states of a Snapshot's pool.
const (
	// StateFree: no table holds the block and its K/V mean nothing.
	StateFree = "free"
	// StateUsed: at least one sequence's table holds the block.
	StateUsed = "used"
	// StateCached: no table holds the block, but its K/V stay registered
	// under a prefix hash until the pool evicts it for new content.
	StateCached = "cached"
)

// PoolInfo is the shape of a pool: what a picture of it needs to turn a
// block id into slots and byte ranges of the K and V cache tensors.
type PoolInfo struct {
	NumBlocks     int    `json:"num_blocks"`
	BlockSize     int    `json:"block_size"`
	NumLayers     int    `json:"num_layers"`
	NumKVHeads    int    `json:"num_kv_heads"`
	HeadDim       int    `json:"head_dim"`
	DType         string `json:"dtype"`
	ElemSize      int    `json:"elem_size"`       // bytes per element
	BytesPerToken int64  `json:"bytes_per_token"` // 2·n_layers·n_kv_heads·head_dim·elem_size
	BytesPerBlock int64  `json:"bytes_per_block"` // block_size·bytes_per_token
	// Shape and Strides (in elements) of each layer's K and of its V
	// cache tensor: [num_blocks, block_size, n_kv_heads, head_dim] and
	// [kv_block_stride, kv_token_stride, kv_head_stride, 1], as infer
	// trace prints them.
	Shape   []int `json:"shape"`
	Strides []int `json:"strides"`
}

// BlockInfo is one pool block in a Snapshot.
type BlockInfo struct {
	ID    int    `json:"id"`
	State string `json:"state"` // StateFree, StateUsed or StateCached
	Ref   int    `json:"ref"`   // block tables holding it
	// Hash is the first 8 bytes, in hex, of the prefix hash the block is
	// registered under ("" when it is not): equal hashes, equal prefixes.
	Hash string `json:"hash,omitempty"`
}

// SeqInfo is one live sequence in a Snapshot.
type SeqInfo struct {
	ID int `json:"seq"` // the cache's sequence id
	// Table is the block table: logical block i → physical block id.
	Table []int32 `json:"table"`
	// Length is the context length: positions holding K/V (or handed
	// out to the step being computed).
	Length int `json:"tokens"`
	// Committed is how many of them are final (Commit).
	Committed int `json:"committed"`
	// Shared are the table's blocks other tables hold too (reference
	// count > 1), Owned those it holds alone, both in table order.
	Shared []int32 `json:"shared"`
	Owned  []int32 `json:"owned"`
	// Tokens are the committed tokens, for a caller that shows text.
	Tokens []int `json:"-"`
}

// Snapshot is the whole cache at one instant: the pool block by block,
// every live sequence's table, and the counters. It shares nothing with
// the cache.
type Snapshot struct {
	Pool   PoolInfo    `json:"pool"`
	Blocks []BlockInfo `json:"blocks"`
	Seqs   []SeqInfo   `json:"sequences"` // by increasing id
	Stats  Stats       `json:"-"`
}

// Snapshot copies the cache's state under its lock, in O(blocks + table
// entries + committed tokens).
func (c *Cache) Snapshot() Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, l := c.stats(), c.layout
	s := Snapshot{Pool: PoolInfo{NumBlocks: l.NumBlocks, BlockSize: l.BlockSize, NumLayers: c.cfg.NumLayers,
		NumKVHeads: l.NumKVHeads, HeadDim: l.HeadDim, DType: c.cfg.DType.String(), ElemSize: c.cfg.DType.Size(),
		BytesPerToken: c.cfg.BytesPerToken(), BytesPerBlock: c.cfg.BytesPerBlock(),
		Shape: l.Shape(), Strides: l.Strides()}, Stats: st}
	s.Blocks = make([]BlockInfo, len(c.pool.blocks))
	for b, m := range c.pool.blocks {
		bi := BlockInfo{ID: b, Ref: int(m.ref), State: StateUsed}
		if m.hashed {
			bi.Hash = hex.EncodeToString(m.hash[:8])
		}
		if m.ref == 0 {
			bi.State = StateFree
			if m.hashed {
				bi.State = StateCached
			}
		}
		s.Blocks[b] = bi
	}
	ids := make([]int, 0, len(c.seqs))
	for id := range c.seqs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		q := c.seqs[id]
		si := SeqInfo{ID: id, Table: slices.Clone(q.table), Length: q.length, Committed: len(q.tokens),
			Shared: []int32{}, Owned: []int32{}, Tokens: slices.Clone(q.tokens)}
		if si.Table == nil {
			si.Table = []int32{}
		}
		for _, b := range q.table {
			if c.pool.blocks[b].ref > 1 {
				si.Shared = append(si.Shared, b)
			} else {
				si.Owned = append(si.Owned, b)
			}
		}
		s.Seqs = append(s.Seqs, si)
	}
	if s.Seqs == nil {
		s.Seqs = []SeqInfo{}
	}
	return s
}

// Check verifies a snapshot's invariants from its own contents, so a
// client of a published snapshot can run it too: every block's reference
// count equals the number of tables holding it and no table holds a
// block twice; a block is free or cached exactly when its count is 0,
// and cached exactly when it also has a hash; free + used = total, and
// the counters agree with the blocks; each sequence's shared and owned
// blocks split its table by reference count; its table covers its
// length, and its committed tokens lie within it.
func (s *Snapshot) Check() error {
	p := s.Pool
	if len(s.Blocks) != p.NumBlocks {
		return fmt.Errorf("kvcache: snapshot: %d blocks listed, pool of %d", len(s.Blocks), p.NumBlocks)
	}
	refs := make([]int, p.NumBlocks)
	for _, q := range s.Seqs {
		if err := q.check(s, refs); err != nil {
			return err
		}
	}
	var free, used, shared, cached int
	for b, bi := range s.Blocks {
		switch {
		case bi.ID != b:
			return fmt.Errorf("kvcache: snapshot: block %d listed as %d", b, bi.ID)
		case bi.Ref != refs[b]:
			return fmt.Errorf("kvcache: snapshot: block %d has reference count %d but %d tables hold it", b, bi.Ref, refs[b])
		case bi.Ref > 0 && bi.State != StateUsed, bi.Ref == 0 && bi.State == StateUsed:
			return fmt.Errorf("kvcache: snapshot: block %d is %s with reference count %d", b, bi.State, bi.Ref)
		case bi.State == StateFree && bi.Hash != "", bi.State == StateCached && bi.Hash == "":
			return fmt.Errorf("kvcache: snapshot: block %d is %s with hash %q", b, bi.State, bi.Hash)
		}
		switch bi.State {
		case StateUsed:
			used++
			if bi.Ref > 1 {
				shared++
			}
		case StateCached:
			cached++
			free++
		default:
			free++
		}
	}
	if free+used != p.NumBlocks {
		return fmt.Errorf("kvcache: snapshot: %d free + %d used blocks, pool of %d", free, used, p.NumBlocks)
	}
	st := s.Stats
	if st.NumBlocks != p.NumBlocks || st.FreeBlocks != free || st.UsedBlocks != used || st.SharedBlocks != shared ||
		st.CachedBlocks != cached || st.Sequences != len(s.Seqs) {
		return fmt.Errorf("kvcache: snapshot: the counters (%v) disagree with the blocks (free %d, used %d, shared %d, cached %d, %d sequences)",
			st, free, used, shared, cached, len(s.Seqs))
	}
	return nil
}

// check verifies one sequence of s and counts its table into refs.
func (q *SeqInfo) check(s *Snapshot, refs []int) error {
	seen := map[int32]bool{}
	var shared, owned []int32
	for i, b := range q.Table {
		if b < 0 || int(b) >= len(refs) {
			return fmt.Errorf("kvcache: snapshot: sequence %d: entry %d is block %d, outside the pool of %d", q.ID, i, b, len(refs))
		}
		if seen[b] {
			return fmt.Errorf("kvcache: snapshot: sequence %d holds block %d twice", q.ID, b)
		}
		seen[b] = true
		refs[b]++
		if s.Blocks[b].Ref > 1 {
			shared = append(shared, b)
		} else {
			owned = append(owned, b)
		}
	}
	if !slices.Equal(shared, q.Shared) || !slices.Equal(owned, q.Owned) {
		return fmt.Errorf("kvcache: snapshot: sequence %d: shared %v and owned %v do not split its table %v by reference count",
			q.ID, q.Shared, q.Owned, q.Table)
	}
	if q.Length > len(q.Table)*s.Pool.BlockSize || q.Committed > q.Length || q.Committed < 0 {
		return fmt.Errorf("kvcache: snapshot: sequence %d: %d committed of %d tokens in %d blocks of %d",
			q.ID, q.Committed, q.Length, len(q.Table), s.Pool.BlockSize)
	}
	return nil
}
