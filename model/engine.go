package model

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/stride-lm/stride/attention"
	"github.com/stride-lm/stride/kvcache"
	"github.com/stride-lm/stride/tensor"
	"github.com/stride-lm/stride/tensor/kernels"
)

// EngineOptions configure an Engine.
type EngineOptions struct {
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
}

// DefaultKVSequences is how many full-length (seq_len) sequences the
// default KV pool holds when neither NumBlocks nor KVMemory is set.
const DefaultKVSequences = 8

// Engine runs generation requests over a model: a paged KV cache, an
// attention path and a forward pass, driven by a continuous-batching
// scheduler.
type Engine struct {
	m      *Model
	opts   EngineOptions
	cache  *kvcache.Cache
	caches []LayerCache
	fwd    *Forward
	pool   *kernels.Pool
	nextID int

	// step holds the packed inputs of one scheduler step. Its slices are
	// truncated and refilled every step, so a steady decode loop reuses
	// them instead of allocating a batch per token.
	step struct {
		batch                   attention.Batch
		tokens, positions, rows []int
	}
}

// NewEngine builds an engine for m.
func NewEngine(m *Model, opts EngineOptions) (*Engine, error) {
	c := m.Config
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if opts.BlockSize == 0 {
		opts.BlockSize = 16
	}
	if opts.BlockSize < 0 {
		return nil, fmt.Errorf("engine: block_size must be > 0 (got %d)", opts.BlockSize)
	}
	if opts.Path == "" {
		opts.Path = "fused"
	}
	var (
		path attention.Path
		proj Projection
	)
	// One persistent worker pool serves the matmuls and the attention
	// kernel: workers live for the engine's lifetime, so no call pays for
	// starting goroutines.
	pool := kernels.NewPool(opts.Threads)
	aopts := attention.Options{Threads: pool.Threads(), Runner: pool}
	switch opts.Path {
	case "fused":
		path, proj = attention.NewFused(aopts), FusedQKV
	case "naive":
		path, proj = attention.NewNaive(aopts), SeparateQKV
	default:
		return nil, fmt.Errorf("engine: unknown attention path %q (want fused or naive)", opts.Path)
	}
	kcfg := kvcache.Config{
		NumLayers: c.NLayers, NumKVHeads: c.NKVHeads, HeadDim: c.HeadDim(),
		BlockSize: opts.BlockSize, NumBlocks: opts.NumBlocks, MemoryBudget: opts.KVMemory,
		DType: opts.KVDType, DisablePrefixSharing: opts.DisablePrefixSharing,
	}
	if kcfg.NumBlocks == 0 && kcfg.MemoryBudget == 0 {
		kcfg.NumBlocks = DefaultKVSequences * ((c.SeqLen + opts.BlockSize - 1) / opts.BlockSize)
	}
	cache, err := kvcache.New(opts.Ledger, kcfg)
	if err != nil {
		pool.Close()
		return nil, err
	}
	fwd, err := NewForward(m, ForwardOptions{Projection: proj, Path: path, Ledger: opts.Ledger, Pool: pool})
	if err != nil {
		cache.Release()
		pool.Close()
		return nil, err
	}
	e := &Engine{m: m, opts: opts, cache: cache, fwd: fwd, pool: pool}
	for l := 0; l < c.NLayers; l++ {
		k, v := cache.Layer(l)
		e.caches = append(e.caches, LayerCache{K: k, V: v})
	}
	return e, nil
}

// Close releases the engine's threads and cache.
func (e *Engine) Close() {
	e.fwd.Close()
	e.cache.Release()
	e.pool.Close()
}

// Model returns the engine's model.
func (e *Engine) Model() *Model { return e.m }

// Cache returns the engine's paged KV cache.
func (e *Engine) Cache() *kvcache.Cache { return e.cache }

// Forward returns the engine's forward pass (for tracing).
func (e *Engine) Forward() *Forward { return e.fwd }

// PathName returns "fused" or "naive".
func (e *Engine) PathName() string { return e.opts.Path }

// Request is one sequence to generate, with run.c's semantics.
type Request struct {
	// Prompt holds the token ids fed first, starting with BOS (what
	// Tokenizer.Encode(text, true, false) returns; just [BOS] for no
	// prompt).
	Prompt []int
	// Steps is run.c's -n: the number of positions run, prompt included.
	// The result holds at most Steps ids.
	Steps int
	// Sampler picks each generated token; it is used by this request only.
	Sampler *Sampler
	// StopTokens, when not nil, are the ids that end the sequence
	// (FinishEOS, the id not included): a GGUF model's EOS/EOT ids and its
	// BOS. The prompt then need not start with BOSID, since such a
	// vocabulary has its own BOS (or none). nil keeps run.c's rule: the
	// prompt starts with BOSID and generation stops at BOSID.
	StopTokens []int
}

// stops reports whether id ends the request's sequence.
func (r *Request) stops(id int) bool {
	if r.StopTokens == nil {
		return id == BOSID
	}
	return slices.Contains(r.StopTokens, id)
}

// Event is one token of one sequence, streamed while generating.
type Event struct {
	Seq   int // index of the request
	Pos   int // position of Prev; Token is fed at Pos+1
	Prev  int // the token before (for Tokenizer.Decode)
	Token int // the token
}

// Result is the outcome of one request.
type Result struct {
	// Tokens are the `next` ids of every step, as run.c would feed them:
	// the prompt's tokens after BOS, then the generated ones. Generation
	// stops at BOS (Request.StopTokens when set; not included) or after
	// Steps ids.
	Tokens []int
	// Err is set when the request was rejected (a prompt longer than
	// seq_len, or larger than the whole KV pool); other requests go on.
	Err error
	// CachedTokens counts prompt positions whose K/V came from a shared
	// prefix instead of being computed.
	CachedTokens int
	// Preemptions counts how often the sequence was evicted to free
	// blocks and later recomputed.
	Preemptions int
	// FinishReason says why the sequence stopped.
	FinishReason FinishReason
}

// FinishReason says why a sequence stopped generating. The values are the
// strings vLLM and llama.cpp's server report, so JSON consumers of either
// read ours unchanged.
type FinishReason string

// The reasons a sequence stops.
const (
	FinishLength      FinishReason = "length"      // Steps or the context used up
	FinishEOS         FinishReason = "eos"         // the model emitted its end token
	FinishStop        FinishReason = "stop"        // a stop string matched
	FinishInterrupted FinishReason = "interrupted" // the caller cancelled the run
	FinishError       FinishReason = "error"       // the request was rejected (Result.Err)
)

// Hooks receive a run's progress as it happens. Either may be nil.
type Hooks struct {
	// Token receives every token as soon as it is known (prompt tokens
	// when the sequence is admitted, generated ones step by step).
	Token func(Event)
	// Finish receives each sequence's final Result the moment it retires
	// (finished, rejected or interrupted), in completion order. It is
	// called exactly once per request.
	Finish func(seq int, r Result)
}

// GenStats summarizes a Generate call.
type GenStats struct {
	Steps         int           // forward passes (scheduler steps)
	PrefillTokens int           // tokens processed in prefill rows
	DecodeTokens  int           // tokens processed in decode rows
	PrefillTime   time.Duration // time of steps that held prefill rows
	DecodeTime    time.Duration // time of pure decode steps
	MaxBatch      int           // most sequences in one step
	Preemptions   int
}

// seqState is the scheduler's view of one request.
type seqState struct {
	idx      int
	id       int // kvcache sequence id
	req      Request
	tokens   []int // BOS, prompt, generated: tokens[p] is fed at position p
	computed int   // positions whose K/V are in the cache
	res      *Result
	admitted bool
	// table is the sequence's block table as of its last step (nil until
	// fetched): see Engine.blockTable. tableBuf is the buffer it is
	// fetched into, kept across readmissions.
	table, tableBuf []int32
}

// Generate runs the requests together with continuous batching and
// returns one Result per request, in order. emit, if non-nil, receives
// every token as soon as it is known (prompt tokens when the sequence is
// admitted, generated ones step by step).
//
// Each step admits waiting sequences while the pool has blocks for their
// prompt, then runs one forward pass over the prefill rows of the newly
// admitted sequences and one decode row for every running one. Finished
// sequences free their blocks at once. When the pool runs dry mid-decode,
// the most recently admitted sequence is preempted (its blocks freed, its
// tokens recomputed later, its sampler state kept), so each sequence's
// output equals what it would be alone.
func (e *Engine) Generate(reqs []Request, emit func(Event)) ([]Result, GenStats, error) {
	return e.Run(context.Background(), reqs, Hooks{Token: emit})
}

// Run is Generate with cancellation and a completion hook. When ctx is
// cancelled, the run stops at the next step boundary: every sequence not
// yet finished keeps the tokens it has, gets FinishInterrupted and is
// reported to hooks.Finish, and Run returns ctx's error beside the
// results.
func (e *Engine) Run(ctx context.Context, reqs []Request, hooks Hooks) ([]Result, GenStats, error) {
	emit := hooks.Token
	c := e.m.Config
	results := make([]Result, len(reqs))
	var st GenStats
	var waiting, running []*seqState
	for i, r := range reqs {
		s := &seqState{idx: i, req: r, res: &results[i]}
		switch {
		case len(r.Prompt) == 0:
			s.res.Err = fmt.Errorf("request %d: empty prompt", i)
		case r.StopTokens == nil && r.Prompt[0] != BOSID:
			s.res.Err = fmt.Errorf("request %d: prompt must start with BOS (%d)", i, BOSID)
		case r.Sampler == nil:
			s.res.Err = fmt.Errorf("request %d: no sampler", i)
		case r.Steps < 1:
			s.res.Err = fmt.Errorf("request %d: steps must be >= 1 (got %d)", i, r.Steps)
		case len(r.Prompt) > c.SeqLen:
			s.res.Err = fmt.Errorf("request %d: prompt of %d tokens is longer than seq_len %d", i, len(r.Prompt), c.SeqLen)
		case r.Steps > c.SeqLen:
			s.res.Err = fmt.Errorf("request %d: steps %d exceed seq_len %d", i, r.Steps, c.SeqLen)
		default:
			if err := e.cache.CanEverFit(min(r.Steps, c.SeqLen)); err != nil {
				s.res.Err = fmt.Errorf("request %d: %w", i, err)
				break
			}
			for _, tok := range r.Prompt {
				if tok < 0 || tok >= c.VocabSize {
					s.res.Err = fmt.Errorf("request %d: token %d is outside the vocabulary (size %d)", i, tok, c.VocabSize)
					break
				}
			}
		}
		if s.res.Err != nil {
			finish(hooks, s, FinishError)
			continue
		}
		if len(r.Prompt)-1 >= r.Steps {
			// The whole run is forced prompt tokens: nothing to compute.
			s.res.Tokens = append([]int(nil), r.Prompt[1:r.Steps+1]...)
			e.emitForced(s, emit, r.Steps+1)
			finish(hooks, s, FinishLength)
			continue
		}
		// Room for every token the request can reach (Steps ≤ seq_len), so
		// the decode loop's appends never reallocate.
		s.tokens = append(make([]int, 0, r.Steps+1), r.Prompt...)
		s.res.Tokens = make([]int, 0, r.Steps)
		s.tableBuf = make([]int32, 0, (r.Steps+e.cache.BlockSize()-1)/e.cache.BlockSize())
		waiting = append(waiting, s)
	}

	for len(waiting) > 0 || len(running) > 0 {
		if err := ctx.Err(); err != nil {
			// Running sequences hold blocks; waiting ones (new or
			// preempted) hold none.
			for _, s := range running {
				if ferr := e.cache.Free(s.id); ferr != nil {
					return results, st, ferr
				}
			}
			for _, s := range append(running, waiting...) {
				finish(hooks, s, FinishInterrupted)
			}
			return results, st, err
		}
		// 1. Admit waiting sequences while blocks (and the batch cap) allow.
		for len(waiting) > 0 && (e.opts.MaxBatch == 0 || len(running) < e.opts.MaxBatch) {
			s := waiting[0]
			s.id = e.nextID
			cached, err := e.cache.AddSequence(s.id, s.tokens)
			if errors.Is(err, kvcache.ErrOutOfBlocks) {
				if len(running) == 0 {
					return results, st, fmt.Errorf("scheduler: sequence %d cannot be admitted into an idle cache: %w", s.idx, err)
				}
				break
			}
			if err != nil {
				return results, st, fmt.Errorf("scheduler: %w", err)
			}
			// Positions 0 … Steps−1 are the most the sequence feeds:
			// size the cache's bookkeeping for them once, so its decode
			// steps allocate nothing there either.
			if err := e.cache.Reserve(s.id, s.req.Steps); err != nil {
				return results, st, fmt.Errorf("scheduler: %w", err)
			}
			e.nextID++
			waiting = waiting[1:]
			s.computed = cached
			s.table = nil // new id, new blocks
			if !s.admitted {
				s.admitted = true
				s.res.CachedTokens = cached
				e.emitForced(s, emit, len(s.req.Prompt))
			}
			running = append(running, s)
		}

		// 2. Hand out slots; preempt the newest sequence when blocks run out.
		batch, tokens, positions, rows, err := e.buildStep(&running, &waiting, &st)
		if err != nil {
			return results, st, err
		}
		if len(running) == 0 {
			continue
		}

		// 3. One forward pass over every row of the step.
		prefill := false
		for _, s := range running {
			if len(s.tokens)-s.computed > 1 {
				prefill = true
			}
		}
		t0 := time.Now()
		logits, err := e.fwd.Run(tokens, positions, batch, e.caches, rows)
		if err != nil {
			return results, st, err
		}
		dt := time.Since(t0)
		st.Steps++
		st.MaxBatch = max(st.MaxBatch, len(running))
		if prefill {
			st.PrefillTime += dt
		} else {
			st.DecodeTime += dt
		}

		// 4. Sample, stream, retire.
		kept := running[:0]
		for i, s := range running {
			n := len(s.tokens) - s.computed
			if n > 1 {
				st.PrefillTokens += n
			} else {
				st.DecodeTokens += n
			}
			s.computed = len(s.tokens)
			if err := e.cache.Commit(s.id, s.tokens); err != nil {
				return results, st, err
			}
			row := logits[i*c.VocabSize : (i+1)*c.VocabSize]
			if e.opts.OnLogits != nil {
				e.opts.OnLogits(s.idx, len(s.tokens)-1, row)
			}
			next := s.req.Sampler.Sample(row)
			done, why := s.req.stops(next), FinishEOS
			if !done {
				prev := s.tokens[len(s.tokens)-1]
				s.tokens = append(s.tokens, next)
				s.res.Tokens = append(s.res.Tokens, next)
				if emit != nil {
					emit(Event{Seq: s.idx, Pos: len(s.tokens) - 2, Prev: prev, Token: next})
				}
				done, why = len(s.tokens)-1 >= s.req.Steps, FinishLength
			}
			if done {
				if err := e.cache.Free(s.id); err != nil {
					return results, st, err
				}
				finish(hooks, s, why)
				continue
			}
			kept = append(kept, s)
		}
		running = kept
	}
	return results, st, nil
}

// finish sets s's finish reason and reports its result.
func finish(h Hooks, s *seqState, why FinishReason) {
	s.res.FinishReason = why
	if h.Finish != nil {
		h.Finish(s.idx, *s.res)
	}
}

// emitForced records and streams the prompt tokens after BOS (up to n
// tokens of the prompt), which run.c prints as it feeds them.
func (e *Engine) emitForced(s *seqState, emit func(Event), n int) {
	p := s.req.Prompt[:min(n, len(s.req.Prompt))]
	if len(s.res.Tokens) == 0 {
		s.res.Tokens = append(s.res.Tokens, p[1:]...)
	}
	if emit == nil {
		return
	}
	for i := 1; i < len(p); i++ {
		emit(Event{Seq: s.idx, Pos: i - 1, Prev: p[i-1], Token: p[i]})
	}
}

// buildStep asks the cache for the slots of every running sequence's new
// tokens and packs them into one batch. When the pool is out of blocks it
// undoes the slots handed out in this step, preempts the most recently
// admitted sequence (back to the front of the waiting queue, to be
// recomputed), and tries again.
//
// The batch and the token, position and row slices are the engine's step
// buffers (see Engine.step): they are valid until the next call.
func (e *Engine) buildStep(running, waiting *[]*seqState, st *GenStats) (*attention.Batch, []int, []int, []int, error) {
	buf := &e.step
	b := &buf.batch
	for {
		b.QueryStart, b.QueryLen, b.ContextLen = b.QueryStart[:0], b.QueryLen[:0], b.ContextLen[:0]
		b.BlockTables, b.SlotMapping = b.BlockTables[:0], b.SlotMapping[:0]
		tokens, positions, rows := buf.tokens[:0], buf.positions[:0], buf.rows[:0]
		failed := -1
		for i, s := range *running {
			n := len(s.tokens) - s.computed
			// The slots go straight into the batch's slot mapping (the
			// cache appends them; nothing is allocated once it has grown).
			from := len(b.SlotMapping)
			var err error
			b.SlotMapping, err = e.cache.AppendSlots(b.SlotMapping, s.id, s.computed, n)
			if errors.Is(err, kvcache.ErrOutOfBlocks) {
				failed = i
				break
			}
			if err != nil {
				return nil, nil, nil, nil, err
			}
			table, err := e.blockTable(s, b.SlotMapping[from:])
			if err != nil {
				return nil, nil, nil, nil, err
			}
			b.QueryStart = append(b.QueryStart, len(tokens))
			b.QueryLen = append(b.QueryLen, n)
			b.ContextLen = append(b.ContextLen, len(s.tokens))
			b.BlockTables = append(b.BlockTables, table)
			for p := s.computed; p < len(s.tokens); p++ {
				tokens = append(tokens, s.tokens[p])
				positions = append(positions, p)
			}
			rows = append(rows, len(tokens)-1)
		}
		buf.tokens, buf.positions, buf.rows = tokens, positions, rows // keep grown capacity
		if failed < 0 {
			return b, tokens, positions, rows, nil
		}
		// Roll back this step's slots, then evict the newest sequence.
		for _, s := range (*running)[:failed] {
			if err := e.cache.Truncate(s.id, s.computed); err != nil {
				return nil, nil, nil, nil, err
			}
		}
		r := *running
		victim := r[len(r)-1]
		if len(r) == 1 {
			return nil, nil, nil, nil, fmt.Errorf("scheduler: sequence %d alone does not fit the KV pool", victim.idx)
		}
		if err := e.cache.Free(victim.id); err != nil {
			return nil, nil, nil, nil, err
		}
		victim.computed = 0
		victim.table = nil
		victim.res.Preemptions++
		st.Preemptions++
		*running = r[:len(r)-1]
		*waiting = append([]*seqState{victim}, *waiting...)
	}
}

// blockTable returns sequence s's block table for a step whose new
// positions s.computed, s.computed+1, … got slots. The engine keeps a
// copy of the table as of the sequence's last step, in a buffer of its
// own, and refills it (AppendBlockTable) only when a slot lies in a block
// that copy does not list at that index. That is exact, because
// Slots changes a table only at the blocks of the positions it hands out
// (growing it, or replacing a shared block by its copy-on-write copy), and
// slot = table[p/block_size]·block_size + p%block_size names the block of
// each of them; the other blocks of a running sequence change only by
// Truncate (the rollback above), after which the next step's slots in the
// truncated range are checked the same way. A decode step inside a block
// therefore reuses the table, and Batch.Validate rechecks every slot
// against it.
func (e *Engine) blockTable(s *seqState, slots []int32) ([]int32, error) {
	bs := e.cache.BlockSize()
	ok := s.table != nil
	for j, slot := range slots {
		i := (s.computed + j) / bs
		if i >= len(s.table) || int(s.table[i]) != int(slot)/bs {
			ok = false
			break
		}
	}
	if ok {
		return s.table, nil
	}
	// Refetch into the sequence's own buffer: no step still holds the old
	// table (the batch is rebuilt every step), so it can be overwritten.
	t, err := e.cache.AppendBlockTable(s.tableBuf[:0], s.id)
	if err != nil {
		return nil, err
	}
	s.table, s.tableBuf = t, t
	return t, nil
}

// newBatch describes one sequence's step for Forward.Run: n new tokens
// ending at context length ctx, in the blocks of table, written at slots.
func newBatch(n, ctx int, table, slots []int32) *attention.Batch {
	return &attention.Batch{
		QueryStart:  []int{0},
		QueryLen:    []int{n},
		ContextLen:  []int{ctx},
		BlockTables: [][]int32{table},
		SlotMapping: slots,
	}
}

// Threads is the number of worker threads the engine's kernels use.
func (e *Engine) Threads() int { return e.pool.Threads() }
