package attention

import (
	"fmt"
	"math"

	"github.com/stride-lm/stride/tensor"
)

// Fused is the fused attention path: the way vLLM's PagedAttention and
// FlashAttention compute a layer, on the CPU.
//
// Attend writes the new K and V into the paged cache, then runs one kernel
// over (sequence, KV head, query tile) work items (see kernel.go) that
//
//   - reads Q in place through q_stride and q_head_stride, so Q can stay a
//     Narrow+View of the fused QKV output [T, (H+2·KVH)·D] (q_stride =
//     (H+2·KVH)·D, q_head_stride = D): no transpose, no contiguous();
//   - walks each sequence's block table over the paged cache
//     [num_blocks, block_size, KVH, D] (kv_block_stride, kv_token_stride,
//     kv_head_stride): no gather, and prefill reads its own new tokens
//     back from the cache just like decode reads old ones;
//   - serves the g = H/KVH query heads of a KV head from the same K and V
//     rows: no repeat_interleave;
//   - keeps only one tile of scores at a time and folds it into an online
//     softmax: no [S, S] score matrix;
//   - writes each head's output straight into out[t, h·D : (h+1)·D] of a
//     contiguous [T, H·D] buffer: no transpose(1, 2).contiguous().
//
// The same kernel serves prefill (QueryLen > 1, with or without earlier
// context), decode (QueryLen = 1) and mixed varlen batches.
//
// The only bytes Attend copies are the cache writes. The [T, H·D] output
// buffer is allocated once and reused: the returned tensor is valid until
// the next Attend call on the same Fused, which therefore is not safe for
// concurrent use (give each goroutine its own Fused).
//
// A steady decode loop allocates nothing in Attend: the kernel arguments,
// work list, scratch and output buffer are all kept here, and so is the
// [T, H·D] tensor wrapping the output per row count T, built once per T.
type Fused struct {
	opts   Options
	kernel flashKernel
	args   flashArgs
	out    []float32
	outLed *tensor.Ledger // Ledger the output buffer's bytes were recorded in
	// outT[T] is f.out[:T·H·D] as [T, H·D], kept per row count so that
	// steps of alternating sizes (a speculative verify step's T+d rows
	// between decode steps of T) reuse theirs; cleared when f.out grows.
	outT []*tensor.Tensor
}

// NewFused returns a fused path.
func NewFused(opts Options) *Fused {
	return &Fused{opts: opts, kernel: flashKernel{opts: opts}}
}

// Name implements Path.
func (f *Fused) Name() string { return "fused" }

// PrefillAlignment is the number of tokens a prefill's first new token
// must be a multiple of for the kernel to compute every row exactly as it
// computes that row in a prefill from position 0. The kernel cuts each
// sequence's new tokens into query tiles of QueryTile rows (tokens × the
// numHeads/numKVHeads query heads of a KV head), counted from its first
// new token, and picks a tile's inner loops by its row count: matmul
// tiles and the direct loops round differently. A prefill that starts at
// a multiple of the tile's token count has the same tiles as the whole
// prompt from there on, so a scheduler that shares cached prefixes only
// in such multiples (kvcache.Config.PrefixAlignBlocks) gets the same bits
// with and without the prefix hit.
func (f *Fused) PrefillAlignment(numHeads, numKVHeads int) int {
	if numKVHeads <= 0 || numHeads < numKVHeads {
		return 1
	}
	return f.opts.tileTokens(numHeads / numKVHeads)
}

// Attend implements Path. See Fused for what it does and does not copy.
func (f *Fused) Attend(q, k, v, kCache, vCache *tensor.Tensor, b *Batch, tr *tensor.Trace) (*tensor.Tensor, error) {
	d, err := prologue(q, k, v, kCache, vCache, b, tr)
	if err != nil {
		return nil, err
	}

	n := d.T * d.H * d.D
	var out *tensor.Tensor
	var allocated int64
	if d.meta {
		// Layout only: the output a fresh Fused would allocate.
		out, err = tensor.Meta(tensor.F32, d.T, d.H*d.D)
		if err != nil {
			return nil, err
		}
		allocated = int64(n) * 4
	} else {
		if cap(f.out) < n {
			if f.out != nil {
				f.outLed.RecordFree(int64(cap(f.out)) * 4)
			}
			f.out = make([]float32, n)
			f.outLed = q.Ledger()
			clear(f.outT)
			allocated = int64(n) * 4
			f.outLed.RecordAlloc(allocated)
		}
		buf := f.out[:n]
		zeroPadding(buf, b, d.T, d.H*d.D)
		a := &f.args
		fillFlashArgs(a, q, kCache, vCache, d, 1/float32(math.Sqrt(float64(d.D))), buf)
		a.qStart, a.qLen, a.ctxLen, a.blockTables = b.QueryStart, b.QueryLen, b.ContextLen, b.BlockTables
		err := f.kernel.run(a)
		f.args = flashArgs{} // do not keep the caller's tensors alive
		if err != nil {
			return nil, fmt.Errorf("fused attention: %w", err)
		}
		if out, err = f.output(q.Ledger(), buf, d.T, d.H*d.D); err != nil {
			return nil, err
		}
	}
	if tr != nil {
		shown := out
		if B, S, ok := uniform(b, d.T); ok {
			shown, _ = out.View(B, S, d.H*d.D)
		}
		tr.Record("out = fused_attention(q, kv_cache, block_tables)", shown, allocated, 0)
	}
	return out, nil
}

// output returns buf as a [T, width] tensor in led, reusing the tensor an
// earlier call made for T when it already is exactly that (same buffer,
// same Ledger): tensors are immutable as metadata, so handing out the same one
// again is safe, and a decode loop then builds no tensor per layer.
func (f *Fused) output(led *tensor.Ledger, buf []float32, T, width int) (*tensor.Tensor, error) {
	if T < len(f.outT) {
		if o := f.outT[T]; o != nil && o.Ledger() == led && o.Dim() == 2 {
			c, _ := o.Size(1)
			if c == width && o.Offset() == 0 {
				if f32 := o.Storage().Float32s(); len(f32) == len(buf) && len(buf) > 0 && &f32[0] == &buf[0] {
					return o, nil
				}
			}
		}
	}
	out, err := tensor.WrapFloat32(led, buf, T, width)
	if err != nil {
		return nil, err
	}
	if T >= len(f.outT) {
		f.outT = append(f.outT, make([]*tensor.Tensor, T+1-len(f.outT))...)
	}
	f.outT[T] = out
	return out, nil
}

// fillFlashArgs fills the kernel arguments a from the tensors' layouts:
// the strides of q as given, and the cache strides of a contiguous
// [num_blocks, block_size, KVH, D] cache. q is 3-D (checked by the
// caller), so its Stride calls cannot fail.
func fillFlashArgs(a *flashArgs, q, kCache, vCache *tensor.Tensor, d dims, scale float32, out []float32) {
	qs0, _ := q.Stride(0)
	qs1, _ := q.Stride(1)
	qs2, _ := q.Stride(2)
	*a = flashArgs{
		q: q.Storage(), qF32: q.Storage().Float32s(), qOffset: q.Offset(),
		qStride: qs0, qHeadStride: qs1, qElemStride: qs2,
		kCache: kCache.Storage(), vCache: vCache.Storage(),
		kF32: kCache.Storage().Float32s(), vF32: vCache.Storage().Float32s(),
		kOffset: kCache.Offset(), vOffset: vCache.Offset(),
		kvBlockStride: d.blockSize * d.KVH * d.D,
		kvTokenStride: d.KVH * d.D,
		kvHeadStride:  d.D,
		blockSize:     d.blockSize,
		numHeads:      d.H, numKVHeads: d.KVH, headDim: d.D,
		scale: scale, out: out, outStride: d.H * d.D,
	}
}

// zeroPadding clears the output rows no sequence owns (padding tokens),
// since the reused buffer still holds the previous call's values there.
func zeroPadding(buf []float32, b *Batch, T, width int) {
	covered := 0
	for _, ql := range b.QueryLen {
		covered += ql
	}
	if covered == T {
		return
	}
	own := make([]bool, T)
	for i, qs := range b.QueryStart {
		for t := qs; t < qs+b.QueryLen[i]; t++ {
			own[t] = true
		}
	}
	for t, o := range own {
		if !o {
			clear(buf[t*width : (t+1)*width])
		}
	}
}
