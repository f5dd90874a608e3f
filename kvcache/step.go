package kvcache

import (
	"fmt"
	"slices"
)

// StepSeq is one sequence's share of a scheduler step: N new positions,
// starting at its context length. A prefill asks for the prompt's
// uncached positions, a decode step for 1, and a speculative verify step
// for the last token plus its k drafts (k+1), to be cut back with
// Truncate once the drafts are checked.
type StepSeq struct {
	ID int // sequence id
	N  int // new positions, ≥ 0
}

// Step is the cache's half of one scheduler step, filled by AppendStep:
// the slot mapping of the step's new positions and the block table of
// each of its sequences. A scheduler keeps one Step and passes it to
// every AppendStep call, so its slices are reused and a steady decode loop
// allocates nothing here.
type Step struct {
	// SlotMapping lists the slot of every new position, sequence after
	// sequence in the order given to AppendStep: sequence i's N slots
	// follow sequence i−1's. It is attention.Batch.SlotMapping when the
	// token rows are packed in the same order.
	SlotMapping []int32
	// BlockTables[i] is sequence i's block table once the step's blocks
	// are allocated (attention.Batch.BlockTables). It is the cache's
	// published copy of the table: read-only, and valid until the next
	// AppendStep that includes the sequence, or its Free.
	BlockTables [][]int32
	// Changed lists, in increasing order, the indices i whose table
	// differs from the one published by the sequence's previous
	// AppendStep: the sequence is new (or was re-added or forked), grew a
	// block, copied a shared block on write, or was truncated. A device
	// backend uploads only these tables; the others are unchanged.
	Changed []int
}

// AppendStep hands out the slots of one scheduler step: for each StepSeq
// it does what AppendSlots(…, id, ContextLen(id), N) does (grow the table,
// copy shared blocks on write) and records the slots in st.SlotMapping;
// then it publishes every listed sequence's block table in
// st.BlockTables and says in st.Changed which of them changed.
//
// This is where the copy-on-write rule lives: a table changes only inside
// the cache, so only the cache decides when a published copy must be
// refreshed, and a caller never re-derives it from the slots.
//
// The step is all or nothing: it first counts the blocks the whole step
// needs (growth, plus one copy per shared block per writer, but never the
// last holder of a block, which writes in place) and fails before
// changing anything when the pool has fewer free, with an error wrapping
// ErrOutOfBlocks; the scheduler then preempts a sequence and calls
// again. Other errors (an unknown id, a sequence listed twice, N < 0, a
// length the pool can never hold) also leave the cache unchanged.
func (c *Cache) AppendStep(st *Step, seqs []StepSeq) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	st.SlotMapping, st.BlockTables, st.Changed = st.SlotMapping[:0], st.BlockTables[:0], st.Changed[:0]
	if err := c.checkStep(seqs); err != nil {
		return fmt.Errorf("kvcache: step: %w", err)
	}
	if err := c.checkStepBlocks(seqs); err != nil {
		return fmt.Errorf("kvcache: step of %d sequences: %w", len(seqs), err)
	}
	for _, q := range seqs {
		s := c.seqs[q.ID]
		var err error
		if st.SlotMapping, err = c.appendSlots(st.SlotMapping, s, q.ID, s.length, q.N); err != nil {
			// Unreachable: checkStepBlocks counted exactly what
			// appendSlots takes. Say so rather than hide it.
			return fmt.Errorf("kvcache: step: internal error, the step's block count disagrees with its slots: %w", err)
		}
	}
	for i, q := range seqs {
		s := c.seqs[q.ID]
		if s.dirty {
			s.pub = append(s.pub[:0], s.table...)
			s.dirty = false
			st.Changed = append(st.Changed, i)
		}
		st.BlockTables = append(st.BlockTables, s.pub)
	}
	return nil
}

// checkStep validates a step's sequences, with c.mu held: each is live,
// listed once, and asks for N ≥ 0 positions the pool could ever hold.
func (c *Cache) checkStep(seqs []StepSeq) error {
	c.steps++
	for i, q := range seqs {
		s, err := c.seq("step", q.ID)
		if err != nil {
			return err
		}
		if s.stepMark == c.steps {
			return fmt.Errorf("sequence %d is listed twice (index %d)", q.ID, i)
		}
		s.stepMark = c.steps
		if err := c.checkGrowth(s, q.ID, q.N); err != nil {
			return err
		}
	}
	return nil
}

// checkGrowth validates asking sequence id (s) for n more positions, with
// c.mu held: n ≥ 0, and a length the pool can ever hold.
func (c *Cache) checkGrowth(s *sequence, id, n int) error {
	if n < 0 {
		return fmt.Errorf("sequence %d: negative token count %d", id, n)
	}
	if n > c.layout.NumSlots() {
		return fmt.Errorf("sequence %d: %w", id, c.fits(n))
	}
	if err := c.fits(s.length + n); err != nil {
		return fmt.Errorf("sequence %d: %w", id, err)
	}
	return nil
}

// checkStepBlocks returns an error wrapping ErrOutOfBlocks when the free
// blocks cannot cover the step, with c.mu held. A block held by r tables
// and written by w of the step's sequences costs min(w, r−1) copies: each
// writer but the last holder copies it, in whatever order they run.
func (c *Cache) checkStepBlocks(seqs []StepSeq) error {
	blocks := c.pool.blocks
	grow, copies := 0, 0
	for _, q := range seqs {
		s := c.seqs[q.ID]
		first, last := c.written(s, q.N)
		grow += max(0, last+1-len(s.table))
		for i := first; i <= last && i < len(s.table); i++ {
			if b := s.table[i]; blocks[b].ref > 1 {
				blocks[b].writers++
			}
		}
	}
	for _, q := range seqs {
		s := c.seqs[q.ID]
		first, last := c.written(s, q.N)
		for i := first; i <= last && i < len(s.table); i++ {
			if m := &blocks[s.table[i]]; m.writers > 0 {
				copies += int(min(m.writers, m.ref-1))
				m.writers = 0
			}
		}
	}
	if grow+copies > c.pool.nfree {
		return fmt.Errorf("%d new blocks needed (%d to grow, %d copy-on-write), %d free: %w",
			grow+copies, grow, copies, c.pool.nfree, ErrOutOfBlocks)
	}
	return nil
}

// written is the range of table indices the next n positions of s fall
// in (empty, last < first, for n = 0).
func (c *Cache) written(s *sequence, n int) (first, last int) {
	bs := c.layout.BlockSize
	if n == 0 {
		return 0, -1
	}
	return s.length / bs, (s.length + n - 1) / bs
}

// PendingPrefixBlocks returns how many more leading full blocks of prompt
// a sequence added now would share if it waited until the live sequences
// commit the blocks they are computing: blocks not registered yet, but
// planned by a sequence added with the same token prefix whose K/V are
// not committed. A scheduler that admits several prompts with a common
// prefix in one step uses it to admit the first one and hold the others
// back one step (as vLLM does), so they reuse its blocks instead of each
// computing the prefix again. It counts only blocks AddSequence could
// share (those entirely within the first len(prompt)−1 tokens, in whole
// multiples of Config.PrefixAlignBlocks), and is 0 with prefix sharing
// off.
func (c *Cache) PendingPrefixBlocks(prompt []int) int {
	if c.cfg.DisablePrefixSharing || len(prompt) == 0 {
		return 0
	}
	bs := c.layout.BlockSize
	shareable := (len(prompt) - 1) / bs
	hashes := c.chain(prompt[:shareable*bs])
	c.mu.Lock()
	defer c.mu.Unlock()
	// now: the leading blocks AddSequence would share at once; later: those
	// it would share once the planned blocks are committed.
	now, later := 0, 0
	for i, h := range hashes {
		if _, ok := c.pool.lookup(h); ok {
			if now == later {
				now++
			}
			later++
			continue
		}
		if !c.planning(i, h) {
			break
		}
		later++
	}
	return c.aligned(later) - c.aligned(now)
}

// planning reports whether a live sequence is computing block i of the
// prefix hashed to h (planned, not yet committed), with c.mu held.
func (c *Cache) planning(i int, h prefixHash) bool {
	for _, s := range c.seqs {
		if i >= len(s.hashes) && i < len(s.planned) && s.planned[i] == h {
			return true
		}
	}
	return false
}

// chain returns the prefix hashes of the full blocks of tokens: h_0, h_1,
// … as Commit registers them. It reads no cache state.
func (c *Cache) chain(tokens []int) []prefixHash {
	bs := c.layout.BlockSize
	out := make([]prefixHash, 0, len(tokens)/bs)
	var h prefixHash
	for i := 0; (i+1)*bs <= len(tokens); i++ {
		h = chainHash(h, tokens[i*bs:(i+1)*bs])
		out = append(out, h)
	}
	return slices.Clip(out)
}
