package model

import (
	"slices"
	"testing"

	"github.com/stride-lm/stride/attention"
	"github.com/stride-lm/stride/kvcache"
	"github.com/stride-lm/stride/tensor"
	"github.com/stride-lm/stride/tensor/kernels"
)

// Package model's tests cannot import the scheduler (model/engine imports
// model), so the ones that generate drive one sequence through a Forward
// and a paged cache themselves: exactly what the engine runs for a
// sequence alone (model/engine's tests check that its logits equal this
// driver's, bit for bit).

// stepOpts configure a stepper: attention path ("fused" or "naive"), KV
// block size and pool size (0: 16 and the whole of seq_len), KV dtype,
// and the worker threads of one pool shared by the matmuls and the
// attention kernel, as the engine does (0 = cores).
type stepOpts struct {
	path                 string
	blockSize, numBlocks int
	kvDType              tensor.DType
	threads              int
}

// stepper runs one sequence, id 0, step by step.
type stepper struct {
	fwd    *Forward
	cache  *kvcache.Cache
	caches []LayerCache
	pos    int
}

func newStepper(t testing.TB, m *Model, o stepOpts) *stepper {
	t.Helper()
	c := m.Config
	if o.blockSize == 0 {
		o.blockSize = 16
	}
	if o.numBlocks == 0 {
		o.numBlocks = (c.SeqLen + o.blockSize - 1) / o.blockSize
	}
	pool := kernels.NewPool(o.threads)
	t.Cleanup(pool.Close)
	aopts := attention.Options{Threads: pool.Threads(), Runner: pool}
	var path attention.Path = attention.NewFused(aopts)
	proj := FusedQKV
	if o.path == "naive" {
		path, proj = attention.NewNaive(aopts), SeparateQKV
	}
	fwd, err := NewForward(m, ForwardOptions{Projection: proj, Path: path, Pool: pool})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fwd.Close)
	cache, err := kvcache.New(nil, kvcache.Config{NumLayers: c.NLayers, NumKVHeads: c.NKVHeads, HeadDim: c.HeadDim(),
		BlockSize: o.blockSize, NumBlocks: o.numBlocks, DType: o.kvDType, DisablePrefixSharing: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cache.Release)
	s := &stepper{fwd: fwd, cache: cache}
	for l := 0; l < c.NLayers; l++ {
		k, v := cache.Layer(l)
		s.caches = append(s.caches, LayerCache{K: k, V: v})
	}
	return s
}

// batch hands out the slots of the next n positions and describes them.
func (s *stepper) batch(t testing.TB, tokens []int) (*attention.Batch, []int) {
	t.Helper()
	if s.pos == 0 {
		if _, err := s.cache.AddSequence(0, tokens); err != nil {
			t.Fatal(err)
		}
	}
	n := len(tokens)
	slots, err := s.cache.Slots(0, s.pos, n)
	if err != nil {
		t.Fatal(err)
	}
	table, err := s.cache.BlockTable(0)
	if err != nil {
		t.Fatal(err)
	}
	pos := make([]int, n)
	for i := range pos {
		pos[i] = s.pos + i
	}
	s.pos += n
	return &attention.Batch{QueryStart: []int{0}, QueryLen: []int{n}, ContextLen: []int{s.pos},
		BlockTables: [][]int32{table}, SlotMapping: slots}, pos
}

// feed runs tokens at the next positions (a prefill when there are
// several) and returns a copy of the last one's logits.
func (s *stepper) feed(t testing.TB, tokens ...int) []float32 {
	t.Helper()
	b, pos := s.batch(t, tokens)
	lg, err := s.fwd.Run(tokens, pos, b, s.caches, []int{len(tokens) - 1})
	if err != nil {
		t.Fatal(err)
	}
	return slices.Clone(lg)
}

// greedyRun generates greedily from BOS for up to steps positions, as
// run.c does: the `next` ids (stopping at BOS, not included), and the
// logits each was picked from.
func greedyRun(t testing.TB, m *Model, o stepOpts, steps int) (ids []int, logits [][]float32) {
	t.Helper()
	s := newStepper(t, m, o)
	sm := NewSampler(m.Config.VocabSize, 0, 0, 1)
	tok := BOSID
	for p := 0; p < steps; p++ {
		lg := s.feed(t, tok)
		logits = append(logits, lg)
		if tok = sm.Sample(lg); tok == BOSID {
			break
		}
		ids = append(ids, tok)
	}
	return ids, logits
}

// greedyIDs generates steps tokens greedily from BOS on m.
func greedyIDs(t testing.TB, m *Model, steps int) []int {
	t.Helper()
	ids, _ := greedyRun(t, m, stepOpts{}, steps)
	return ids
}

// forcedLogits feeds tokens one position at a time (teacher forcing) and
// returns the logits after each position.
func forcedLogits(t testing.TB, m *Model, o stepOpts, tokens []int) [][]float32 {
	t.Helper()
	s := newStepper(t, m, o)
	out := make([][]float32, len(tokens))
	for p, tok := range tokens {
		out[p] = s.feed(t, tok)
	}
	return out
}

// newForwardErr is the error NewForward gives for m, if any.
func newForwardErr(m *Model) error {
	f, err := NewForward(m, ForwardOptions{Path: attention.NewFused(attention.Options{})})
	if err == nil {
		f.Close()
	}
	return err
}
