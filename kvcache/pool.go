package kvcache

// blockPool is the allocator behind a Cache: a reference count per block,
// an LRU free list, and the prefix-hash index of blocks whose K/V are
// known. It is not safe for concurrent use; Cache guards it.
//
// A block is free exactly when its reference count is 0, and then it sits
// on the free list. A free block may still be registered under a prefix
// hash: its K/V stay valid until the block is handed out again, so a later
// prompt with the same prefix can revive it (vLLM's "evictor"). The free
// list is ordered for that: blocks holding nothing useful go to the front
// and are handed out first; registered blocks go to the back and are
// evicted least-recently-freed first.
type blockPool struct {
	blocks     []blockMeta
	head, tail int32 // free list ends; -1 when the list is empty
	nfree      int
	byHash     map[prefixHash]int32
	evictions  int64    // registered blocks reused for other content
	journal    *Journal // what alloc, retain and release did, while recording (journal.go)
}

type blockMeta struct {
	ref        int32 // number of block tables holding the block
	prev, next int32 // free-list neighbours (-1 at the ends), while free
	free       bool
	hashed     bool       // registered in byHash under hash
	hash       prefixHash // valid while hashed
	writers    int32      // scratch of Cache.checkStepBlocks: 0 outside it
}

const noBlock = -1

func newBlockPool(n int) blockPool {
	p := blockPool{blocks: make([]blockMeta, n), head: noBlock, tail: noBlock, byHash: map[prefixHash]int32{}}
	for b := range n {
		p.pushBack(int32(b))
	}
	return p
}

func (p *blockPool) pushBack(b int32) {
	m := &p.blocks[b]
	m.free, m.prev, m.next = true, p.tail, noBlock
	if p.tail == noBlock {
		p.head = b
	} else {
		p.blocks[p.tail].next = b
	}
	p.tail = b
	p.nfree++
}

func (p *blockPool) pushFront(b int32) {
	m := &p.blocks[b]
	m.free, m.prev, m.next = true, noBlock, p.head
	if p.head == noBlock {
		p.tail = b
	} else {
		p.blocks[p.head].prev = b
	}
	p.head = b
	p.nfree++
}

func (p *blockPool) unlink(b int32) {
	m := &p.blocks[b]
	if m.prev == noBlock {
		p.head = m.next
	} else {
		p.blocks[m.prev].next = m.next
	}
	if m.next == noBlock {
		p.tail = m.prev
	} else {
		p.blocks[m.next].prev = m.prev
	}
	m.free, m.prev, m.next = false, noBlock, noBlock
	p.nfree--
}

// alloc hands out the block at the front of the free list with reference
// count 1, evicting its prefix registration if it had one. The caller has
// checked nfree > 0.
func (p *blockPool) alloc() int32 {
	b := p.head
	p.unlink(b)
	if p.blocks[b].hashed {
		p.unregister(b)
		p.evictions++
		p.journal.note(opEvicted, b)
	}
	p.blocks[b].ref = 1
	p.journal.note(opAllocated, b)
	return b
}

// retain adds a reference, reviving b from the free list if it was free.
func (p *blockPool) retain(b int32) {
	if p.blocks[b].free {
		p.unlink(b)
	}
	p.blocks[b].ref++
	p.journal.note(opShared, b)
}

// release drops a reference; at zero the block becomes free, at the back
// of the list if its K/V are registered (worth keeping), else at the front.
func (p *blockPool) release(b int32) {
	m := &p.blocks[b]
	m.ref--
	if m.ref > 0 {
		return
	}
	p.journal.note(opFreed, b)
	if m.hashed {
		p.pushBack(b)
	} else {
		p.pushFront(b)
	}
}

// register records that b holds the K/V of the prefix hashed to h. When
// another block already holds that prefix the index keeps the older one.
func (p *blockPool) register(b int32, h prefixHash) {
	if p.blocks[b].hashed {
		return
	}
	if _, taken := p.byHash[h]; taken {
		return
	}
	p.byHash[h] = b
	p.blocks[b].hashed, p.blocks[b].hash = true, h
}

// unregister forgets b's prefix: its content is about to change.
func (p *blockPool) unregister(b int32) {
	m := &p.blocks[b]
	if !m.hashed {
		return
	}
	if p.byHash[m.hash] == b {
		delete(p.byHash, m.hash)
	}
	m.hashed, m.hash = false, prefixHash{}
}

// lookup returns the block registered under h.
func (p *blockPool) lookup(h prefixHash) (int32, bool) {
	b, ok := p.byHash[h]
	return b, ok
}
