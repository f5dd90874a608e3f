package kvcache

import "fmt"

// Stats is a snapshot of a Cache's pool and prefix-sharing counters.
type Stats struct {
	NumBlocks    int // blocks in the pool
	FreeBlocks   int // blocks no sequence holds (CachedBlocks included)
	UsedBlocks   int // blocks at least one sequence holds
	SharedBlocks int // blocks two or more sequences hold (prefix hits, forks)
	CachedBlocks int // free blocks whose K/V stay registered for prefix reuse until evicted
	Sequences    int // live sequences

	BlockSize     int
	BytesPerToken int64 // 2·n_layers·n_kv_heads·head_dim·elem_size
	BytesPerBlock int64 // block_size·BytesPerToken

	PromptTokens      int64 // prompt tokens given to AddSequence, in total
	PrefixHitTokens   int64 // of those, served from shared blocks instead of recomputed
	CopyOnWriteBlocks int64 // shared blocks replaced by a private block before a write
	CopyOnWriteBytes  int64 // bytes those copies moved (all layers, K and V)
	Evictions         int64 // cached prefix blocks reused for new content
}

// UsedBytes is the cache memory held by live sequences: UsedBlocks ·
// BytesPerBlock.
func (s Stats) UsedBytes() int64 { return int64(s.UsedBlocks) * s.BytesPerBlock }

// Usage is the fraction of the pool's blocks held by live sequences,
// UsedBlocks / NumBlocks, from 0 to 1 (0 for a pool of no blocks).
func (s Stats) Usage() float64 {
	if s.NumBlocks <= 0 {
		return 0
	}
	return float64(s.UsedBlocks) / float64(s.NumBlocks)
}

// String formats the stats on one line.
func (s Stats) String() string {
	return fmt.Sprintf("blocks=%d free=%d used=%d shared=%d cached=%d seqs=%d block_size=%d bytes/token=%d prompt_tokens=%d prefix_hits=%d cow_blocks=%d cow_bytes=%d evictions=%d",
		s.NumBlocks, s.FreeBlocks, s.UsedBlocks, s.SharedBlocks, s.CachedBlocks, s.Sequences, s.BlockSize,
		s.BytesPerToken, s.PromptTokens, s.PrefixHitTokens, s.CopyOnWriteBlocks, s.CopyOnWriteBytes, s.Evictions)
}

// Stats returns a snapshot of the counters.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats()
}

// stats is Stats with c.mu held.
func (c *Cache) stats() Stats {
	s := Stats{
		NumBlocks:         c.layout.NumBlocks,
		FreeBlocks:        c.pool.nfree,
		Sequences:         len(c.seqs),
		BlockSize:         c.layout.BlockSize,
		BytesPerToken:     c.cfg.BytesPerToken(),
		BytesPerBlock:     c.cfg.BytesPerBlock(),
		PromptTokens:      c.promptTokens,
		PrefixHitTokens:   c.hitTokens,
		CopyOnWriteBlocks: c.cowBlocks,
		CopyOnWriteBytes:  c.cowBytes,
		Evictions:         c.pool.evictions,
	}
	for _, m := range c.pool.blocks {
		switch {
		case m.ref > 1:
			s.SharedBlocks++
			s.UsedBlocks++
		case m.ref == 1:
			s.UsedBlocks++
		case m.hashed:
			s.CachedBlocks++
		}
	}
	return s
}

// CheckConsistency verifies the cache's bookkeeping from scratch, in
// O(blocks + table entries), and returns the first violation found:
//
//   - every block's reference count equals the number of block tables
//     holding it, and no table holds a block twice;
//   - a block is on the free list exactly when its count is 0 (no block is
//     both free and in use), and the list is a well-formed chain;
//   - the prefix index and the blocks' registrations agree;
//   - every sequence's table covers its context length, its committed
//     tokens lie within it, and it has one prefix hash per full
//     committed block.
//
// Tests call it after every step; it is cheap enough for a debug mode.
func (c *Cache) CheckConsistency() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := &c.pool
	n := len(p.blocks)
	refs := make([]int32, n)
	bs := c.layout.BlockSize
	for id, s := range c.seqs {
		seen := make(map[int32]bool, len(s.table))
		for i, b := range s.table {
			if b < 0 || int(b) >= n {
				return fmt.Errorf("kvcache: sequence %d: table entry %d is block %d, outside the pool of %d", id, i, b, n)
			}
			if seen[b] {
				return fmt.Errorf("kvcache: sequence %d holds block %d twice", id, b)
			}
			seen[b] = true
			refs[b]++
		}
		if s.length > len(s.table)*bs {
			return fmt.Errorf("kvcache: sequence %d: context length %d exceeds its %d blocks × %d slots", id, s.length, len(s.table), bs)
		}
		if len(s.tokens) > s.length {
			return fmt.Errorf("kvcache: sequence %d: %d committed tokens exceed context length %d", id, len(s.tokens), s.length)
		}
		if !c.cfg.DisablePrefixSharing && len(s.hashes) != len(s.tokens)/bs {
			return fmt.Errorf("kvcache: sequence %d: %d prefix hashes for %d committed tokens (block size %d)", id, len(s.hashes), len(s.tokens), bs)
		}
	}
	free := 0
	for b := range n {
		m := p.blocks[b]
		if m.ref != refs[b] {
			return fmt.Errorf("kvcache: block %d has reference count %d but %d tables hold it", b, m.ref, refs[b])
		}
		if m.free != (m.ref == 0) {
			return fmt.Errorf("kvcache: block %d: free=%v with reference count %d", b, m.free, m.ref)
		}
		if m.free {
			free++
		}
		if m.hashed {
			if owner, ok := p.byHash[m.hash]; !ok || owner != int32(b) {
				return fmt.Errorf("kvcache: block %d is registered under a hash the index maps to block %d (present=%v)", b, owner, ok)
			}
		}
	}
	for h, b := range p.byHash {
		if b < 0 || int(b) >= n || !p.blocks[b].hashed || p.blocks[b].hash != h {
			return fmt.Errorf("kvcache: prefix index entry points to block %d, which is not registered under it", b)
		}
	}
	walked, prev := 0, int32(noBlock)
	for b := p.head; b != noBlock; b = p.blocks[b].next {
		if walked++; walked > n {
			return fmt.Errorf("kvcache: free list has a cycle")
		}
		if !p.blocks[b].free || p.blocks[b].prev != prev {
			return fmt.Errorf("kvcache: free list is broken at block %d", b)
		}
		prev = b
	}
	if prev != p.tail || walked != free || p.nfree != free {
		return fmt.Errorf("kvcache: free list holds %d blocks (count %d), but %d blocks are free", walked, p.nfree, free)
	}
	return nil
}
