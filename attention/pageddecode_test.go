package attention

import (
	"fmt"

	"github.com/stride-lm/stride/tensor"
)

// The tests' explicit-argument decode: what the engine runs through
// Attend (a Fused path's decode step), called the way vLLM's kernel tests
// call paged_attention_v1, so that the decode kernel is tested and
// benchmarked without a Batch's prologue.

// PagedDecode is the decode kernel with explicit arguments, in the manner
// of vLLM's paged_attention_v1: for each sequence i, the single query
// query[i] ([N, H, D], any strides) attends to positions 0 …
// contextLens[i]−1 of the paged caches kCache and vCache
// ([num_blocks, block_size, KVH, D], contiguous), which it reaches through
// blockTables[i], and the result times scale-weighted softmax is written to
// out[i, h·D : (h+1)·D]. out must be a contiguous F32 tensor of N·H·D
// elements whose first dim is N ([N, H·D] or [N, H, D]).
//
// It does not write the cache (the new token's K and V must already be
// there) and allocates only the kernel's per-worker scratch. Attend on a
// Fused path runs this same kernel with QueryLen = 1 for decode steps.
func PagedDecode(out, query, kCache, vCache *tensor.Tensor, blockTables [][]int32, contextLens []int, scale float32, opts Options) error {
	if out == nil || query == nil || kCache == nil || vCache == nil {
		return fmt.Errorf("paged_decode: nil tensor argument")
	}
	d, err := checkDecode(query, kCache, vCache)
	if err != nil {
		return err
	}
	N := d.T
	if len(blockTables) != N || len(contextLens) != N {
		return fmt.Errorf("paged_decode: %d queries with %d block tables and %d context lengths", N, len(blockTables), len(contextLens))
	}
	if out.IsMeta() || out.DType() != tensor.F32 || !out.IsContiguous() || out.Numel() != N*d.H*d.D || (out.Dim() > 0 && out.Shape()[0] != N) {
		return fmt.Errorf("paged_decode: out must be a contiguous float32 [N=%d, H·D=%d] tensor, got %v", N, d.H*d.D, out)
	}
	b := &Batch{QueryStart: make([]int, N), QueryLen: make([]int, N), ContextLen: contextLens, BlockTables: blockTables}
	for i := range N {
		b.QueryStart[i], b.QueryLen[i] = i, 1
		cl := contextLens[i]
		if cl < 1 {
			return fmt.Errorf("paged_decode: sequence %d has context length %d; want ≥ 1", i, cl)
		}
		need := (cl + d.blockSize - 1) / d.blockSize
		if len(blockTables[i]) < need {
			return fmt.Errorf("paged_decode: sequence %d has %d blocks in its table; %d positions need %d", i, len(blockTables[i]), cl, need)
		}
		for j, blk := range blockTables[i][:need] {
			if blk < 0 || int(blk) >= d.numBlocks {
				return fmt.Errorf("paged_decode: sequence %d block table entry %d is block %d; the cache has blocks [0, %d)", i, j, blk, d.numBlocks)
			}
		}
	}
	buf := out.Storage().Float32s()[out.Offset() : out.Offset()+out.Numel()]
	a := new(flashArgs)
	fillFlashArgs(a, query, kCache, vCache, d, scale, buf)
	a.qStart, a.qLen, a.ctxLen, a.blockTables = b.QueryStart, b.QueryLen, b.ContextLen, b.BlockTables
	kernel := flashKernel{opts: opts}
	if err := kernel.run(a); err != nil {
		return fmt.Errorf("paged_decode: %w", err)
	}
	return nil
}

// checkDecode validates PagedDecode's tensors: query [N, H, D] and
// contiguous caches [num_blocks, block_size, KVH, D] with H a multiple of
// KVH, all holding data.
func checkDecode(query, kCache, vCache *tensor.Tensor) (dims, error) {
	var d dims
	if query.Dim() != 3 || kCache.Dim() != 4 {
		return d, fmt.Errorf("paged_decode: query must be [N, H, D] and caches [num_blocks, block_size, KVH, D]; got %v and %v",
			query.Shape(), kCache.Shape())
	}
	if query.IsMeta() || kCache.IsMeta() || vCache.IsMeta() {
		return d, fmt.Errorf("paged_decode: %w", tensor.ErrMeta)
	}
	cs := kCache.Shape()
	kv, err := tensor.Meta(tensor.F32, query.Shape()[0], cs[2], cs[3])
	if err != nil {
		return d, fmt.Errorf("paged_decode: %w", err)
	}
	qm, err := tensor.Meta(tensor.F32, query.Shape()...)
	if err != nil {
		return d, fmt.Errorf("paged_decode: %w", err)
	}
	mk, err := tensor.Meta(tensor.F32, cs...)
	if err != nil {
		return d, fmt.Errorf("paged_decode: %w", err)
	}
	mv, err := tensor.Meta(tensor.F32, vCache.Shape()...)
	if err != nil {
		return d, fmt.Errorf("paged_decode: %w", err)
	}
	// Same shape rules as Attend, checked on layout-only stand-ins.
	if d, err = checkInputs(qm, kv, kv, mk, mv); err != nil {
		return d, fmt.Errorf("paged_decode: %w", err)
	}
	if !kCache.IsContiguous() || !vCache.IsContiguous() {
		return d, fmt.Errorf("paged_decode: caches must be contiguous; got strides %v and %v", kCache.Strides(), vCache.Strides())
	}
	d.meta = false
	return d, nil
}
