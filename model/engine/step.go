package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/stride-lm/stride/attention"
	"github.com/stride-lm/stride/kvcache"
)

// stepBuffers are the packed inputs of one step, kept by the Engine and
// refilled every step: once they have grown to the largest step, a steady
// decode loop allocates nothing for them.
type stepBuffers struct {
	seqs                    []kvcache.StepSeq // what each running sequence computes
	kv                      kvcache.Step      // its slots and block tables
	batch                   attention.Batch
	tables                  [][]int32 // batch.BlockTables when verify rows split a sequence
	tokens, positions, rows []int
}

// step hands out the slots of every running sequence's pending positions
// (preempting when the pool runs dry), packs them into one batch and runs
// the forward pass over it. It returns the logits of each running
// sequence's last row, or of every row of a verify step, from row
// q.logitRow on, valid until the next step.
func (s *scheduler) step() ([]float32, error) {
	if err := s.propose(); err != nil {
		return nil, err
	}
	if err := s.allocate(); err != nil {
		return nil, err
	}
	b := s.pack()
	prefill := false
	prompt, decodes := 0, 0 // the step's prefill tokens and decode rows
	for _, q := range s.running {
		prefill = prefill || q.chunk > 1
		if q.computed < len(q.req.Prompt) {
			prompt += q.chunk
		} else {
			decodes += q.chunk + len(q.spec.drafts)
		}
	}
	e := s.e
	t0 := time.Now()
	logits, err := e.fwd.Run(e.step.tokens, e.step.positions, b, e.caches, e.step.rows)
	if err != nil {
		return nil, err
	}
	dt := time.Since(t0)
	s.cost.observe(dt, prompt, decodes)
	s.st.Steps++
	s.st.MaxBatch = max(s.st.MaxBatch, len(s.running))
	if prefill {
		s.st.PrefillTime += dt
	} else {
		s.st.DecodeTime += dt
	}
	return logits, nil
}

// allocate asks the cache for the step's slots. When the pool is out of
// blocks (the step changed nothing), the most recently admitted sequence
// is preempted and the step asked for again.
func (s *scheduler) allocate() error {
	buf := &s.e.step
	for {
		s.plan()
		buf.seqs = buf.seqs[:0]
		for _, q := range s.running {
			if n := q.chunk + len(q.spec.drafts); n > 0 {
				buf.seqs = append(buf.seqs, kvcache.StepSeq{ID: q.id, N: n})
			}
		}
		err := s.e.cache.AppendStep(&buf.kv, buf.seqs)
		if err == nil {
			return nil
		}
		if !errors.Is(err, kvcache.ErrOutOfBlocks) {
			return fmt.Errorf("scheduler: %w", err)
		}
		if err := s.preempt(); err != nil {
			return err
		}
	}
}

// preempt evicts the most recently admitted running sequence: its blocks
// go back to the pool and it returns to the front of the waiting queue,
// keeping its tokens and sampler, to be recomputed when readmitted. The
// last running sequence is never preempted: alone, it does not fit.
func (s *scheduler) preempt() error {
	n := len(s.running)
	victim := s.running[n-1]
	if n == 1 {
		return fmt.Errorf("scheduler: sequence %d alone does not fit the KV pool", victim.idx)
	}
	if err := s.e.cache.Free(victim.id); err != nil {
		return fmt.Errorf("scheduler: %w", err)
	}
	victim.computed = 0
	victim.spec.drafts = victim.spec.drafts[:0] // drafted again when it decodes again
	victim.spec.hasShadow = false
	victim.res.Preemptions++
	s.st.Preemptions++
	s.running = s.running[:n-1]
	s.waiting = append([]*seqState{victim}, s.waiting...)
	return nil
}

// pack lays the step out for Forward.Run: each running sequence's
// pending tokens as consecutive rows (in the order AppendStep handed out
// their slots, so the cache's slot mapping is the batch's), its context
// length and block table, and its last row as the one whose logits are
// sampled.
//
// A sequence with drafts contributes its last token and its d drafts as
// d+1 consecutive rows, all of whose logits are returned, attended as
// d+1 one-row entries over the same block table with context lengths
// c+1 … c+d+1 (the causal mask of one (d+1)-row query). Each row is then
// computed exactly as a decode step computes it at that position, so a
// greedy run's logits are decode's bits whatever was drafted, and
// speculation never changes greedy output. The fused kernel runs such a
// run of entries as one row group (attention/group.go), which walks the
// block table once and reads each K/V tile once for all the rows, each
// row keeping its decode arithmetic; one (d+1)-row query would share the
// reads too, but its tiles sum in another order than the decode loops
// (docs/speculative.md).
func (s *scheduler) pack() *attention.Batch {
	buf := &s.e.step
	b := &buf.batch
	b.QueryStart, b.QueryLen, b.ContextLen = b.QueryStart[:0], b.QueryLen[:0], b.ContextLen[:0]
	b.BlockTables, b.SlotMapping = buf.kv.BlockTables, buf.kv.SlotMapping
	tokens, positions, rows := buf.tokens[:0], buf.positions[:0], buf.rows[:0]
	split := false
	for _, q := range s.running {
		split = split || len(q.spec.drafts) > 0
	}
	if split {
		buf.tables = buf.tables[:0]
	}
	i := -1 // the sequence's index in the step (AppendStep's order)
	for _, q := range s.running {
		n, d := q.chunk, len(q.spec.drafts)
		if n+d == 0 {
			continue
		}
		i++
		q.logitRow = len(rows)
		if d == 0 {
			b.QueryStart = append(b.QueryStart, len(tokens))
			b.QueryLen = append(b.QueryLen, n+d)
			b.ContextLen = append(b.ContextLen, q.computed+n+d)
			if split {
				buf.tables = append(buf.tables, buf.kv.BlockTables[i])
			}
		} else {
			for j := 0; j <= d; j++ {
				b.QueryStart = append(b.QueryStart, len(tokens)+j)
				b.QueryLen = append(b.QueryLen, 1)
				b.ContextLen = append(b.ContextLen, q.computed+1+j)
				buf.tables = append(buf.tables, buf.kv.BlockTables[i])
			}
		}
		for p := q.computed; p < q.computed+n; p++ {
			tokens = append(tokens, q.tokens[p])
			positions = append(positions, p)
		}
		for j, t := range q.spec.drafts {
			tokens = append(tokens, t)
			positions = append(positions, q.computed+n+j)
		}
		if d == 0 {
			rows = append(rows, len(tokens)-1)
		} else {
			for r := len(tokens) - d - 1; r < len(tokens); r++ {
				rows = append(rows, r)
			}
		}
	}
	if split {
		b.BlockTables = buf.tables
	}
	buf.tokens, buf.positions, buf.rows = tokens, positions, rows // keep grown capacity
	return b
}
