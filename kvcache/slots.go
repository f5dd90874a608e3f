package kvcache

import (
	"fmt"
	"slices"
)

// This file hands out slots one sequence at a time: the slot mapping
// itself, copy-on-write of shared blocks, and the reservation that keeps
// a decode loop from reallocating. AppendStep (step.go) does the same for
// all sequences of a scheduler step at once.

// Slots returns the slot mapping of positions start … start+n-1 of
// sequence id, slot = block_table[pos/block_size]·block_size +
// pos%block_size, and extends the context length to start+n.
//
// start must equal ContextLen(id): positions are handed out in order
// (rewind with Truncate). The table grows by one block each time a
// position crosses a block boundary. A block the new positions will be
// written into that other sequences also hold (after Fork, or a Truncate
// into a shared block) is copied on write first: a fresh block replaces it
// in this table, and the rows before start that the block already held
// valid (start % block_size of them, in the first written block only) are
// copied in every layer's K and V, recorded in the Ledger as one copy op
// per tensor. A block this sequence holds alone but had registered for
// prefix reuse is unregistered, since its content is about to change.
//
// Errors: unknown id, start ≠ ContextLen, n < 0, a length the pool can
// never hold (ErrExceedsPool), or too few free blocks for the growth and
// copies (ErrOutOfBlocks); on error nothing changed.
//
// Slots returns a new slice each call; a loop that runs every step (a
// decode scheduler) should use AppendSlots with a reused buffer instead.
func (c *Cache) Slots(id int, start, n int) ([]int32, error) {
	slots, err := c.AppendSlots(nil, id, start, n)
	if err != nil {
		return nil, err
	}
	if slots == nil {
		slots = []int32{} // n = 0
	}
	return slots, nil
}

// AppendSlots is Slots appending the n slots to dst and returning the
// extended slice, like strconv's Append functions: with a buffer the
// caller truncates and reuses (dst = c.AppendSlots(dst[:0], …)), a step
// allocates nothing once the buffer has grown to the step's token count.
// On error dst is returned unchanged and the cache is unchanged.
func (c *Cache) AppendSlots(dst []int32, id int, start, n int) ([]int32, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, err := c.seq("slots", id)
	if err != nil {
		return dst, err
	}
	return c.appendSlots(dst, s, id, start, n)
}

// appendSlots is AppendSlots with c.mu held and the sequence looked up.
func (c *Cache) appendSlots(dst []int32, s *sequence, id int, start, n int) ([]int32, error) {
	if start != s.length {
		return dst, fmt.Errorf("kvcache: slots: sequence %d has context length %d, so new positions start there, not at %d (use Truncate to rewind)",
			id, s.length, start)
	}
	if err := c.checkGrowth(s, id, n); err != nil {
		return dst, fmt.Errorf("kvcache: slots: %w", err)
	}
	if n == 0 {
		return dst, nil
	}
	end := start + n
	bs := c.layout.BlockSize
	first, last := c.written(s, n)
	grow := max(0, last+1-len(s.table))
	cow := 0
	for i := first; i <= last && i < len(s.table); i++ {
		if c.pool.blocks[s.table[i]].ref > 1 {
			cow++
		}
	}
	if grow+cow > c.pool.nfree {
		return dst, fmt.Errorf("kvcache: slots: sequence %d: positions %d…%d need %d new blocks (%d to grow, %d copy-on-write), %d free: %w",
			id, start, end-1, grow+cow, grow, cow, c.pool.nfree, ErrOutOfBlocks)
	}
	for i := first; i <= last && i < len(s.table); i++ {
		b := s.table[i]
		if c.pool.blocks[b].ref == 1 {
			c.pool.unregister(b)
			continue
		}
		nb := c.pool.alloc()
		rows := 0
		if i == first {
			rows = start - first*bs
		}
		c.copyRows(nb, b, rows)
		c.pool.release(b)
		s.table[i] = nb
		c.cowBlocks++
		if j := c.pool.journal; j != nil {
			j.CopyOnWrite = append(j.CopyOnWrite, CopyOnWrite{Seq: id, Index: i, From: b, To: nb})
		}
		s.dirty = true
	}
	for range grow {
		s.table = append(s.table, c.pool.alloc())
		s.dirty = true
	}
	// slot = block_table[p / block_size] · block_size + p % block_size
	dst = slices.Grow(dst, n)
	for p := start; p < end; p++ {
		dst = append(dst, s.table[p/bs]*int32(bs)+int32(p%bs))
	}
	s.length = end
	return dst, nil
}

// Reserve makes room in sequence id's bookkeeping — its block table,
// committed tokens and prefix hashes — for n positions, so that the Slots
// and Commit calls that grow the sequence to n positions never reallocate
// them: a scheduler calls it once per request with the request's maximum
// length, and its decode steps then allocate nothing in the cache. It
// allocates no blocks and changes nothing a caller can observe; a
// sequence that outgrows n just grows as before.
//
// Errors: unknown id, n < 0, or an n the pool can never hold
// (ErrExceedsPool).
func (c *Cache) Reserve(id, n int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, err := c.seq("reserve", id)
	if err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("kvcache: reserve: sequence %d: negative length %d", id, n)
	}
	if err := c.fits(n); err != nil {
		return fmt.Errorf("kvcache: reserve: sequence %d: %w", id, err)
	}
	s.table = slices.Grow(s.table, max(0, c.blocksFor(n)-len(s.table)))
	s.pub = slices.Grow(s.pub, max(0, c.blocksFor(n)-len(s.pub)))
	s.tokens = slices.Grow(s.tokens, max(0, n-len(s.tokens)))
	s.hashes = slices.Grow(s.hashes, max(0, n/c.layout.BlockSize-len(s.hashes)))
	return nil
}

// copyRows copies the first rows token rows of block src into block dst in
// every layer's K and V cache: the copy-on-write of a shared block. The
// rows are contiguous (kv_token_stride = n_kv_heads·head_dim elements
// each), so each tensor is one memmove of rows·kv_token_stride elements.
func (c *Cache) copyRows(dst, src int32, rows int) {
	if rows == 0 {
		return
	}
	n := rows * c.layout.TokenStride()
	bstride := c.layout.BlockStride()
	nbytes := int64(n) * int64(c.cfg.DType.Size())
	for _, t := range append(slices.Clone(c.k), c.v...) {
		d := t.Offset() + int(dst)*bstride
		s := t.Offset() + int(src)*bstride
		st := t.Storage()
		if f := st.Float32s(); f != nil {
			copy(f[d:d+n], f[s:s+n])
		} else {
			u := st.Uint16s()
			copy(u[d:d+n], u[s:s+n])
		}
		t.Ledger().RecordCopy(nbytes)
		c.cowBytes += nbytes
	}
}
