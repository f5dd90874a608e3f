package model

import (
	"fmt"
	"math"

	"github.com/stride-lm/stride/attention"
	"github.com/stride-lm/stride/tensor"
	"github.com/stride-lm/stride/tensor/kernels"
)

// This file is the forward pass, read top to bottom like llama2.c's
// forward(): embedding → per layer (RMSNorm, QKV projection, RoPE,
// attention, output projection, residual, RMSNorm, SwiGLU MLP, residual) →
// final RMSNorm → classifier. The difference from run.c is that it runs on
// T packed tokens of many sequences at once (a [T, dim] activation), and
// that attention is an interchangeable attention.Path reading a paged KV
// cache.

// Projection selects how Q, K and V are computed.
type Projection int

const (
	// FusedQKV runs one matmul against WQKV and cuts Q, K and V out of its
	// [T, (H+2·KVH)·D] output by views (Narrow + View): zero bytes copied.
	FusedQKV Projection = iota
	// SeparateQKV runs three matmuls against the wq, wk and wv row blocks
	// of WQKV, each producing a contiguous tensor, as textbook code does.
	SeparateQKV
)

// LayerCache is the paged K and V cache of one layer,
// [num_blocks, block_size, n_kv_heads, head_dim] each.
type LayerCache struct{ K, V *tensor.Tensor }

// Forward holds the reusable buffers of a forward pass over up to
// MaxTokens packed tokens. Buffers are allocated once and grown on demand,
// so a steady decode loop allocates nothing per token.
type Forward struct {
	m     *Model
	proj  Projection
	path  attention.Path
	led   *tensor.Ledger
	mats  *matrices
	trace *tensor.Trace

	// rope is the rotation of q and k: pair layout and cos/sin tables of
	// pos·freq_j (see rope.go).
	rope *rope

	cap int       // tokens the buffers below can hold
	x   []float32 // [T, dim]      residual stream
	xb  []float32 // [T, dim]      normed input of a sub-block
	xb2 []float32 // [T, dim]      output of a projection back to dim
	qkv []float32 // [T, qkvRows]  fused QKV output (or Q|K|V for separate)
	q   []float32 // [T, H·D]      separate Q (SeparateQKV only)
	k   []float32 // [T, KVH·D]    separate K
	v   []float32 // [T, KVH·D]    separate V
	hb  []float32 // [T, hidden]   w1·x, then silu(w1·x)⊙(w3·x)
	hb2 []float32 // [T, hidden]   w3·x
	lg  []float32 // [rows, vocab] logits of the rows asked for
	xl  []float32 // [rows, dim]   final-normed rows for the classifier

	// viewsByT[T] are the q, k, v views of a T-token step. Every layer
	// writes its projection into the same buffer, so the views depend
	// only on T: each is built the first time a step of T tokens runs and
	// kept until the buffers grow. A decode loop allocates no tensor
	// metadata per layer or per token, nor when T changes from step to
	// step (speculative verify rows, sequences joining and finishing).
	viewsByT []qkvViews
}

// qkvViews are the [T, H, D] and [T, KVH, D] views of one step's q, k, v.
type qkvViews struct{ q, k, v *tensor.Tensor }

// ForwardOptions configures a Forward.
type ForwardOptions struct {
	Projection Projection
	Path       attention.Path
	Ledger     *tensor.Ledger // accounting for activations (may be nil)
	Threads    int            // worker threads for matmuls (0 = all cores)
	// Pool runs the matmuls; nil makes the Forward start (and Close) its
	// own pool of Threads workers.
	Pool *kernels.Pool
}

// NewForward prepares a forward pass of m through path.
func NewForward(m *Model, opts ForwardOptions) (*Forward, error) {
	if opts.Path == nil {
		return nil, fmt.Errorf("forward: no attention path")
	}
	c := m.Config
	if err := c.Validate(); err != nil {
		return nil, err
	}
	mats, err := newMatrices(m, opts.Pool, opts.Threads)
	if err != nil {
		return nil, err
	}
	f := &Forward{m: m, proj: opts.Projection, path: opts.Path, led: opts.Ledger, mats: mats}
	var factors []float32
	if rf := m.Weights.RopeFreqs; rf != nil {
		if factors, err = rf.Float32s(); err != nil {
			mats.close()
			return nil, fmt.Errorf("forward: rope_freqs: %w", err)
		}
	}
	if f.rope, err = newRope(c, factors); err != nil {
		mats.close()
		return nil, err
	}
	return f, nil
}

// Close releases the worker threads.
func (f *Forward) Close() { f.mats.close() }

// SetTrace makes the next Run record every stage of layer 0's attention
// into tr (nil turns tracing off).
func (f *Forward) SetTrace(tr *tensor.Trace) { f.trace = tr }

func (f *Forward) grow(T, rows int) {
	c := f.m.Config
	if T > f.cap {
		f.cap = T
		f.x = make([]float32, T*c.Dim)
		f.xb = make([]float32, T*c.Dim)
		f.xb2 = make([]float32, T*c.Dim)
		f.qkv = make([]float32, T*c.QKVRows())
		if f.proj == SeparateQKV || f.mats.unfused {
			f.q = make([]float32, T*c.NHeads*c.HeadDim())
			f.k = make([]float32, T*c.KVDim())
			f.v = make([]float32, T*c.KVDim())
		}
		f.hb = make([]float32, T*c.HiddenDim)
		f.hb2 = make([]float32, T*c.HiddenDim)
		f.viewsByT = make([]qkvViews, T+1) // buffers moved: views must be rebuilt
	}
	if rows*c.VocabSize > len(f.lg) {
		f.lg = make([]float32, rows*c.VocabSize)
		f.xl = make([]float32, rows*c.Dim)
	}
}

// Run computes the logits for the packed tokens of one step.
//
// tokens[t] sits at position positions[t] of its sequence; b describes the
// sequences (see attention.Batch) and caches holds each layer's paged KV.
// Logits are returned for the token rows listed in logitRows (typically
// the last new token of each sequence), as a [len(logitRows), vocab] slice
// that stays valid until the next Run.
func (f *Forward) Run(tokens, positions []int, b *attention.Batch, caches []LayerCache, logitRows []int) ([]float32, error) {
	if err := f.checkStep(tokens, positions, caches, logitRows); err != nil {
		return nil, err
	}
	T := len(tokens)
	f.grow(T, len(logitRows))
	f.rope.grow(positions)
	x := f.x[:T*f.m.Config.Dim] // the residual stream [T, dim]
	if err := f.embed(x, tokens); err != nil {
		return nil, err
	}
	for l := range f.m.Config.NLayers {
		if err := f.attentionBlock(l, x, positions, b, caches[l]); err != nil {
			return nil, err
		}
		if err := f.ffnBlock(l, x, T); err != nil {
			return nil, err
		}
	}
	return f.logits(x, logitRows)
}

// checkStep rejects a step Run cannot compute: one clear error, before
// any buffer is touched.
func (f *Forward) checkStep(tokens, positions []int, caches []LayerCache, logitRows []int) error {
	c := f.m.Config
	T := len(tokens)
	if T == 0 || len(positions) != T {
		return fmt.Errorf("forward: %d tokens with %d positions", T, len(positions))
	}
	if len(caches) != c.NLayers {
		return fmt.Errorf("forward: %d layer caches for %d layers", len(caches), c.NLayers)
	}
	for t, tok := range tokens {
		if tok < 0 || tok >= c.VocabSize {
			return fmt.Errorf("forward: token %d at row %d is outside the vocabulary (size %d)", tok, t, c.VocabSize)
		}
		if p := positions[t]; p < 0 || p >= c.SeqLen {
			return fmt.Errorf("forward: position %d at row %d is outside [0, seq_len=%d)", p, t, c.SeqLen)
		}
	}
	for _, r := range logitRows {
		if r < 0 || r >= T {
			return fmt.Errorf("forward: logit row %d outside [0, %d)", r, T)
		}
	}
	return nil
}

// embed sets x = token_embedding[token], one row per token.
// token_embedding: (vocab, dim)
func (f *Forward) embed(x []float32, tokens []int) error {
	dim := f.m.Config.Dim
	for t, tok := range tokens {
		if err := f.mats.embedding(x[t*dim:(t+1)*dim], tok); err != nil {
			return err
		}
	}
	return nil
}

// attentionBlock is layer l's attention sub-block on the residual stream
// x [T, dim]:
//
//	xb = rmsnorm(x, attn_norm)
//	q, k, v = xb @ WQKVᵀ (+ bqkv), then RoPE on q and k
//	x += attention(q, k, v) @ WOᵀ
func (f *Forward) attentionBlock(l int, x []float32, positions []int, b *attention.Batch, cache LayerCache) error {
	c := f.m.Config
	T, dim := len(positions), c.Dim
	lm := &f.mats.layers[l]

	// xb = rmsnorm(x, attn_norm)   attn_norm: (dim)
	rmsnormRows(f.xb[:T*dim], x, f.mats.attnNorm[l], T, dim, float32(c.NormEps))

	// Q, K, V as [T, H, D] and [T, KVH, D] tensors.
	q, k, v, err := f.views(T)
	if err != nil {
		return err
	}
	if err := f.qkvProjection(T, lm); err != nil {
		return err
	}

	// q += bq, k += bk, v += bv   (Qwen2; BQKV: ((H+2·KVH)·D))
	if f.mats.bqkv != nil && f.mats.bqkv[l] != nil {
		f.addQKVBias(T, f.mats.bqkv[l])
	}

	// RoPE: rotate each pair of every q and k head by pos·freq_j, in
	// place through the views' strides.
	f.rope.apply(q, positions)
	f.rope.apply(k, positions)

	att, err := f.attend(l, T, q, k, v, cache, b)
	if err != nil {
		return err
	}

	// x += att @ WOᵀ   WO: (dim, H·D)
	return f.residualMatmul(x, att, lm.wo, T)
}

// qkvProjection computes the step's q, k and v from xb into the buffers
// the views of f.views read.
func (f *Forward) qkvProjection(T int, lm *layerMatrices) error {
	c := f.m.Config
	dim, qDim, kvDim := c.Dim, c.NHeads*c.HeadDim(), c.KVDim()
	xb := f.xb[:T*dim]
	switch f.proj {
	case FusedQKV:
		if lm.wqkv == nil {
			// q, k, v stored in different types: three matmuls, their
			// rows then laid side by side as the fused output.
			return f.unfusedQKV(T, lm)
		}
		// qkv = xb @ WQKVᵀ   WQKV: ((H+2·KVH)·D, dim) → qkv: [T, (H+2·KVH)·D]
		return f.mats.matmul(f.qkv[:T*c.QKVRows()], xb, lm.wqkv, T)
	case SeparateQKV:
		// q = xb @ wqᵀ, k = xb @ wkᵀ, v = xb @ wvᵀ: three contiguous outputs.
		// wq: (H·D, dim), wk and wv: (KVH·D, dim)
		if err := f.mats.matmul(f.q[:T*qDim], xb, lm.wq, T); err != nil {
			return err
		}
		if err := f.mats.matmul(f.k[:T*kvDim], xb, lm.wk, T); err != nil {
			return err
		}
		return f.mats.matmul(f.v[:T*kvDim], xb, lm.wv, T)
	}
	return nil
}

// attend runs layer l's attention over the paged cache and returns its
// output [T, H·D] as a flat slice: out = softmax(q·kᵀ/√D)·v, causal, with
// the step's k and v written into the cache first (attention.Path).
// Layer 0 records its stages into the trace, when one is set.
func (f *Forward) attend(l, T int, q, k, v *tensor.Tensor, cache LayerCache, b *attention.Batch) ([]float32, error) {
	var tr *tensor.Trace
	if l == 0 {
		tr = f.trace
	}
	out, err := f.path.Attend(q, k, v, cache.K, cache.V, b, tr)
	if err != nil {
		return nil, fmt.Errorf("layer %d attention: %w", l, err)
	}
	return contiguousF32(out, T*f.m.Config.NHeads*f.m.Config.HeadDim())
}

// ffnBlock is layer l's SwiGLU feed-forward sub-block on the residual
// stream x [T, dim]:
//
//	xb = rmsnorm(x, ffn_norm)
//	hb = silu(xb @ W1ᵀ) ⊙ (xb @ W3ᵀ)
//	x += hb @ W2ᵀ
func (f *Forward) ffnBlock(l int, x []float32, T int) error {
	c := f.m.Config
	dim, hid := c.Dim, c.HiddenDim
	lm := &f.mats.layers[l]

	// xb = rmsnorm(x, ffn_norm)   ffn_norm: (dim)
	rmsnormRows(f.xb[:T*dim], x, f.mats.ffnNorm[l], T, dim, float32(c.NormEps))

	// hb = silu(xb @ W1ᵀ) ⊙ (xb @ W3ᵀ)   W1 (gate), W3 (up): (hidden, dim)
	if err := f.mats.matmul(f.hb[:T*hid], f.xb[:T*dim], lm.w1, T); err != nil {
		return err
	}
	if err := f.mats.matmul(f.hb2[:T*hid], f.xb[:T*dim], lm.w3, T); err != nil {
		return err
	}
	swiglu(f.hb[:T*hid], f.hb2[:T*hid])

	// x += hb @ W2ᵀ   W2 (down): (dim, hidden)
	return f.residualMatmul(x, f.hb[:T*hid], lm.w2, T)
}

// residualMatmul adds a sub-block's output projection to the residual
// stream: x += in @ Wᵀ, for W of shape (dim, len(in)/T), through xb2.
func (f *Forward) residualMatmul(x, in []float32, w *kernels.Matrix, T int) error {
	out := f.xb2[:T*f.m.Config.Dim]
	if err := f.mats.matmul(out, in, w, T); err != nil {
		return err
	}
	addInPlace(x, out)
	return nil
}

// logits computes logits = rmsnorm(x[r], final_norm) @ classifierᵀ for
// each row r of logitRows, as a [rows, vocab] slice.
// final_norm: (dim), classifier: (vocab, dim)
func (f *Forward) logits(x []float32, logitRows []int) ([]float32, error) {
	c := f.m.Config
	dim, R := c.Dim, len(logitRows)
	for i, r := range logitRows {
		rmsnormRows(f.xl[i*dim:(i+1)*dim], x[r*dim:(r+1)*dim], f.mats.finalNorm, 1, dim, float32(c.NormEps))
	}
	lg := f.lg[:R*c.VocabSize]
	if err := f.mats.matmul(lg, f.xl[:R*dim], f.mats.classifier, R); err != nil {
		return nil, err
	}
	return lg, nil
}

// views returns the [T, H, D] and [T, KVH, D] tensors the projections of
// a T-token step are written to: views of the fused QKV buffer, or of the
// three separate buffers.
func (f *Forward) views(T int) (q, k, v *tensor.Tensor, err error) {
	if w := f.viewsByT[T]; w.q != nil {
		return w.q, w.k, w.v, nil
	}
	c := f.m.Config
	qDim, kvDim := c.NHeads*c.HeadDim(), c.KVDim()
	if f.proj == FusedQKV {
		q, k, v, err = splitQKV(f.led, f.qkv[:T*c.QKVRows()], T, c)
	} else {
		q, k, v, err = wrapQKV(f.led, f.q[:T*qDim], f.k[:T*kvDim], f.v[:T*kvDim], T, c)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	f.viewsByT[T] = qkvViews{q, k, v}
	return q, k, v, nil
}

// splitQKV cuts the heads out of the fused projection's output by views:
//
//	qkv: [T, (H+2·KVH)·D]            strides ((H+2·KVH)·D, 1)
//	q = qkv.narrow(1, 0, H·D).view(T, H, D)          strides ((H+2·KVH)·D, D, 1)
//	k = qkv.narrow(1, H·D, KVH·D).view(T, KVH, D)    offset H·D
//	v = qkv.narrow(1, (H+KVH)·D, KVH·D).view(T, KVH, D)
//
// None of these copies a byte: the token stride stays (H+2·KVH)·D, and
// the kernels read through it.
func splitQKV(led *tensor.Ledger, buf []float32, T int, c Config) (q, k, v *tensor.Tensor, err error) {
	hs := c.HeadDim()
	qkv, err := tensor.WrapFloat32(led, buf, T, c.QKVRows())
	if err != nil {
		return nil, nil, nil, err
	}
	cut := func(start, heads int) (*tensor.Tensor, error) {
		n, err := qkv.Narrow(1, start*hs, heads*hs)
		if err != nil {
			return nil, err
		}
		return n.View(T, heads, hs)
	}
	if q, err = cut(0, c.NHeads); err != nil {
		return nil, nil, nil, err
	}
	if k, err = cut(c.NHeads, c.NKVHeads); err != nil {
		return nil, nil, nil, err
	}
	if v, err = cut(c.NHeads+c.NKVHeads, c.NKVHeads); err != nil {
		return nil, nil, nil, err
	}
	return q, k, v, nil
}

// wrapQKV views three separate contiguous projections as [T, heads, D].
func wrapQKV(led *tensor.Ledger, qb, kb, vb []float32, T int, c Config) (q, k, v *tensor.Tensor, err error) {
	hs := c.HeadDim()
	if q, err = tensor.WrapFloat32(led, qb, T, c.NHeads, hs); err != nil {
		return
	}
	if k, err = tensor.WrapFloat32(led, kb, T, c.NKVHeads, hs); err != nil {
		return
	}
	v, err = tensor.WrapFloat32(led, vb, T, c.NKVHeads, hs)
	return
}

// contiguousF32 returns the [T, H·D] attention output as a flat slice. Both
// paths return a contiguous F32 tensor, so this is a re-slice, not a copy.
func contiguousF32(t *tensor.Tensor, n int) ([]float32, error) {
	if t.DType() != tensor.F32 || !t.IsContiguous() || t.Numel() != n || t.IsMeta() {
		return nil, fmt.Errorf("forward: attention returned %v, want a contiguous F32 tensor of %d elements", t, n)
	}
	return t.Storage().Float32s()[t.Offset() : t.Offset()+n], nil
}

// unfusedQKV computes q, k and v of a layer whose projections are kept
// apart into the separate buffers, then copies each token's [q | k | v]
// into the fused buffer, where the views of the fused path read them.
func (f *Forward) unfusedQKV(T int, lm *layerMatrices) error {
	c := f.m.Config
	dim, qDim, kvDim, rows := c.Dim, c.NHeads*c.HeadDim(), c.KVDim(), c.QKVRows()
	for _, p := range []struct {
		out []float32
		m   *kernels.Matrix
	}{{f.q[:T*qDim], lm.wq}, {f.k[:T*kvDim], lm.wk}, {f.v[:T*kvDim], lm.wv}} {
		if err := f.mats.matmul(p.out, f.xb[:T*dim], p.m, T); err != nil {
			return err
		}
	}
	for t := 0; t < T; t++ {
		row := f.qkv[t*rows : (t+1)*rows]
		copy(row, f.q[t*qDim:(t+1)*qDim])
		copy(row[qDim:], f.k[t*kvDim:(t+1)*kvDim])
		copy(row[qDim+kvDim:], f.v[t*kvDim:(t+1)*kvDim])
	}
	return nil
}

// addQKVBias adds the q|k|v bias b to each token's projections, in the
// fused buffer ([T, (H+2·KVH)·D], the bias's own layout) or in the three
// separate ones.
func (f *Forward) addQKVBias(T int, b []float32) {
	c := f.m.Config
	if f.proj == FusedQKV {
		rows := c.QKVRows()
		for t := 0; t < T; t++ {
			addInPlace(f.qkv[t*rows:(t+1)*rows], b)
		}
		return
	}
	qDim, kvDim := c.NHeads*c.HeadDim(), c.KVDim()
	for t := 0; t < T; t++ {
		addInPlace(f.q[t*qDim:(t+1)*qDim], b[:qDim])
		addInPlace(f.k[t*kvDim:(t+1)*kvDim], b[qDim:qDim+kvDim])
		addInPlace(f.v[t*kvDim:(t+1)*kvDim], b[qDim+kvDim:])
	}
}

// rmsnormRows is run.c's rmsnorm on each of T rows:
// o = w ⊙ x / sqrt(mean(x²) + eps), accumulated in float32 in order.
func rmsnormRows(o, x, w []float32, T, dim int, eps float32) {
	for t := 0; t < T; t++ {
		xr, or := x[t*dim:(t+1)*dim], o[t*dim:(t+1)*dim]
		var ss float32
		for _, v := range xr {
			ss += v * v
		}
		ss /= float32(dim)
		ss += eps
		ss = 1 / float32(math.Sqrt(float64(ss)))
		for j, v := range xr {
			or[j] = w[j] * (ss * v)
		}
	}
}

// swiglu computes hb = silu(hb) ⊙ hb2, silu(z) = z·σ(z), as run.c does:
// s = z·(1/(1 + expf(−z))) with expf(−z) rounded to float32 first. See
// kernels.SwiGLU for the exponential and its AVX-512 kernel (the same bits
// as the portable loop). hb2 is hb's length here, so it cannot fail.
func swiglu(hb, hb2 []float32) {
	_ = kernels.SwiGLU(hb, hb2)
}

func addInPlace(x, y []float32) {
	y = y[:len(x)]
	for i := range x {
		x[i] += y[i]
	}
}
