package engine

import (
	"fmt"

	"github.com/stride-lm/stride/attention"
	"github.com/stride-lm/stride/kvcache"
	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/tokenizer"
	"github.com/stride-lm/stride/tensor"
	"github.com/stride-lm/stride/tensor/kernels"
)

// Options configure an Engine.
type Options struct {
	// Path is the attention path: "fused" (the default: one fused QKV
	// projection, zero-copy head views, the online-softmax paged kernel)
	// or "naive" (three projections, gather, repeat_interleave,
	// materialized scores, transpose().contiguous()).
	Path string
	// BlockSize is the number of token slots per KV block (default 16).
	BlockSize int
	// NumBlocks is the size of the block pool. 0 derives it from KVMemory,
	// or when that is 0 too, from DefaultKVSequences full-length sequences.
	NumBlocks int
	// KVMemory is the byte budget of the KV cache when NumBlocks is 0.
	KVMemory int64
	// Context is the positions per sequence the default pool (neither
	// NumBlocks nor KVMemory set) is sized for: DefaultKVSequences
	// sequences of Context positions. 0 (or more than seq_len) means the
	// model's seq_len.
	Context int
	// KVDType is the cache's storage dtype (F32 default, or F16/BF16).
	KVDType tensor.DType
	// Threads is the number of worker threads of the kernels (0 = cores).
	Threads int
	// MaxBatch caps the number of running sequences (0 = no cap beyond
	// the KV pool).
	MaxBatch int
	// DisablePrefixSharing turns prefix caching off.
	DisablePrefixSharing bool
	// Ledger receives the accounting of activations and the cache.
	Ledger *tensor.Ledger
	// OnLogits, if set, sees the logits every sequence is sampled from:
	// seq is the request index and pos the position of the token whose
	// logits they are. The slice is only valid during the call.
	OnLogits func(seq, pos int, logits []float32)
	// Speculation turns prompt-lookup speculative decoding on (the zero
	// value is off).
	Speculation Speculation
	// Tokenizer, when set, decodes generated tokens into text: Event.Text,
	// Result.Text and the matching of Request.Stop. The engine owns
	// detokenizing, as vLLM's does, so every front end streams the same
	// text.
	Tokenizer tokenizer.Codec
	// MaxBatchedTokens is the per-step token budget of chunked prefill:
	// a prompt longer than what the running decodes leave of it is
	// computed over several steps, between their tokens
	// (docs/serving.md). 0 turns chunking off: a prompt's prefill is one
	// step, however long. DefaultMaxBatchedTokens is the servers'
	// default.
	MaxBatchedTokens int
	// PrefillStall bounds chunked prefill in time: while streams decode,
	// a step's prefill tokens are capped at what costs about this many
	// of their decode steps, from step times the engine measures as it
	// runs (docs/serving.md, "Chunked prefill"). With no stream decoding
	// MaxBatchedTokens alone applies. 0 turns the rule off;
	// DefaultPrefillStall is the servers' default.
	PrefillStall float64
}

// defaultBlockSize is the KV block size when Options.BlockSize is 0.
const defaultBlockSize = 16

// DefaultKVSequences is how many full-length (seq_len) sequences the
// default KV pool holds when neither NumBlocks nor KVMemory is set.
const DefaultKVSequences = 8

// Engine runs generation requests over a model: a paged KV cache, an
// attention path and a forward pass, driven by a continuous-batching
// scheduler. An Engine runs one Run at a time, or, once Start is
// called, the online loop that Submit feeds.
type Engine struct {
	m      *model.Model
	opts   Options
	cache  *kvcache.Cache
	caches []model.LayerCache
	fwd    *model.Forward
	pool   *kernels.Pool
	nextID int
	spec   Speculation // opts.Speculation with its defaults filled

	// afterStep, set by tests, checks the scheduler after every step.
	afterStep func(*scheduler) error

	// chunkAlign is the granularity of prefill chunks in tokens: the
	// prefix alignment, so a chunk starts where a prefix hit may end.
	chunkAlign int
	// loop is the online loop's state (online.go); live the counters
	// Stats reads.
	loop loopState
	live liveCounters
	// kv serves the loop's KV snapshots and events (snapshot.go).
	kv kvDebug

	// step holds the packed inputs of one scheduler step. Its slices are
	// truncated and refilled every step, so a steady decode loop reuses
	// them instead of allocating a batch per token.
	step stepBuffers
}

// New builds an engine for m.
func New(m *model.Model, opts Options) (*Engine, error) {
	c := m.Config
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if opts.BlockSize == 0 {
		opts.BlockSize = defaultBlockSize
	}
	if opts.BlockSize < 0 {
		return nil, fmt.Errorf("engine: block_size must be > 0 (got %d)", opts.BlockSize)
	}
	if opts.MaxBatchedTokens < 0 {
		return nil, fmt.Errorf("engine: max_batched_tokens must be >= 0 (got %d)", opts.MaxBatchedTokens)
	}
	if opts.PrefillStall < 0 || opts.PrefillStall != opts.PrefillStall {
		return nil, fmt.Errorf("engine: max_prefill_stall must be >= 0 (got %v)", opts.PrefillStall)
	}
	if opts.MaxBatch < 0 {
		return nil, fmt.Errorf("engine: max_batch must be >= 0 (got %d)", opts.MaxBatch)
	}
	if opts.Path == "" {
		opts.Path = "fused"
	}
	spec, err := opts.Speculation.normalize()
	if err != nil {
		return nil, err
	}
	// One persistent worker pool serves the matmuls and the attention
	// kernel: workers live for the engine's lifetime, so no call pays for
	// starting goroutines.
	pool := kernels.NewPool(opts.Threads)
	path, proj, err := newPath(opts.Path, attention.Options{Threads: pool.Threads(), Runner: pool})
	if err != nil {
		pool.Close()
		return nil, err
	}
	if err := CheckMemory(c, opts); err != nil {
		pool.Close()
		return nil, err
	}
	align := prefixAlignBlocks(path, c, opts.BlockSize)
	kc := KVPool(c, opts)
	kc.PrefixAlignBlocks = align
	cache, err := kvcache.New(opts.Ledger, kc)
	if err != nil {
		pool.Close()
		return nil, err
	}
	fwd, err := model.NewForward(m, model.ForwardOptions{Projection: proj, Path: path, Ledger: opts.Ledger, Pool: pool})
	if err != nil {
		cache.Release()
		pool.Close()
		return nil, err
	}
	if spec.On() && spec.DraftCost == 0 {
		spec.DraftCost = DefaultDraftCost(fwd.WeightBytes())
	}
	e := &Engine{m: m, opts: opts, cache: cache, fwd: fwd, pool: pool, spec: spec, chunkAlign: align * opts.BlockSize}
	e.loop.wake, e.loop.done = make(chan struct{}, 1), make(chan struct{})
	for l := 0; l < c.NLayers; l++ {
		k, v := cache.Layer(l)
		e.caches = append(e.caches, model.LayerCache{K: k, V: v})
	}
	return e, nil
}

// newPath returns the attention path named name and the QKV projection it
// is written for.
func newPath(name string, aopts attention.Options) (attention.Path, model.Projection, error) {
	switch name {
	case "fused":
		return attention.NewFused(aopts), model.FusedQKV, nil
	case "naive":
		return attention.NewNaive(aopts), model.SeparateQKV, nil
	}
	return nil, 0, fmt.Errorf("engine: unknown attention path %q (want fused or naive)", name)
}

// prefixAlignBlocks is how many blocks a shared prefix must be a multiple
// of so that the path computes the rest of the prompt bit for bit as it
// computes it without the prefix hit: the least common multiple of the
// block size and the path's PrefillAlignment, in blocks. For
// stories260K's heads (8 query heads over 4 KV heads) and 16-token blocks
// on the fused path that is 1 block; an MHA model needs 2.
func prefixAlignBlocks(p attention.Path, c model.Config, blockSize int) int {
	a, ok := p.(interface {
		PrefillAlignment(numHeads, numKVHeads int) int
	})
	if !ok {
		return 1
	}
	tokens := a.PrefillAlignment(c.NHeads, c.NKVHeads)
	g, b := tokens, blockSize
	for b != 0 {
		g, b = b, g%b
	}
	return tokens / g // lcm(blockSize, tokens) / blockSize
}

// Close stops the online loop, if started (the requests it still holds
// finish as FinishInterrupted), and releases the engine's threads and
// cache. Later calls do nothing.
func (e *Engine) Close() {
	e.loop.closeOnce.Do(func() {
		e.stopLoop()
		e.fwd.Close()
		e.cache.Release()
		e.pool.Close()
	})
}

// Model returns the engine's model.
func (e *Engine) Model() *model.Model { return e.m }

// Cache returns the engine's paged KV cache.
func (e *Engine) Cache() *kvcache.Cache { return e.cache }

// Forward returns the engine's forward pass (for tracing).
func (e *Engine) Forward() *model.Forward { return e.fwd }

// PathName returns "fused" or "naive".
func (e *Engine) PathName() string { return e.opts.Path }

// Speculation returns the engine's speculation settings, defaults
// filled (Method "off" or "ngram").
func (e *Engine) Speculation() Speculation { return e.spec }

// Threads is the number of worker threads the engine's kernels use.
func (e *Engine) Threads() int { return e.pool.Threads() }
