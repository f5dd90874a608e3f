package attention

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/stride-lm/stride/tensor"
)

// TraceConfig describes the one attention layer TraceLayer runs: B
// sequences of S new tokens each, on top of Past tokens already cached
// (0 for a plain prefill; S = 1 with Past > 0 is a decode step), with H
// query heads and KVH key/value heads of width D.
type TraceConfig struct {
	B, S, H, KVH, D int
	Past            int
	// BlockSize is the paged cache's block size; 0 means 16.
	BlockSize int
	// Meta traces layouts only, with meta tensors: nothing is allocated
	// or computed, so any size works (the seed's B=2, S=4096, H=32,
	// D=128 included). Without it the layer runs for real on random
	// inputs, which TraceLayer refuses beyond maxRealScoreBytes.
	Meta bool
	// Seed draws the random inputs of a real run.
	Seed uint64
}

// maxRealScoreBytes bounds the [B, H, S, C] scores of a non-meta trace.
const maxRealScoreBytes = 1 << 30

// maxTraceTokens bounds B·(S + blocks per sequence): even in meta mode
// the batch's slot mapping and block tables hold one int32 per token and
// block, so this is what a trace allocates (64 MiB at the bound).
const maxTraceTokens = 1 << 24

// checkTraceSizes refuses, in overflow-checked arithmetic and before
// anything is built, a trace whose sizes overflow int, whose tensors
// exceed the tensor package's 2^53-element bound, or whose batch
// bookkeeping exceeds maxTraceTokens.
func checkTraceSizes(cfg TraceConfig, bs int) error {
	B, S, H, KVH, D := cfg.B, cfg.S, cfg.H, cfg.KVH, cfg.D
	if cfg.Past > math.MaxInt-S {
		return fmt.Errorf("trace: past %d + S %d overflows", cfg.Past, S)
	}
	C := cfg.Past + S
	prod := func(xs ...int) (uint64, bool) {
		p := uint64(1)
		for _, x := range xs {
			hi, lo := bits.Mul64(p, uint64(x))
			if hi != 0 || lo > 1<<53 {
				return 0, false
			}
			p = lo
		}
		return p, true
	}
	blocks := (C-1)/bs + 1
	slots, ok1 := prod(B, S)
	tables, ok2 := prod(B, blocks)
	if !ok1 || !ok2 || slots+tables > maxTraceTokens {
		return fmt.Errorf("trace: B=%d sequences of S=%d tokens over a context of %d need more than %d slot and block-table entries; trace fewer or shorter sequences",
			B, S, C, maxTraceTokens)
	}
	for _, t := range []struct {
		name  string
		sizes []int
	}{{"the scores [B, H, S, C]", []int{B, H, S, C}}, {"the projections [B, S, (H+2·KVH)·D]", []int{B, S, H + 2*KVH, D}},
		{"the KV cache [blocks, block_size, KVH, D]", []int{B, blocks, bs, KVH, D}}} {
		if _, ok := prod(t.sizes...); !ok {
			return fmt.Errorf("trace: %s of B=%d S=%d C=%d H=%d KVH=%d D=%d have more than 2^53 elements", t.name, B, S, C, H, KVH, D)
		}
	}
	return nil
}

// TraceLayer runs one attention layer through the named path ("naive" or
// "fused") and returns its layout trace: one row per stage with shape,
// strides, contiguity, whether the storage is new or shared, and the bytes
// allocated and copied. The same code runs on meta and real tensors and
// records the same rows.
//
// The rows before Attend's own are the projection outputs a model would
// feed it (random stand-ins in a real run):
//
//   - naive: three separate projections Q = x @ Wqᵀ [B, S, H·D],
//     K = x @ Wkᵀ and V = x @ Wvᵀ [B, S, KVH·D], each contiguous, as
//     textbook code (and the seed's table, row 1) has them;
//   - fused: one projection qkv = x @ Wqkvᵀ [B, S, (H+2·KVH)·D] and q, k,
//     v cut out of it by Narrow + View (shared storage, non-contiguous).
func TraceLayer(path string, cfg TraceConfig) (*tensor.Trace, error) {
	bs, err := checkTraceConfig(cfg)
	if err != nil {
		return nil, err
	}
	p, err := tracePath(path)
	if err != nil {
		return nil, err
	}
	qls, cls := make([]int, cfg.B), make([]int, cfg.B)
	for i := range qls {
		qls[i], cls[i] = cfg.S, cfg.Past+cfg.S
	}
	b, numBlocks, err := NewLinearBatch(qls, cls, bs)
	if err != nil {
		return nil, err
	}
	lt := newLayerTrace(path, cfg, bs)
	kCache, vCache, err := lt.kvCache(numBlocks)
	if err != nil {
		return nil, err
	}
	var q, k, v *tensor.Tensor
	if path == "naive" {
		q, k, v, err = lt.projectQKV()
	} else {
		q, k, v, err = lt.projectFusedQKV()
	}
	if err != nil {
		return nil, err
	}
	if _, err := p.Attend(q, k, v, kCache, vCache, b, lt.tr); err != nil {
		return nil, err
	}
	return lt.tr, nil
}

// checkTraceConfig validates cfg and returns its block size (16 when
// unset): positive sizes, H a multiple of KVH, sizes that fit
// (checkTraceSizes), and for a real run scores under maxRealScoreBytes.
func checkTraceConfig(cfg TraceConfig) (bs int, err error) {
	B, S, H, KVH, D := cfg.B, cfg.S, cfg.H, cfg.KVH, cfg.D
	if B <= 0 || S <= 0 || H <= 0 || KVH <= 0 || D <= 0 || cfg.Past < 0 || H%KVH != 0 {
		return 0, fmt.Errorf("trace: need B, S, H, KVH, D > 0, Past ≥ 0 and H a multiple of KVH; got B=%d S=%d H=%d KVH=%d D=%d Past=%d",
			B, S, H, KVH, D, cfg.Past)
	}
	bs = cfg.BlockSize
	if bs == 0 {
		bs = 16
	}
	if bs < 0 {
		return 0, fmt.Errorf("trace: block size %d must be positive", bs)
	}
	if err := checkTraceSizes(cfg, bs); err != nil {
		return 0, err
	}
	C := cfg.Past + S
	if !cfg.Meta && float64(B)*float64(H)*float64(S)*float64(C)*4 > maxRealScoreBytes {
		return 0, fmt.Errorf("trace: a real run of B=%d H=%d S=%d C=%d would materialize %.1f GiB of scores in the naive path; use Meta for layouts at this size",
			B, H, S, C, float64(B)*float64(H)*float64(S)*float64(C)*4/(1<<30))
	}
	return bs, nil
}

// tracePath returns the attention path TraceLayer runs for name.
func tracePath(name string) (Path, error) {
	switch name {
	case "naive":
		return NewNaive(Options{}), nil
	case "fused":
		return NewFused(Options{}), nil
	}
	return nil, fmt.Errorf("trace: unknown attention path %q (want naive or fused)", name)
}

// layerTrace is one TraceLayer run: its config and block size, the trace
// being recorded and, for a real run, the Ledger and seed of the random
// inputs.
type layerTrace struct {
	cfg  TraceConfig
	bs   int
	led  *tensor.Ledger
	seed uint64
	tr   *tensor.Trace
}

func newLayerTrace(path string, cfg TraceConfig, bs int) *layerTrace {
	title := fmt.Sprintf("%s attention: B=%d S=%d H=%d KVH=%d D=%d past=%d block_size=%d", path, cfg.B, cfg.S, cfg.H, cfg.KVH, cfg.D, cfg.Past, bs)
	if cfg.Meta {
		title += " (meta)"
	}
	return &layerTrace{cfg: cfg, bs: bs, led: tensor.NewLedger(), seed: cfg.Seed, tr: tensor.NewTrace(title)}
}

// input returns a stand-in F32 input of shape: a meta tensor, or in a
// real run the next seed's random values.
func (lt *layerTrace) input(shape ...int) (*tensor.Tensor, error) {
	if lt.cfg.Meta {
		return tensor.Meta(tensor.F32, shape...)
	}
	lt.seed++
	return tensor.Randn(lt.led, tensor.F32, lt.seed, shape...)
}

// kvCache records the k_cache and v_cache inputs [numBlocks, block_size,
// KVH, D]: the earlier context, random in a real run.
func (lt *layerTrace) kvCache(numBlocks int) (kCache, vCache *tensor.Tensor, err error) {
	if kCache, err = lt.input(numBlocks, lt.bs, lt.cfg.KVH, lt.cfg.D); err != nil {
		return nil, nil, err
	}
	if vCache, err = lt.input(numBlocks, lt.bs, lt.cfg.KVH, lt.cfg.D); err != nil {
		return nil, nil, err
	}
	lt.tr.Input("k_cache", kCache)
	lt.tr.Input("v_cache", vCache)
	return kCache, vCache, nil
}

// projectQKV is the naive path's three separate projections, recorded as
// Q = x @ Wqᵀ [B, S, H·D], K = x @ Wkᵀ and V = x @ Wvᵀ [B, S, KVH·D], each
// contiguous, returned as the [B·S, heads, D] views Attend takes.
func (lt *layerTrace) projectQKV() (q, k, v *tensor.Tensor, err error) {
	B, S, H, KVH, D := lt.cfg.B, lt.cfg.S, lt.cfg.H, lt.cfg.KVH, lt.cfg.D
	var proj [3]*tensor.Tensor
	for i, w := range []int{H * D, KVH * D, KVH * D} {
		x, err := lt.input(B, S, w)
		if err != nil {
			return nil, nil, nil, err
		}
		lt.tr.Record(fmt.Sprintf("%s = x @ W%sᵀ", []string{"Q", "K", "V"}[i], []string{"q", "k", "v"}[i]), x, int64(x.Nbytes()), 0)
		proj[i] = x
	}
	T := B * S
	if q, err = proj[0].View(T, H, D); err != nil {
		return nil, nil, nil, err
	}
	if k, err = proj[1].View(T, KVH, D); err != nil {
		return nil, nil, nil, err
	}
	if v, err = proj[2].View(T, KVH, D); err != nil {
		return nil, nil, nil, err
	}
	return q, k, v, nil
}

// projectFusedQKV is the fused path's one projection, recorded as
// qkv = x @ Wqkvᵀ [B, S, (H+2·KVH)·D], and q, k, v cut out of it by Narrow
// + View, recorded as q = qkv[..., :H·D].view(B, S, H, D) and so on (shared
// storage, non-contiguous), returned as [B·S, heads, D] views.
func (lt *layerTrace) projectFusedQKV() (q, k, v *tensor.Tensor, err error) {
	B, S, H, KVH, D := lt.cfg.B, lt.cfg.S, lt.cfg.H, lt.cfg.KVH, lt.cfg.D
	qkv, err := lt.input(B, S, (H+2*KVH)*D)
	if err != nil {
		return nil, nil, nil, err
	}
	lt.tr.Record("qkv = x @ Wqkvᵀ", qkv, int64(qkv.Nbytes()), 0)
	var views [3]*tensor.Tensor
	starts := []int{0, H * D, (H + KVH) * D}
	widths := []int{H * D, KVH * D, KVH * D}
	heads := []int{H, KVH, KVH}
	for i := range views {
		x, err := qkv.Narrow(2, starts[i], widths[i])
		if err != nil {
			return nil, nil, nil, err
		}
		if x, err = x.View(B, S, heads[i], D); err != nil {
			return nil, nil, nil, err
		}
		sl := fmt.Sprintf("%d:%d", starts[i], starts[i]+widths[i])
		if i == 0 {
			sl = fmt.Sprintf(":%d", widths[i])
		}
		lt.tr.Record(fmt.Sprintf("%s = qkv[..., %s].view(%d, %d, %d, %d)", []string{"q", "k", "v"}[i], sl, B, S, heads[i], D), x, 0, 0)
		if views[i], err = x.View(B*S, heads[i], D); err != nil {
			return nil, nil, nil, err
		}
	}
	return views[0], views[1], views[2], nil
}
