package attention

import (
	"fmt"
	"math"

	"github.com/stride-lm/stride/tensor"
)

// Naive is the textbook attention path, written the way PyTorch code
// writes it (the seed notes' MHA walk-through), out of tensor ops whose
// every allocation and copy is counted:
//
//	q      = Q.view(B, S, H, D).transpose(1, 2)           [B, H, S, D]  view
//	k      = K.view(B, S, KVH, D).transpose(1, 2)          fresh prefill, F32 cache: view
//	       | gather(k_cache, block_tables)                 context or 16-bit cache: COPY
//	k      = k.repeat_interleave(H/KVH, dim=1)             GQA only: COPY ×g
//	scores = q @ k.transpose(-2, -1)                        [B, H, S, C]  NEW
//	attn   = softmax(scores/√D + causal_mask, dim=-1)       in place
//	out    = attn @ v                                       [B, H, S, D]  NEW
//	out    = out.transpose(1, 2).contiguous()               [B, S, H, D]  COPY
//	out    = out.view(B, S, H·D)                            view
//
// Attend first writes k and v into the paged cache (as the fused path
// does). Consecutive sequences with the same query length and context
// length form one group of B sequences; each group runs the lines above.
// When one group covers every token row, its [B, S, H·D] output is
// returned as a [T, H·D] view; otherwise the groups' outputs are copied
// into a new [T, H·D] tensor (padding rows are zero), and that copy is
// counted too.
//
// Every intermediate is a fresh tensor in q's Ledger, released (for
// peak-memory accounting) once the next stage has consumed it. Inputs may
// have any strides; only dim 0 (tokens) is ever split by a view.
type Naive struct {
	opts Options
}

// NewNaive returns a naive path. It runs its matmuls through
// tensor.Matmul (gonum's Sgemm, which brings its own parallelism), so
// opts.Threads and opts.Runner do not apply to it.
func NewNaive(opts Options) *Naive { return &Naive{opts: opts} }

// Name implements Path.
func (n *Naive) Name() string { return "naive" }

// PrefillAlignment is 1: each row's scores, softmax and output are
// computed by whole-tensor ops whose per-row results do not depend on how
// many rows the step has (see Fused.PrefillAlignment for why a path may
// need more).
func (n *Naive) PrefillAlignment(numHeads, numKVHeads int) int { return 1 }

// Attend implements Path. The returned tensor is new on every call.
func (n *Naive) Attend(q, k, v, kCache, vCache *tensor.Tensor, b *Batch, tr *tensor.Trace) (*tensor.Tensor, error) {
	d, err := prologue(q, k, v, kCache, vCache, b, tr)
	if err != nil {
		return nil, err
	}
	groups := naiveGroups(b)
	var result *tensor.Tensor
	if len(groups) == 1 && groups[0].B*groups[0].S == d.T {
		g := groups[0]
		out, err := runGroup(q, k, v, kCache, vCache, b, d, g, tr)
		if err != nil {
			return nil, err
		}
		return out.View(d.T, d.H*d.D) // a view: [B, S, H·D] is [T, H·D]
	}
	if d.meta {
		result, err = tensor.Meta(tensor.F32, d.T, d.H*d.D)
	} else {
		result, err = tensor.Zeros(q.Ledger(), tensor.F32, d.T, d.H*d.D)
	}
	if err != nil {
		return nil, err
	}
	var copied int64
	for _, g := range groups {
		out, err := runGroup(q, k, v, kCache, vCache, b, d, g, tr)
		if err != nil {
			return nil, err
		}
		rows, err := out.View(g.B*g.S, d.H*d.D)
		if err != nil {
			return nil, err
		}
		dst, err := result.Narrow(0, g.row, g.B*g.S)
		if err != nil {
			return nil, err
		}
		if !d.meta {
			if err := dst.CopyFrom(rows); err != nil {
				return nil, err
			}
			out.Release()
		}
		copied += int64(rows.Numel()) * 4
	}
	tr.Record(fmt.Sprintf("out = cat(%d group outputs, dim=0)", len(groups)), result, int64(result.Nbytes()), copied)
	return result, nil
}

// naiveGroup is B consecutive sequences of S new tokens each, all with
// context length C, whose rows start at row.
type naiveGroup struct {
	first, B, S, C, row int
}

// naiveGroups splits b into runs of consecutive sequences that can share
// one [B, S, ·] batch: equal QueryLen and ContextLen, rows back to back.
func naiveGroups(b *Batch) []naiveGroup {
	var gs []naiveGroup
	for i := range b.QueryLen {
		if n := len(gs); n > 0 {
			g := &gs[n-1]
			if b.QueryLen[i] == g.S && b.ContextLen[i] == g.C && b.QueryStart[i] == g.row+g.B*g.S {
				g.B++
				continue
			}
		}
		gs = append(gs, naiveGroup{first: i, B: 1, S: b.QueryLen[i], C: b.ContextLen[i], row: b.QueryStart[i]})
	}
	return gs
}

// runGroup runs the textbook attention on one group and returns its
// [B, S, H·D] output: the lines of Naive's doc, top to bottom.
func runGroup(q, k, v, kCache, vCache *tensor.Tensor, b *Batch, d dims, g naiveGroup, tr *tensor.Trace) (*tensor.Tensor, error) {
	qt, err := groupQuery(q, d, g, tr)
	if err != nil {
		return nil, err
	}
	kh, vh, err := groupKV(q.Ledger(), k, v, kCache, vCache, b, d, g, tr)
	if err != nil {
		return nil, err
	}
	scores, err := groupScores(qt, kh, d, g, tr)
	if !sharesInput(kh, k) {
		kh.Release()
	}
	if err != nil {
		return nil, err
	}
	// out = attn @ v: [B, H, S, D]
	out, err := tensor.Matmul(scores, vh)
	if err != nil {
		return nil, err
	}
	tr.Record("out = attn @ v", out, int64(out.Nbytes()), 0)
	scores.Release()
	if !sharesInput(vh, v) {
		vh.Release()
	}
	return groupOutput(out, d, g, tr)
}

// groupQuery is q = Q.view(B, S, H, D).transpose(1, 2): [B, H, S, D], a
// view of the group's rows.
func groupQuery(q *tensor.Tensor, d dims, g naiveGroup, tr *tensor.Trace) (*tensor.Tensor, error) {
	B, S, H, D := g.B, g.S, d.H, d.D
	qg, err := q.Narrow(0, g.row, B*S)
	if err != nil {
		return nil, err
	}
	if qg, err = qg.View(B, S, H, D); err != nil {
		return nil, err
	}
	tr.Record(fmt.Sprintf("q = Q.view(%d, %d, %d, %d)", B, S, H, D), qg, 0, 0)
	qt, err := qg.Transpose(1, 2)
	if err != nil {
		return nil, err
	}
	tr.Record("q = q.transpose(1, 2)", qt, 0, 0)
	return qt, nil
}

// groupKV returns the group's K and V as [B, H, C, D]: what the cache
// holds, in its dtype, with each KV head repeated for its query heads.
// Gathered copies are allocated in led.
//
// For a prefill with no earlier context and an F32 cache that is exactly
// the fresh k, v (the cache write copied them bit for bit), so they are
// viewed; otherwise they are gathered from the cache, so a 16-bit cache's
// rounding applies whether the context is new or cached, and a
// sequence's tokens do not depend on prefix hits or preemption.
func groupKV(led *tensor.Ledger, k, v, kCache, vCache *tensor.Tensor, b *Batch, d dims, g naiveGroup, tr *tensor.Trace) (kh, vh *tensor.Tensor, err error) {
	B, S, KVH, D := g.B, g.S, d.KVH, d.D
	kvs := [2]*tensor.Tensor{}
	fresh := g.C == S && kCache.DType() == tensor.F32
	for i, src := range [2]*tensor.Tensor{k, v} {
		name := [2]string{"k", "v"}[i]
		if fresh {
			x, err := src.Narrow(0, g.row, B*S)
			if err != nil {
				return nil, nil, err
			}
			if x, err = x.View(B, S, KVH, D); err != nil {
				return nil, nil, err
			}
			if x, err = x.Transpose(1, 2); err != nil {
				return nil, nil, err
			}
			tr.Record(fmt.Sprintf("%s = %s.view(%d, %d, %d, %d).transpose(1, 2)", name, [2]string{"K", "V"}[i], B, S, KVH, D), x, 0, 0)
			kvs[i] = x
			continue
		}
		x, err := gather(led, [2]*tensor.Tensor{kCache, vCache}[i], b, d, g)
		if err != nil {
			return nil, nil, err
		}
		tr.Record(fmt.Sprintf("%s = gather(%s_cache, block_tables)", name, name), x, int64(x.Nbytes()), int64(x.Nbytes()))
		kvs[i] = x
	}
	// GQA: every query head needs its KV head next to it for the batched
	// matmul, so each KV head is repeated g times: a copy of g× the KV.
	if grp := d.group(); grp > 1 {
		for i := range kvs {
			r, err := kvs[i].RepeatInterleave(grp, 1)
			if err != nil {
				return nil, nil, err
			}
			name := [2]string{"k", "v"}[i]
			tr.Record(fmt.Sprintf("%s = %s.repeat_interleave(%d, dim=1)", name, name, grp), r, int64(r.Nbytes()), int64(r.Nbytes()))
			if !fresh { // the gathered copy is dead now
				kvs[i].Release()
			}
			kvs[i] = r
		}
	}
	return kvs[0], kvs[1], nil
}

// groupScores is attn = softmax(q @ k.transpose(-2, -1) / √D +
// causal_mask, dim=-1): [B, H, S, C], materialized, the softmax in place.
func groupScores(qt, kh *tensor.Tensor, d dims, g naiveGroup, tr *tensor.Trace) (*tensor.Tensor, error) {
	kT, err := kh.Transpose(-2, -1)
	if err != nil {
		return nil, err
	}
	scores, err := tensor.Matmul(qt, kT)
	if err != nil {
		return nil, err
	}
	tr.Record("scores = q @ k.transpose(-2, -1)", scores, int64(scores.Nbytes()), 0)
	if err := tensor.ScaleInPlace(scores, 1/float32(math.Sqrt(float64(d.D)))); err != nil {
		return nil, err
	}
	if !d.meta {
		causalMask(scores.Storage().Float32s()[scores.Offset():scores.Offset()+scores.Numel()], g.B*d.H, g.S, g.C)
	}
	if err := tensor.SoftmaxLastDimInPlace(scores); err != nil {
		return nil, err
	}
	tr.Record("attn = softmax(scores, dim=-1)", scores, 0, 0)
	return scores, nil
}

// groupOutput is out.transpose(1, 2).contiguous().view(B, S, H·D) of the
// [B, H, S, D] attention output.
func groupOutput(out *tensor.Tensor, d dims, g naiveGroup, tr *tensor.Trace) (*tensor.Tensor, error) {
	ot, err := out.Transpose(1, 2)
	if err != nil {
		return nil, err
	}
	tr.Record("out = out.transpose(1, 2)", ot, 0, 0)
	oc, err := ot.Contiguous()
	if err != nil {
		return nil, err
	}
	if tensor.SharesStorage(oc, ot) {
		// S = 1 (decode): [B, 1, H, D] with strides [H·D, D, D, 1] is
		// already contiguous, as PyTorch agrees, so nothing is copied.
		tr.Record("out = out.contiguous()", oc, 0, 0)
	} else {
		tr.Record("out = out.contiguous()", oc, int64(oc.Nbytes()), int64(oc.Nbytes()))
		out.Release()
	}
	ov, err := oc.View(g.B, g.S, d.H*d.D)
	if err != nil {
		return nil, err
	}
	tr.Record(fmt.Sprintf("out = out.view(%d, %d, %d)", g.B, g.S, d.H*d.D), ov, 0, 0)
	return ov, nil
}

// sharesInput reports whether x is a view of the caller's tensor in (so
// it must not be released).
func sharesInput(x, in *tensor.Tensor) bool { return tensor.SharesStorage(x, in) }

// causalMask sets scores[bh, i, j] to −∞ where key position j comes after
// query i's position C−S+i: the new tokens are the last S of C positions.
func causalMask(s []float32, BH, S, C int) {
	inf := float32(math.Inf(-1))
	for bh := 0; bh < BH; bh++ {
		for i := 0; i < S; i++ {
			row := s[(bh*S+i)*C : (bh*S+i+1)*C]
			for j := C - S + i + 1; j < C; j++ {
				row[j] = inf
			}
		}
	}
}

// gather copies the C cached positions of the group's B sequences out of a
// paged cache into a new contiguous [B, KVH, C, D] F32 tensor, walking
// each block table: the copy a kernel that reads the blocks in place
// avoids. The tensor is allocated in led and the fill recorded there as one
// copy.
func gather(led *tensor.Ledger, cache *tensor.Tensor, b *Batch, d dims, g naiveGroup) (*tensor.Tensor, error) {
	B, C, KVH, D, bs := g.B, g.C, d.KVH, d.D, d.blockSize
	if d.meta {
		return tensor.Meta(tensor.F32, B, KVH, C, D)
	}
	out, err := tensor.Empty(led, tensor.F32, B, KVH, C, D)
	if err != nil {
		return nil, err
	}
	dst := out.Storage().Float32s()
	src := cache.Storage()
	srcF32 := src.Float32s()
	kvBlockStride, kvTokenStride, kvHeadStride := bs*KVH*D, KVH*D, D
	for i := 0; i < B; i++ {
		table := b.BlockTables[g.first+i]
		for h := 0; h < KVH; h++ {
			for p := 0; p < C; p++ {
				so := cache.Offset() + int(table[p/bs])*kvBlockStride + (p%bs)*kvTokenStride + h*kvHeadStride
				do := ((i*KVH+h)*C + p) * D
				if srcF32 != nil {
					copy(dst[do:do+D], srcF32[so:so+D])
					continue
				}
				for x := 0; x < D; x++ {
					dst[do+x] = src.Load(so + x)
				}
			}
		}
	}
	led.RecordCopy(int64(out.Nbytes()))
	return out, nil
}
