package kvcache

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/stride-lm/stride/tensor"
)

// Errors a Cache wraps (test with errors.Is). Every error also names the
// sequence and the numbers involved.
var (
	// ErrOutOfBlocks: the pool has too few free blocks right now. The
	// call changed nothing; free or preempt a sequence and retry.
	ErrOutOfBlocks = errors.New("out of free cache blocks")
	// ErrExceedsPool: the request needs more blocks than the whole pool
	// has, so no amount of freeing will make it fit.
	ErrExceedsPool = errors.New("larger than the whole cache pool")
	// ErrUnknownSequence: no live sequence has that id.
	ErrUnknownSequence = errors.New("unknown sequence")
	// ErrSequenceExists: a live sequence already has that id.
	ErrSequenceExists = errors.New("sequence id already in use")
)

// Cache is a paged KV cache: per layer one K and one V tensor of shape
// [num_blocks, block_size, n_kv_heads, head_dim], a pool of blocks shared
// by all layers (block b means rows b·block_size … of every layer's K and
// V), and one block table per sequence.
//
// The tensors are allocated once, in New; sequences only move block ids
// around. All methods are safe for concurrent use. The caller writes K/V
// with ReshapeAndCache (or Write) into the slots Slots returned, between
// Slots and Commit; writes to different sequences' slots may run
// concurrently, since a slot handed out by Slots belongs to one sequence
// only (shared blocks are copied on write first).
type Cache struct {
	cfg    Config
	layout Layout
	led    *tensor.Ledger
	k, v   []*tensor.Tensor

	mu   sync.Mutex
	pool blockPool
	seqs map[int]*sequence

	promptTokens, hitTokens int64
	cowBlocks, cowBytes     int64
	steps                   uint64 // AppendStep calls, for sequence.stepMark
}

// sequence is one sequence's view of the cache.
type sequence struct {
	table  []int32 // block ids for positions 0, bs, 2·bs, …
	length int     // context length: positions 0 … length-1 hold K/V (or are being written)
	tokens []int   // committed tokens: K/V of positions < len(tokens) are final
	hashes []prefixHash

	// planned holds the prefix hashes of the full blocks of the tokens the
	// sequence was added with: those at index ≥ len(hashes) are blocks
	// being computed now, which Commit will register and
	// PendingPrefixBlocks reports to a scheduler deciding whether a
	// waiting prompt should wait for them.
	planned []prefixHash
	// pub is the copy of table that AppendStep last published, and dirty
	// says table has changed since (grown, copied on write, truncated, or
	// new). Only the cache knows when a table changes, so only it decides
	// when the published copy must be refreshed.
	pub   []int32
	dirty bool
	// stepMark is the AppendStep call that last included the sequence,
	// to reject a sequence listed twice in one step.
	stepMark uint64
}

// New allocates the cache in led: 2·NumLayers tensors of
// [num_blocks, block_size, n_kv_heads, head_dim], i.e. NumBlocks ·
// BytesPerBlock bytes in all, recorded as 2·NumLayers allocations.
func New(led *tensor.Ledger, cfg Config) (*Cache, error) {
	layout, err := cfg.Layout()
	if err != nil {
		return nil, err
	}
	cfg.NumBlocks = layout.NumBlocks
	c := &Cache{cfg: cfg, layout: layout, led: led, seqs: map[int]*sequence{}}
	for l := 0; l < cfg.NumLayers; l++ {
		for _, dst := range []*[]*tensor.Tensor{&c.k, &c.v} {
			t, err := tensor.Zeros(led, cfg.DType, layout.Shape()...)
			if err != nil {
				c.Release()
				return nil, fmt.Errorf("kvcache: allocating layer %d of %v: %w", l, layout.Shape(), err)
			}
			*dst = append(*dst, t)
		}
	}
	c.pool = newBlockPool(layout.NumBlocks)
	return c, nil
}

// Release tells the Ledger the cache tensors are no longer live. The
// Cache must not be used afterwards.
func (c *Cache) Release() {
	for _, t := range append(slices.Clone(c.k), c.v...) {
		t.Release()
	}
}

// Config returns the configuration, with NumBlocks resolved.
func (c *Cache) Config() Config { return c.cfg }

// Layout returns the shape of each layer's K and V cache tensor.
func (c *Cache) Layout() Layout { return c.layout }

// BlockSize is the number of token slots per block.
func (c *Cache) BlockSize() int { return c.layout.BlockSize }

// NumBlocks is the number of blocks in the pool.
func (c *Cache) NumBlocks() int { return c.layout.NumBlocks }

// BytesPerToken is 2·n_layers·n_kv_heads·head_dim·elem_size: what one
// cached position costs across all layers, K and V.
func (c *Cache) BytesPerToken() int64 { return c.cfg.BytesPerToken() }

// Layer returns layer l's K and V cache tensors (views of the pool, never
// copies), or nil, nil when l is out of range.
func (c *Cache) Layer(l int) (k, v *tensor.Tensor) {
	if l < 0 || l >= len(c.k) {
		return nil, nil
	}
	return c.k[l], c.v[l]
}

// Write stores the K and V of the tokens of one step into layer l's cache
// at slots: ReshapeAndCache on that layer's tensors.
func (c *Cache) Write(l int, key, value *tensor.Tensor, slots []int32) error {
	k, v := c.Layer(l)
	if k == nil {
		return fmt.Errorf("kvcache: layer %d out of range [0, %d)", l, len(c.k))
	}
	return ReshapeAndCache(key, value, k, v, slots)
}

// aligned rounds a count of leading shareable blocks down to a multiple
// of Config.PrefixAlignBlocks.
func (c *Cache) aligned(blocks int) int {
	if a := c.cfg.PrefixAlignBlocks; a > 1 {
		return blocks / a * a
	}
	return blocks
}

// blocksFor is the number of blocks n positions occupy: ⌈n / block_size⌉.
func (c *Cache) blocksFor(n int) int { return (n + c.layout.BlockSize - 1) / c.layout.BlockSize }

// fits reports whether a sequence of n positions could ever be held.
func (c *Cache) fits(n int) error {
	if n > c.layout.NumSlots() {
		return fmt.Errorf("%d positions need %d blocks of %d slots but the pool has only %d blocks: %w",
			n, c.blocksFor(min(n, math.MaxInt/2)), c.layout.BlockSize, c.layout.NumBlocks, ErrExceedsPool)
	}
	return nil
}

// CanEverFit returns nil when a sequence of n positions fits in the empty
// pool, and otherwise an error wrapping ErrExceedsPool: a scheduler should
// reject such a request up front instead of waiting for blocks forever.
func (c *Cache) CanEverFit(n int) error {
	if n < 0 {
		return fmt.Errorf("kvcache: negative length %d", n)
	}
	if err := c.fits(n); err != nil {
		return fmt.Errorf("kvcache: %w", err)
	}
	return nil
}

// CanAdmit reports whether a prompt of promptLen tokens can be added now
// without any prefix hit: ⌈promptLen/block_size⌉ ≤ FreeBlocks(). It is
// conservative, as prefix hits only lower the need.
func (c *Cache) CanAdmit(promptLen int) bool {
	if promptLen <= 0 || c.fits(promptLen) != nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.blocksFor(promptLen) <= c.pool.nfree
}

// FreeBlocks is the number of blocks no sequence holds (including freed
// blocks whose K/V are still cached for prefix reuse: those are evicted
// on demand, so they count as free).
func (c *Cache) FreeBlocks() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pool.nfree
}

func (c *Cache) seq(op string, id int) (*sequence, error) {
	s := c.seqs[id]
	if s == nil {
		return nil, fmt.Errorf("kvcache: %s: sequence %d: %w", op, id, ErrUnknownSequence)
	}
	return s, nil
}

// AddSequence registers sequence id with its prompt and reserves the
// blocks for every prompt position, so the prefill step cannot run out of
// blocks halfway.
//
// With prefix sharing on, the leading full blocks whose token prefix is
// already cached (registered by Commit of an earlier sequence) are shared
// instead of allocated (in whole multiples of Config.PrefixAlignBlocks),
// and cachedTokens says how many leading positions
// already hold valid K/V: a multiple of block_size, and at most
// len(prompt)-1, because the last prompt token must run through the model
// for its logits. Only blocks that lie entirely within the first
// len(prompt)-1 tokens are matched (as in vLLM), so the block holding the
// last token is always fresh and never needs a copy.
//
// Afterwards ContextLen(id) == cachedTokens; the caller computes positions
// cachedTokens … len(prompt)-1 with Slots(id, cachedTokens,
// len(prompt)-cachedTokens) and then calls Commit(id, prompt).
//
// Errors: an empty prompt, an id in use (ErrSequenceExists), a prompt the
// pool can never hold (ErrExceedsPool), or too few free blocks now
// (ErrOutOfBlocks); on error nothing changed.
func (c *Cache) AddSequence(id int, prompt []int) (cachedTokens int, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seqs[id] != nil {
		return 0, fmt.Errorf("kvcache: add sequence %d: %w", id, ErrSequenceExists)
	}
	if len(prompt) == 0 {
		return 0, fmt.Errorf("kvcache: add sequence %d: empty prompt", id)
	}
	if err := c.fits(len(prompt)); err != nil {
		return 0, fmt.Errorf("kvcache: add sequence %d: prompt of %d tokens: %w", id, len(prompt), err)
	}
	bs := c.layout.BlockSize
	need := c.blocksFor(len(prompt))
	var hits []int32
	var hashes []prefixHash
	if !c.cfg.DisablePrefixSharing {
		var h prefixHash
		for i := 0; (i+1)*bs <= len(prompt)-1; i++ {
			h = chainHash(h, prompt[i*bs:(i+1)*bs])
			b, ok := c.pool.lookup(h)
			if !ok {
				break
			}
			hits, hashes = append(hits, b), append(hashes, h)
		}
		hits = hits[:c.aligned(len(hits))]
		hashes = hashes[:len(hits)]
	}
	revived := 0 // hits sitting on the free list stop being free
	for _, b := range hits {
		if c.pool.blocks[b].free {
			revived++
		}
	}
	fresh := need - len(hits)
	if fresh > c.pool.nfree-revived {
		return 0, fmt.Errorf("kvcache: add sequence %d: prompt of %d tokens needs %d new blocks (%d shared), %d free: %w",
			id, len(prompt), fresh, len(hits), c.pool.nfree-revived, ErrOutOfBlocks)
	}
	table := make([]int32, 0, need)
	for _, b := range hits {
		c.pool.retain(b)
		table = append(table, b)
	}
	for range fresh {
		table = append(table, c.pool.alloc())
	}
	cachedTokens = len(hits) * bs
	var planned []prefixHash
	if !c.cfg.DisablePrefixSharing {
		// Hashed only once the sequence is in: a scheduler retries a
		// prompt that does not fit yet every step.
		planned = c.chain(prompt)
	}
	c.seqs[id] = &sequence{
		table:   table,
		length:  cachedTokens,
		tokens:  slices.Clone(prompt[:cachedTokens]),
		hashes:  hashes,
		planned: planned,
		dirty:   true,
	}
	c.promptTokens += int64(len(prompt))
	c.hitTokens += int64(cachedTokens)
	return cachedTokens, nil
}

// Commit declares that K/V of positions 0 … k-1 of sequence id are
// written, where k = min(len(tokens), ContextLen(id)) and tokens[p] is the
// token fed at position p (prompt tokens, then generated ones). Full
// blocks among them are registered under their prefix hash, so later
// prompts starting with the same tokens share them. Tokens past the
// context length are ignored; call Commit after the K/V writes of a step.
//
// It fails when tokens contradict tokens committed earlier (the caller
// mixed up sequences): registering them would hand wrong K/V to others.
func (c *Cache) Commit(id int, tokens []int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, err := c.seq("commit", id)
	if err != nil {
		return err
	}
	k := min(len(tokens), s.length)
	known := len(s.tokens)
	for p := 0; p < min(k, known); p++ {
		if tokens[p] != s.tokens[p] {
			return fmt.Errorf("kvcache: commit: sequence %d: token %d at position %d contradicts the committed token %d",
				id, tokens[p], p, s.tokens[p])
		}
	}
	if k > known {
		s.tokens = append(s.tokens, tokens[known:k]...)
	}
	if c.cfg.DisablePrefixSharing {
		return nil
	}
	bs := c.layout.BlockSize
	for i := len(s.hashes); (i+1)*bs <= len(s.tokens); i++ {
		var parent prefixHash
		if i > 0 {
			parent = s.hashes[i-1]
		}
		h := chainHash(parent, s.tokens[i*bs:(i+1)*bs])
		s.hashes = append(s.hashes, h)
		c.pool.register(s.table[i], h)
	}
	return nil
}

// Fork makes sequence child a copy of sequence parent that shares all of
// its blocks (reference counts +1, no K/V copied), as for parallel
// sampling or beam search. The first Slots call of either one that writes
// into a still-shared block copies that block on write.
func (c *Cache) Fork(parent, child int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, err := c.seq("fork", parent)
	if err != nil {
		return err
	}
	if c.seqs[child] != nil {
		return fmt.Errorf("kvcache: fork %d → %d: %w", parent, child, ErrSequenceExists)
	}
	for _, b := range p.table {
		c.pool.retain(b)
	}
	c.seqs[child] = &sequence{
		table:  slices.Clone(p.table),
		length: p.length,
		tokens: slices.Clone(p.tokens),
		hashes: slices.Clone(p.hashes),
		dirty:  true,
	}
	return nil
}

// Truncate shortens sequence id to n positions (0 ≤ n ≤ ContextLen),
// dropping the K/V of positions n and beyond: blocks past ⌈n/block_size⌉
// go back to the pool. Used to roll back rejected speculative tokens or to
// recompute a suffix; the next Slots starts at n.
func (c *Cache) Truncate(id, n int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, err := c.seq("truncate", id)
	if err != nil {
		return err
	}
	if n < 0 || n > s.length {
		return fmt.Errorf("kvcache: truncate: sequence %d: length %d is outside [0, %d]", id, n, s.length)
	}
	c.truncate(s, n)
	return nil
}

// truncate is Truncate with c.mu held and 0 ≤ n ≤ s.length checked.
func (c *Cache) truncate(s *sequence, n int) {
	s.length = n
	if len(s.tokens) > n {
		s.tokens = s.tokens[:n]
	}
	if keep := n / c.layout.BlockSize; len(s.hashes) > keep {
		s.hashes = s.hashes[:keep]
	}
	if keep := n / c.layout.BlockSize; len(s.planned) > keep {
		s.planned = s.planned[:keep]
	}
	keep := c.blocksFor(n)
	for i := len(s.table) - 1; i >= keep; i-- {
		c.pool.release(s.table[i])
		s.dirty = true
	}
	s.table = s.table[:keep]
}

// Free removes sequence id and returns its blocks to the pool; shared
// blocks just lose a reference. It may be called at any time (finished,
// aborted or preempted sequences). Blocks registered for prefix reuse keep
// their K/V until the pool needs them, and are freed last-block-first so
// that a prefix's tail is evicted before its head.
func (c *Cache) Free(id int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, err := c.seq("free", id)
	if err != nil {
		return err
	}
	for i := len(s.table) - 1; i >= 0; i-- {
		c.pool.release(s.table[i])
	}
	delete(c.seqs, id)
	return nil
}

// BlockTable returns a copy of sequence id's block table. It covers at
// least ⌈ContextLen/block_size⌉ blocks (right after AddSequence it also
// holds the blocks reserved for the rest of the prompt).
func (c *Cache) BlockTable(id int) ([]int32, error) {
	t, err := c.AppendBlockTable(nil, id)
	if err != nil {
		return nil, err
	}
	if t == nil {
		t = []int32{}
	}
	return t, nil
}

// AppendBlockTable is BlockTable appending the table to dst and returning
// the extended slice, so a caller that refetches a table (a scheduler,
// each time a sequence starts a new block) can reuse its buffer:
// t = c.AppendBlockTable(t[:0], id). On error dst is returned unchanged.
func (c *Cache) AppendBlockTable(dst []int32, id int) ([]int32, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, err := c.seq("block table", id)
	if err != nil {
		return dst, err
	}
	return append(dst, s.table...), nil
}

// ContextLen is the number of positions of sequence id that hold K/V or
// have slots handed out: attention.Batch.ContextLen for its next step is
// ContextLen after that step's Slots call.
func (c *Cache) ContextLen(id int) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, err := c.seq("context length", id)
	if err != nil {
		return 0, err
	}
	return s.length, nil
}

// Sequences returns the ids of the live sequences in increasing order.
func (c *Cache) Sequences() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := make([]int, 0, len(c.seqs))
	for id := range c.seqs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// CheckSlots verifies that slots[i] is the slot of position start+i of
// sequence id, for a position below its context length: a slot in a block
// the sequence does not hold there is an error naming it. It is the
// debugging check a caller runs on a slot mapping it built or received.
func (c *Cache) CheckSlots(id, start int, slots []int32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, err := c.seq("check slots", id)
	if err != nil {
		return err
	}
	for i, got := range slots {
		pos := start + i
		if pos < 0 || pos >= s.length {
			return fmt.Errorf("kvcache: check slots: sequence %d: position %d is outside its context [0, %d)", id, pos, s.length)
		}
		want, err := c.layout.Slot(s.table, pos)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("kvcache: check slots: sequence %d: position %d has slot %d (block %d), but the sequence holds block %d there (slot %d)",
				id, pos, got, floorDiv(got, c.layout.BlockSize), s.table[pos/c.layout.BlockSize], want)
		}
	}
	return nil
}

func floorDiv(a int32, b int) int {
	q := int(a) / b
	if int(a)%b < 0 {
		q--
	}
	return q
}

// RefCount returns the number of block tables holding block b.
func (c *Cache) RefCount(b int) (int, error) {
	if b < 0 || b >= c.layout.NumBlocks {
		return 0, fmt.Errorf("kvcache: block %d outside the pool of %d blocks", b, c.layout.NumBlocks)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return int(c.pool.blocks[b].ref), nil
}
