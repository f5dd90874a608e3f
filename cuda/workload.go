package cuda

import (
	"fmt"
	"strings"

	"github.com/stride-lm/stride/tensor"
)

// DefaultBandwidth is the HBM bandwidth the time estimates use unless told
// otherwise: the H200's peak, 4.8 TB/s (HBM3e). Real kernels reach perhaps
// 80–90% of it, so every time derived from it is a lower bound.
const DefaultBandwidth = 4.8e12

// Phase is the kind of attention step a Workload simulates.
type Phase string

const (
	// Prefill processes Seq new tokens per sequence with no earlier
	// context (the seed's [B, S, H, D] forward pass).
	Prefill Phase = "prefill"
	// Decode processes one new token per sequence over a context of Seq
	// positions.
	Decode Phase = "decode"
)

// ParsePhase parses "prefill" or "decode".
func ParsePhase(s string) (Phase, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "prefill", "":
		return Prefill, nil
	case "decode":
		return Decode, nil
	}
	return "", fmt.Errorf("unknown phase %q (want prefill or decode)", s)
}

// Workload is one attention layer step, described by sizes only: the simulation
// builds meta tensors for it and allocates nothing.
type Workload struct {
	Batch     int          `json:"batch"`
	Seq       int          `json:"seq"`
	Heads     int          `json:"heads"`
	KVHeads   int          `json:"kv_heads"`
	HeadDim   int          `json:"head_dim"`
	BlockSize int          `json:"block_size"`
	DType     tensor.DType `json:"-"`
	Phase     Phase        `json:"phase"`
	// Partition is the decode split-KV partition size (0: no split).
	Partition int `json:"partition"`
	// Bandwidth is the HBM bandwidth in bytes/s for the time estimates.
	Bandwidth float64 `json:"bandwidth"`
}

// Validate checks the sizes.
func (w Workload) Validate() error {
	switch {
	case w.Batch < 1 || w.Seq < 1:
		return fmt.Errorf("workload: batch %d and seq %d must be ≥ 1", w.Batch, w.Seq)
	case w.Heads < 1 || w.KVHeads < 1 || w.Heads%w.KVHeads != 0:
		return fmt.Errorf("workload: %d heads must be a positive multiple of %d KV heads", w.Heads, w.KVHeads)
	case w.HeadDim < 1 || w.HeadDim > MaxHeadDim:
		return fmt.Errorf("workload: head dim %d outside [1, %d]", w.HeadDim, MaxHeadDim)
	case w.BlockSize < 1:
		return fmt.Errorf("workload: block size %d must be ≥ 1", w.BlockSize)
	case w.Phase != Prefill && w.Phase != Decode:
		return fmt.Errorf("workload: unknown phase %q", w.Phase)
	case w.Bandwidth <= 0:
		return fmt.Errorf("workload: bandwidth %g must be > 0", w.Bandwidth)
	case w.Partition < 0:
		return fmt.Errorf("workload: partition %d must be ≥ 0", w.Partition)
	case w.Phase == Prefill && w.Partition != 0:
		return fmt.Errorf("workload: split-KV partitions apply to decode only")
	}
	// int32 metadata and sane sizes: the slot count must fit an int32.
	if int64(w.Batch)*int64(w.Seq+w.BlockSize) > 1<<31-1 {
		return fmt.Errorf("workload: %d×%d positions overflow the int32 slot mapping", w.Batch, w.Seq)
	}
	return nil
}

// Intermediate is a tensor the naive path writes to HBM and reads back.
type Intermediate struct {
	Name  string `json:"name"`
	Shape []int  `json:"shape"`
	Bytes int64  `json:"bytes"`
	// Passes is how many times it crosses HBM: written once and read once
	// is 2.
	Passes int `json:"passes"`
}

// PathReport is the simulated traffic of one attention path.
type PathReport struct {
	Name     string   `json:"name"`
	Launches []Launch `json:"launches"`
}

// Total sums the traffic of every launch.
func (p PathReport) Total() Launch {
	t := Launch{Kernel: "total"}
	for _, l := range p.Launches {
		t.Loads = t.Loads.Add(l.Loads)
		t.Stores = t.Stores.Add(l.Stores)
		t.MetaBytes += l.MetaBytes
		t.Measured += l.Measured
	}
	return t
}

// Kernels groups the launches by kernel name, in order of first launch,
// summing their traffic; Note holds the number of launches.
func (p PathReport) Kernels() []Launch {
	var out []Launch
	at := map[string]int{}
	for _, l := range p.Launches {
		i, ok := at[l.Kernel]
		if !ok {
			at[l.Kernel] = len(out)
			l.Note = "1"
			out = append(out, l)
			continue
		}
		g := &out[i]
		g.Loads = g.Loads.Add(l.Loads)
		g.Stores = g.Stores.Add(l.Stores)
		g.MetaBytes += l.MetaBytes
		g.Measured += l.Measured
		g.Vectorized = g.Vectorized || l.Vectorized
		var n int
		fmt.Sscan(g.Note, &n)
		g.Note = fmt.Sprint(n + 1)
	}
	return out
}

// Comparison is the naive and the fused path of one workload.
type Comparison struct {
	Workload      Workload       `json:"workload"`
	DType         string         `json:"dtype"`
	Naive         PathReport     `json:"naive"`
	Fused         PathReport     `json:"fused"`
	Intermediates []Intermediate `json:"intermediates"`
}

// IntermediateBytes is Σ bytes·passes over the naive path's intermediates:
// what the naive path moves through HBM on top of the fused path.
func (c *Comparison) IntermediateBytes() int64 {
	var n int64
	for _, x := range c.Intermediates {
		n += x.Bytes * int64(x.Passes)
	}
	return n
}

// Seconds converts bytes to seconds at the workload's bandwidth.
func (w Workload) Seconds(bytes int64) float64 { return float64(bytes) / w.Bandwidth }

// Simulate builds the workload's tensors as meta tensors in a fresh address
// space and simulates both paths, kernel by kernel:
//
//	fused: reshape_and_cache, then flash_attention_prefill (prefill) or
//	       paged_attention_decode (+ paged_attention_merge when split)
//	naive: reshape_and_cache, then per sequence: gather_kv (when there is
//	       earlier context, i.e. decode), repeat_interleave of K and V
//	       (GQA only), naive_scores, naive_softmax, naive_av and
//	       transpose_contiguous into the [T, H·D] output
//
// which is what attention.Naive and attention.Fused do on the CPU.
func (w Workload) Simulate(mode Mode) (*Comparison, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	st, err := w.layout(mode)
	if err != nil {
		return nil, err
	}
	cmp := st.cmp
	cache, err := SimulateReshapeAndCache(st.k, st.v, st.a.KCache, st.a.VCache, st.seqs.SlotMapping, st.a.Meta.SlotMapping, mode)
	if err != nil {
		return nil, err
	}
	cache.Note = "k and v"
	cmp.Fused.Launches = append(cmp.Fused.Launches, cache)
	cmp.Naive.Launches = append(cmp.Naive.Launches, cache)
	if err := st.fused(); err != nil {
		return nil, err
	}
	for i := 0; i < w.Batch; i++ { // naive, one sequence at a time
		if err := st.naiveSeq(i); err != nil {
			return nil, err
		}
	}
	for i := range cmp.Intermediates {
		// the per-sequence shapes were summed into Bytes; show the
		// whole-batch shape with a leading B
		cmp.Intermediates[i].Shape = append([]int{w.Batch}, cmp.Intermediates[i].Shape...)
	}
	return cmp, nil
}

// simStep is one Workload step laid out as meta tensors in a fresh
// address space: what Simulate's two paths read and write, and the
// Comparison they fill in.
type simStep struct {
	w    Workload
	mode Mode
	as   *AddressSpace
	seqs *Seqs
	qlen int
	// q, kT, vT are views of the fused QKV output [T, (H+2·KVH)·D], k
	// and v the last two placed in as; outN is the naive path's
	// [T, H·D] output.
	q, kT, vT, outN *tensor.Tensor
	k, v            Operand
	a               *AttentionOperands // the fused path's operands
	cmp             *Comparison
}

// meta is a meta tensor of the workload's dtype.
func (st *simStep) meta(shape ...int) *tensor.Tensor {
	return tensor.Must(tensor.Meta(st.w.DType, shape...))
}

// layout builds the step's tensors: one token per sequence for decode,
// Seq for prefill, each over Seq positions of context.
func (w Workload) layout(mode Mode) (*simStep, error) {
	qlen, ctx := w.Seq, w.Seq
	if w.Phase == Decode {
		qlen = 1
	}
	seqs, nb, err := UniformSeqs(w.Batch, qlen, ctx, w.BlockSize)
	if err != nil {
		return nil, err
	}
	H, KVH, D, T := w.Heads, w.KVHeads, w.HeadDim, w.Batch*qlen
	st := &simStep{w: w, mode: mode, as: NewAddressSpace(), seqs: seqs, qlen: qlen}
	qkv, err := tensor.Meta(w.DType, T, (H+2*KVH)*D)
	if err != nil {
		return nil, err
	}
	view := func(col, heads int) *tensor.Tensor {
		x := tensor.Must(qkv.Narrow(1, col, heads*D))
		return tensor.Must(x.View(T, heads, D))
	}
	st.q, st.kT, st.vT = view(0, H), view(H*D, KVH), view((H+KVH)*D, KVH)
	kc, err := tensor.Meta(w.DType, nb, w.BlockSize, KVH, D)
	if err != nil {
		return nil, err
	}
	vc := st.meta(nb, w.BlockSize, KVH, D)
	outF := st.meta(T, H*D)
	st.outN = st.meta(T, H*D)
	m := seqs.Place(st.as)
	as := st.as
	st.k, st.v = as.Operand(st.kT), as.Operand(st.vT)
	st.a = &AttentionOperands{Q: as.Operand(st.q), KCache: as.Operand(kc), VCache: as.Operand(vc), Out: as.Operand(outF), Seqs: seqs, Meta: m}
	st.cmp = &Comparison{Workload: w, DType: w.DType.String(), Naive: PathReport{Name: "naive"}, Fused: PathReport{Name: "fused"}}
	return st, nil
}

// fused simulates the fused path after the cache write:
// flash_attention_prefill, or paged_attention_decode (+ its merge when
// split).
func (st *simStep) fused() error {
	w, a, mode := st.w, st.a, st.mode
	push := func(l Launch, err error) error {
		if err == nil {
			st.cmp.Fused.Launches = append(st.cmp.Fused.Launches, l)
		}
		return err
	}
	if w.Phase == Prefill {
		return push(SimulateFusedPrefill(a, mode))
	}
	var sc DecodeScratch
	if w.Partition > 0 {
		n, BH := int64(DecodeSplits(st.seqs, w.Partition)), int64(w.Batch*w.Heads)
		sc = DecodeScratch{
			TmpOut:    st.as.Alloc(BH * n * int64(w.HeadDim) * 4),
			MaxLogits: st.as.Alloc(BH * n * 4),
			ExpSums:   st.as.Alloc(BH * n * 4),
		}
	}
	if err := push(SimulatePagedDecode(a, w.Partition, sc, mode)); err != nil || w.Partition == 0 {
		return err
	}
	return push(SimulateDecodeMerge(a, w.Partition, sc, mode))
}

// naiveSeq simulates the naive path for sequence i: gather_kv (when there
// is earlier context), repeat_interleave of K and V (GQA), naive_scores,
// naive_softmax, naive_av and transpose_contiguous into the output, and
// records the intermediates it materializes.
func (st *simStep) naiveSeq(i int) error {
	w, as, mode, qlen := st.w, st.as, st.mode, st.qlen
	H, KVH, D, G := w.Heads, w.KVHeads, w.HeadDim, w.Heads/w.KVHeads
	note := fmt.Sprintf("seq %d", i)
	qs, C := st.seqs.QueryStart[i], st.seqs.ContextLen[i]
	push := func(l Launch, err error) error {
		if err != nil {
			return err
		}
		l.Note = note
		st.cmp.Naive.Launches = append(st.cmp.Naive.Launches, l)
		return nil
	}
	qi := as.Operand(tensor.Must(st.q.Narrow(0, qs, qlen)))
	var ki, vi Operand
	if C == qlen { // fresh prefill: K and V are views of this step's k, v
		ki = as.Operand(tensor.Must(st.kT.Narrow(0, qs, qlen)))
		vi = as.Operand(tensor.Must(st.vT.Narrow(0, qs, qlen)))
	} else {
		ki, vi = as.Operand(st.meta(C, KVH, D)), as.Operand(st.meta(C, KVH, D))
		rows := st.seqs.contextSlots(i, w.BlockSize)
		if err := push(SimulateGatherKV(ki, vi, st.a.KCache, st.a.VCache, rows, as.Ints(len(rows)), mode)); err != nil {
			return err
		}
		st.intermediate("k, v = gather(cache, block_table)", []int{2, C, KVH, D}, 2)
	}
	if G > 1 {
		kr, vr := as.Operand(st.meta(C, H, D)), as.Operand(st.meta(C, H, D))
		if err := push(SimulateRepeatInterleave(kr, ki, G, mode)); err != nil {
			return err
		}
		if err := push(SimulateRepeatInterleave(vr, vi, G, mode)); err != nil {
			return err
		}
		st.intermediate(fmt.Sprintf("k, v = repeat_interleave(%d, dim=1)", G), []int{2, C, H, D}, 2)
		ki, vi = kr, vr
	}
	scores := as.Operand(st.meta(H, qlen, C))
	if err := push(SimulateNaiveScores(scores, qi, ki, mode)); err != nil {
		return err
	}
	st.intermediate("scores = q @ k^T", []int{H, qlen, C}, 2)
	if err := push(SimulateNaiveSoftmax(scores, mode)); err != nil {
		return err
	}
	st.intermediate("attn = softmax(scores) (in place)", []int{H, qlen, C}, 2)
	ohd := as.Operand(st.meta(H, qlen, D))
	if err := push(SimulateNaiveAV(ohd, scores, vi, mode)); err != nil {
		return err
	}
	st.intermediate("out = attn @ v", []int{H, qlen, D}, 2)
	rows := tensor.Must(tensor.Must(st.outN.Narrow(0, qs, qlen)).View(qlen, H, D))
	return push(SimulateTransposeContiguous(as.Operand(rows), ohd, mode))
}

// intermediate adds one sequence's share of a naive-path intermediate of
// the given shape (bytes of the workload's dtype), written and read back
// passes times in all.
func (st *simStep) intermediate(name string, shape []int, passes int) {
	n := int64(st.w.DType.Size())
	for _, s := range shape {
		n *= int64(s)
	}
	for i := range st.cmp.Intermediates {
		if st.cmp.Intermediates[i].Name == name {
			st.cmp.Intermediates[i].Bytes += n
			return
		}
	}
	st.cmp.Intermediates = append(st.cmp.Intermediates, Intermediate{Name: name, Shape: shape, Bytes: n, Passes: passes})
}
