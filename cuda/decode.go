package cuda

import "fmt"

// Names of the paged decode kernels in cuda/kernels/decode.cu.
const (
	KernelPagedDecode = "paged_attention_decode"
	KernelDecodeMerge = "paged_attention_merge"
)

const (
	decodeThreads = 128
	decodeWarps   = decodeThreads / WarpSize
	// DecodeMaxPartition is the most context positions one decode block
	// handles: their logits live in shared memory (4 bytes each, 32 KiB).
	// Longer contexts need the split-KV variant.
	DecodeMaxPartition = 8192
)

// decodePlan simulates paged_attention_decode, one query token per sequence
// (QueryLen = 1), GQA-native. Grid (H, B, splits), 128 threads:
//
//	block (head, seq, split); kv_head = head / (H/KVH)
//	ctx = context_lens[seq]                      all 4 warps: broadcast load
//	[start, end) = split·P … min(split·P+P, ctx)  P = partition (ctx if none)
//	if start >= ctx: return
//	row = query_start[seq]                        all 4 warps: broadcast load
//	q_s[d] = q[row, head, d]       d = tid, tid+128, …   (lane per element)
//	for p = start+warp; p < end; p += 4:          one warp per position
//	    blk = block_tables[seq, p/bs]               broadcast load
//	    logit[p] = Σ_d q_s[d]·k_cache[blk, p%bs, kv_head, d]   d = lane, lane+32, …
//	softmax over logit[start:end] in shared memory
//	for d = tid; d < D; d += 128:                 thread per output element
//	    for p in [start, end): blk = block_tables[seq, p/bs] (broadcast);
//	        acc += w[p]·v_cache[blk, p%bs, kv_head, d]
//	    out[row, head·D + d] = acc/Σ        (no split), or
//	    tmp_out[seq, head, split, d] = acc/Σ (fp32) and, thread 0,
//	    max_logits/exp_sums[seq, head, split] = m, Σ (split)
//
// Every K or V row is read "lane per element", so a warp reads 32
// consecutive elements of one row: 128 B of fp32, 64 B of fp16.
type decodePlan struct {
	a                          *AttentionOperands
	d                          attnDims
	partition                  int64 // positions per block; ctx when not split
	splits                     int64
	tmpOut, maxLogits, expSums uint64
}

// DecodeScratch holds the device addresses of the split-KV partial
// results: tmp_out [B, H, splits, D] and max_logits, exp_sums
// [B, H, splits], all fp32.
type DecodeScratch struct {
	TmpOut, MaxLogits, ExpSums uint64
}

// DecodeSplits returns how many partitions of partition positions the
// longest context needs (1 when partition is 0: no split).
func DecodeSplits(s *Seqs, partition int) int {
	if partition <= 0 {
		return 1
	}
	m := 0
	for _, c := range s.ContextLen {
		m = max(m, c)
	}
	return max(1, (m+partition-1)/partition)
}

func planDecode(a *AttentionOperands, partition int, scratch DecodeScratch) (*decodePlan, error) {
	d, err := a.dims(KernelPagedDecode)
	if err != nil {
		return nil, err
	}
	maxCtx := int64(0)
	for i, ql := range a.Seqs.QueryLen {
		if ql != 1 {
			return nil, fmt.Errorf("%s: sequence %d has %d new tokens; decode takes exactly 1 per sequence", KernelPagedDecode, i, ql)
		}
		maxCtx = max(maxCtx, int64(a.Seqs.ContextLen[i]))
	}
	p := &decodePlan{a: a, d: d, splits: 1}
	switch {
	case partition < 0 || partition > DecodeMaxPartition:
		return nil, fmt.Errorf("%s: partition size %d outside [0, %d]", KernelPagedDecode, partition, DecodeMaxPartition)
	case partition == 0:
		if maxCtx > DecodeMaxPartition {
			return nil, fmt.Errorf("%s: context of %d positions exceeds %d without split-KV; pass a partition size", KernelPagedDecode, maxCtx, DecodeMaxPartition)
		}
	default:
		p.partition = int64(partition)
		p.splits = int64(DecodeSplits(a.Seqs, partition))
		p.tmpOut, p.maxLogits, p.expSums = scratch.TmpOut, scratch.MaxLogits, scratch.ExpSums
	}
	return p, nil
}

func (p *decodePlan) launch() Launch {
	return Launch{Kernel: KernelPagedDecode, Grid: [3]int64{p.d.H, int64(p.a.Seqs.NumSeqs()), p.splits}, Block: [3]int{decodeThreads, 1, 1}}
}

// span returns the positions block (seq, split) handles, ok=false when it
// returns right after reading the context length.
func (p *decodePlan) span(seq int, split int64) (start, end int64, ok bool) {
	ctx := int64(p.a.Seqs.ContextLen[seq])
	part := ctx
	if p.partition > 0 {
		part = p.partition
	}
	start = split * part
	if start >= ctx {
		return 0, 0, false
	}
	return start, min(start+part, ctx), true
}

// storeRow returns where block (seq, head, split) writes its D results and
// their element size.
func (p *decodePlan) storeRow(seq int, head, split int64) (uint64, int64) {
	if p.partition == 0 {
		return p.a.outRow(&p.d, int64(p.a.Seqs.QueryStart[seq]), head), p.d.es
	}
	return p.tmpOut + uint64(4*(((int64(seq)*p.d.H+head)*p.splits+split)*p.d.D)), 4
}

// simulate counts the launch's traffic: literally in Replay mode, by
// residue classes in Aggregate mode.
func (p *decodePlan) simulate(mode Mode) (Launch, error) {
	if mode == Replay {
		return p.replay()
	}
	return p.aggregate()
}

// replay executes the kernel's mapping block by block: one block per
// (sequence, head, split).
func (p *decodePlan) replay() (Launch, error) {
	l := p.launch()
	a, d := p.a, &p.d
	B := a.Seqs.NumSeqs()
	nch := int64(len(chunks(d.D, d.es)))
	if int64(B)*d.H*p.splits*(8+2*nch+int64(DecodeMaxPartition)*(2+2*nch)) > 16*maxReplayWarps {
		return l, fmt.Errorf("%s: too large to replay; use Aggregate", KernelPagedDecode)
	}
	c := NewCounter(true)
	for seq := 0; seq < B; seq++ {
		for head := int64(0); head < d.H; head++ {
			for split := int64(0); split < p.splits; split++ {
				p.replayBlock(c, seq, head, split)
			}
		}
	}
	l.finishReplay(c, a.metaRanges()...)
	return l, nil
}

// replayBlock replays the block of (seq, head, split): its metadata
// reads, the query row, the logit loop (warp per position, lane per
// element) and the output loop (thread per element, loop over positions).
func (p *decodePlan) replayBlock(c *Counter, seq int, head, split int64) {
	a, d := p.a, &p.d
	m := a.Meta
	g := head / d.group
	single := Strided(0, 1, 0, 4)
	c.at(false, broadcast(0), m.ContextLens+uint64(4*seq), decodeWarps)
	start, end, ok := p.span(seq, split)
	if !ok {
		return
	}
	c.at(false, broadcast(0), m.QueryStart+uint64(4*seq), decodeWarps)
	row := int64(a.Seqs.QueryStart[seq])
	// q: thread tid loads d = tid + 128·it
	for it := int64(0); it*decodeThreads < d.D; it++ {
		for w := int64(0); w < decodeWarps; w++ {
			x := Warp{Width: int(d.es)}
			for lane := int64(0); lane < WarpSize; lane++ {
				if dd := it*decodeThreads + w*WarpSize + lane; dd < d.D {
					x.Addr[lane] = a.qRow(d, row, head) + uint64(dd*d.es)
					x.Active |= 1 << lane
				}
			}
			c.Load(&x, 1)
		}
	}
	// logits: warp per position, lane per element
	for pos := start; pos < end; pos++ {
		c.at(false, broadcast(0), m.BlockTables+uint64(4*(int64(seq)*d.maxBlocks+pos/d.bs)), 1)
		for dd := int64(0); dd < d.D; dd += WarpSize {
			x := Strided(a.kvRow(a.KCache, d, seq, pos, g)+uint64(dd*d.es), int(min(WarpSize, d.D-dd)), d.es, int(d.es))
			c.Load(&x, 1)
		}
	}
	// output: thread per element, loop over positions
	for it := int64(0); it*decodeThreads < d.D; it++ {
		for w := int64(0); w < decodeWarps; w++ {
			d0 := it*decodeThreads + w*WarpSize
			if d0 >= d.D {
				continue
			}
			n := int(min(WarpSize, d.D-d0))
			for pos := start; pos < end; pos++ {
				c.at(false, broadcast(0), m.BlockTables+uint64(4*(int64(seq)*d.maxBlocks+pos/d.bs)), 1)
				x := Strided(a.kvRow(a.VCache, d, seq, pos, g)+uint64(d0*d.es), n, d.es, int(d.es))
				c.Load(&x, 1)
			}
			dst, es := p.storeRow(seq, head, split)
			x := Strided(dst+uint64(d0*es), n, es, int(es))
			c.Store(&x, 1)
		}
	}
	if p.partition > 0 {
		i := uint64(4 * ((int64(seq)*d.H+head)*p.splits + split))
		c.at(true, single, p.maxLogits+i, 1)
		c.at(true, single, p.expSums+i, 1)
	}
}

// aggregate counts the launch by residue classes (see aggregate.go).
func (p *decodePlan) aggregate() (Launch, error) {
	l := p.launch()
	a, d := p.a, &p.d
	m := a.Meta
	B := a.Seqs.NumSeqs()
	dch := chunks(d.D, d.es) // a row of D elements, lane per element
	nch := int64(len(dch))
	single := Strided(0, 1, 0, 4)
	c := NewCounter(false)
	var ld, st, meta footprint
	for seq := 0; seq < B; seq++ {
		ctx := int64(a.Seqs.ContextLen[seq])
		row := int64(a.Seqs.QueryStart[seq])
		meta.ints(m.ContextLens, int64(seq), 1)
		meta.ints(m.QueryStart, int64(seq), 1)
		meta.ints(m.BlockTables, int64(seq)*d.maxBlocks, ceilDiv(ctx, d.bs))
		ld.addLayout(a.qRow(d, row, 0), []dim{{d.H, d.qHeadStride * d.es}, {d.D, d.es}}, d.es)
		for pos := int64(0); pos < ctx; pos++ {
			for _, cache := range []Operand{a.KCache, a.VCache} {
				r := a.kvRow(cache, d, seq, pos, 0)
				ld.add(r, r+uint64(d.KVH*d.D*d.es))
			}
		}
		for split := int64(0); split < p.splits; split++ {
			c.at(false, broadcast(0), m.ContextLens+uint64(4*seq), decodeWarps*d.H)
			start, end, ok := p.span(seq, split)
			if !ok {
				continue
			}
			n := end - start
			c.at(false, broadcast(0), m.QueryStart+uint64(4*seq), decodeWarps*d.H)
			// one block-table broadcast per position in the logit loop and
			// per position and active warp in the output loop
			c.at(false, broadcast(0), m.BlockTables, n*(1+nch)*d.H)
			for g := int64(0); g < d.KVH; g++ {
				var hk, hv residues
				for pos := start; pos < end; pos++ {
					hk[a.kvRow(a.KCache, d, seq, pos, g)%LineBytes]++
					hv[a.kvRow(a.VCache, d, seq, pos, g)%LineBytes]++
				}
				c.replayPattern(false, dch, hk, d.group)
				c.replayPattern(false, dch, hv, d.group)
			}
			for head := int64(0); head < d.H; head++ {
				for _, w := range dch {
					c.at(false, w, a.qRow(d, row, head), 1)
				}
				dst, es := p.storeRow(seq, head, split)
				for _, w := range chunks(d.D, es) {
					c.at(true, w, dst, 1)
				}
				st.add(dst, dst+uint64(d.D*es))
				if p.partition > 0 {
					i := uint64(4 * ((int64(seq)*d.H+head)*p.splits + split))
					c.at(true, single, p.maxLogits+i, 1)
					c.at(true, single, p.expSums+i, 1)
					st.add(p.maxLogits+i, p.maxLogits+i+4)
					st.add(p.expSums+i, p.expSums+i+4)
				}
			}
		}
	}
	return l, l.finishAggregate(c, &ld, &st, &meta)
}

// SimulatePagedDecode simulates paged_attention_decode for one decode step
// (every sequence has QueryLen 1). partition = 0 runs one block per
// (head, sequence) over the whole context and writes out directly;
// partition > 0 is the split-KV variant: blocks of partition positions
// write fp32 partial results to scratch, which paged_attention_merge
// (SimulateDecodeMerge) combines.
func SimulatePagedDecode(a *AttentionOperands, partition int, scratch DecodeScratch, mode Mode) (Launch, error) {
	p, err := planDecode(a, partition, scratch)
	if err != nil {
		return Launch{}, err
	}
	return p.simulate(mode)
}

// SimulateDecodeMerge simulates paged_attention_merge, which combines the split
// partial results by log-sum-exp. Grid (H, B), 128 threads:
//
//	ctx = context_lens[seq]; row = query_start[seq]   all warps: broadcasts
//	n = ceil(ctx / P)
//	thread 0: M = max_s max_logits[s]              n single-lane loads
//	          w_s = exp_sums[s]·exp(max_logits[s] − M)   2n single-lane loads
//	for d = tid; d < D; d += 128:
//	    out[row, head·D + d] = Σ_s w_s·tmp_out[s, d] / Σ_s w_s
func SimulateDecodeMerge(a *AttentionOperands, partition int, scratch DecodeScratch, mode Mode) (Launch, error) {
	p, err := planDecode(a, partition, scratch)
	if err != nil {
		return Launch{}, err
	}
	if p.partition == 0 {
		return Launch{}, fmt.Errorf("%s: no split (partition 0): nothing to merge", KernelDecodeMerge)
	}
	d, m := &p.d, a.Meta
	B := a.Seqs.NumSeqs()
	l := Launch{Kernel: KernelDecodeMerge, Grid: [3]int64{d.H, int64(B), 1}, Block: [3]int{decodeThreads, 1, 1}}
	c := NewCounter(mode == Replay)
	var ld, st, meta footprint
	single := Strided(0, 1, 0, 4)
	for seq := 0; seq < B; seq++ {
		n := ceilDiv(int64(a.Seqs.ContextLen[seq]), p.partition)
		row := int64(a.Seqs.QueryStart[seq])
		meta.ints(m.ContextLens, int64(seq), 1)
		meta.ints(m.QueryStart, int64(seq), 1)
		for head := int64(0); head < d.H; head++ {
			c.at(false, broadcast(0), m.ContextLens+uint64(4*seq), decodeWarps)
			c.at(false, broadcast(0), m.QueryStart+uint64(4*seq), decodeWarps)
			base := (int64(seq)*d.H + head) * p.splits
			for s := int64(0); s < n; s++ {
				c.at(false, single, p.maxLogits+uint64(4*(base+s)), 1)
			}
			for s := int64(0); s < n; s++ {
				c.at(false, single, p.expSums+uint64(4*(base+s)), 1)
				c.at(false, single, p.maxLogits+uint64(4*(base+s)), 1)
			}
			ld.add(p.maxLogits+uint64(4*base), p.maxLogits+uint64(4*(base+n)))
			ld.add(p.expSums+uint64(4*base), p.expSums+uint64(4*(base+n)))
			for it := int64(0); it*decodeThreads < d.D; it++ {
				for w := int64(0); w < decodeWarps; w++ {
					d0 := it*decodeThreads + w*WarpSize
					if d0 >= d.D {
						continue
					}
					cnt := int(min(WarpSize, d.D-d0))
					for s := int64(0); s < n; s++ {
						x := Strided(p.tmpOut+uint64(4*((base+s)*d.D+d0)), cnt, 4, 4)
						c.Load(&x, 1)
					}
					x := Strided(a.outRow(d, row, head)+uint64(d0*d.es), cnt, d.es, int(d.es))
					c.Store(&x, 1)
				}
			}
			ld.add(p.tmpOut+uint64(4*base*d.D), p.tmpOut+uint64(4*(base+n)*d.D))
			o := a.outRow(d, row, head)
			st.add(o, o+uint64(d.D*d.es))
		}
	}
	if mode == Replay {
		l.finishReplay(c, a.metaRanges()...)
		return l, nil
	}
	return l, l.finishAggregate(c, &ld, &st, &meta)
}

// The decode launcher: PagedDecode, planned by planDecode above.

// PagedDecode runs one decode step (QueryLen 1 for every sequence) of
// paged attention from the caches into out [T, H·D]. partition > 0 runs the
// split-KV variant with partition positions per block and merges the
// partial results with paged_attention_merge.
func (d *Device) PagedDecode(q, kCache, vCache, out *DeviceTensor, s *DeviceSeqs, partition int) error {
	if err := d.ok(); err != nil {
		return err
	}
	a, err := attention(q, kCache, vCache, out, s)
	if err != nil {
		return err
	}
	scratch, sc, err := d.decodeScratch(q, s, partition)
	defer func() {
		for _, b := range scratch {
			b.Free()
		}
	}()
	if err != nil {
		return err
	}
	p, err := planDecode(a, partition, sc)
	if err != nil {
		return err
	}
	args, err := newAttnArgs(a, &p.d)
	if err != nil {
		return err
	}
	maxCtx := 0
	for _, c := range s.Seqs.ContextLen {
		maxCtx = max(maxCtx, c)
	}
	args.partition, args.numSplits = int32(p.partition), int32(p.splits)
	args.smemPositions = int32(maxCtx)
	if p.partition > 0 {
		args.smemPositions = int32(p.partition)
	}
	if d.record {
		if err := d.note(p.simulate(Aggregate)); err != nil {
			return err
		}
	}
	smem := int64(p.d.D+int64(args.smemPositions)+32) * 4
	ptrs := [4]uintptr{q.buf.ptr, kCache.buf.ptr, vCache.buf.ptr, out.buf.ptr}
	var sp [3]uintptr
	if partition > 0 {
		sp = [3]uintptr{scratch[0].ptr, scratch[1].ptr, scratch[2].ptr}
	}
	dl, err := dimsOf(p.launch(), smem)
	if err != nil {
		return err
	}
	if err := d.timed(func() error { return launchPagedDecode(p.d.dt, ptrs, s, sp, args, dl) }); err != nil {
		return err
	}
	if partition == 0 {
		return nil
	}
	if err := d.decodeMerge(a, p, partition, sc, out, s, sp, args); err != nil {
		return err
	}
	// the scratch is freed by the deferred Free: wait for the kernels
	return d.rt.sync()
}

// decodeScratch allocates the split-KV decode's partial outputs, maxima
// and sums [B, H, splits, (D)] when partition > 0 (nothing otherwise).
// The caller frees the buffers, also those allocated before an error.
func (d *Device) decodeScratch(q *DeviceTensor, s *DeviceSeqs, partition int) ([3]*Buffer, DecodeScratch, error) {
	var scratch [3]*Buffer
	if partition <= 0 {
		return scratch, DecodeScratch{}, nil
	}
	n := int64(DecodeSplits(s.Seqs, partition))
	B, H := int64(s.Seqs.NumSeqs()), int64(q.layout.Shape()[1])
	D := int64(q.layout.Shape()[2])
	for i, size := range []int64{B * H * n * D * 4, B * H * n * 4, B * H * n * 4} {
		var err error
		if scratch[i], err = d.Alloc(size); err != nil {
			return scratch, DecodeScratch{}, err
		}
	}
	return scratch, DecodeScratch{TmpOut: uint64(scratch[0].ptr), MaxLogits: uint64(scratch[1].ptr), ExpSums: uint64(scratch[2].ptr)}, nil
}

// decodeMerge launches paged_attention_merge over the split-KV partial
// results sp of decode plan p into out.
func (d *Device) decodeMerge(a *AttentionOperands, p *decodePlan, partition int, sc DecodeScratch, out *DeviceTensor, s *DeviceSeqs, sp [3]uintptr, args *attnArgs) error {
	if d.record {
		if err := d.note(SimulateDecodeMerge(a, partition, sc, Aggregate)); err != nil {
			return err
		}
	}
	ml, err := dimsOf(Launch{Kernel: KernelDecodeMerge, Grid: [3]int64{p.d.H, int64(s.Seqs.NumSeqs()), 1}, Block: [3]int{decodeThreads, 1, 1}}, (p.splits+1)*4)
	if err != nil {
		return err
	}
	return d.timed(func() error { return launchDecodeMerge(p.d.dt, out.buf.ptr, s, sp, args, ml) })
}
