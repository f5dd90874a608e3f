package kvcache

// Journal is what a Cache did to its pool's blocks while it recorded
// (SetJournal), in the order it happened: a block may appear in Freed and
// then in Allocated when a preempted sequence's blocks go straight to
// another sequence.
type Journal struct {
	// Allocated blocks were handed out fresh (reference count 0 → 1),
	// copies on write included.
	Allocated []int32 `json:"allocated"`
	// Freed blocks lost their last holder (reference count → 0).
	Freed []int32 `json:"freed"`
	// Shared blocks gained a holder: a prefix hit (reviving a cached
	// block or sharing a used one) or a fork.
	Shared []int32 `json:"shared"`
	// Evicted blocks were cached for prefix reuse and handed out for new
	// content (each is also in Allocated).
	Evicted []int32 `json:"evicted"`
	// CopyOnWrite lists the shared blocks a sequence replaced by a
	// private copy before writing into them.
	CopyOnWrite []CopyOnWrite `json:"copy_on_write"`
}

// CopyOnWrite is one copy on write: sequence Seq's table entry Index
// went from the shared block From to its private copy To.
type CopyOnWrite struct {
	Seq   int   `json:"seq"`
	Index int   `json:"index"`
	From  int32 `json:"from"`
	To    int32 `json:"to"`
}

// The operations a Journal records.
const (
	opAllocated = iota
	opFreed
	opShared
	opEvicted
)

// note records op on block b; a nil Journal (not recording) does nothing.
func (j *Journal) note(op int, b int32) {
	if j == nil {
		return
	}
	switch op {
	case opAllocated:
		j.Allocated = append(j.Allocated, b)
	case opFreed:
		j.Freed = append(j.Freed, b)
	case opShared:
		j.Shared = append(j.Shared, b)
	case opEvicted:
		j.Evicted = append(j.Evicted, b)
	}
}

// SetJournal starts (on) or stops recording the pool's block operations;
// starting discards what an earlier recording left untaken. A debugging
// view (the engine's KV event stream) records while someone watches.
func (c *Cache) SetJournal(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pool.journal = nil
	if on {
		c.pool.journal = &Journal{}
	}
}

// TakeJournal returns what was recorded since the last call (or since
// SetJournal(true)) and starts afresh; it is empty when not recording.
func (c *Cache) TakeJournal() Journal {
	c.mu.Lock()
	defer c.mu.Unlock()
	j := c.pool.journal
	if j == nil {
		return Journal{}
	}
	c.pool.journal = &Journal{}
	return *j
}
