package cuda

import "fmt"

// KernelFusedPrefill is the fused (flash) attention kernel in
// cuda/kernels/prefill.cu.
const KernelFusedPrefill = "flash_attention_prefill"

const (
	// PrefillBlockQ is Br, the query rows of one block's tile.
	PrefillBlockQ = 16
	// PrefillBlockKV is Bc, the key/value positions of one tile.
	PrefillBlockKV  = 32
	prefillThreads  = 128
	prefillWarps    = prefillThreads / WarpSize
	prefillRowsWarp = PrefillBlockQ / prefillWarps
)

// prefillPlan simulates flash_attention_prefill: causal, GQA-native, varlen,
// reading K and V from the paged cache. Grid (max_q_tiles, H, B), 128
// threads; everything between HBM and the output stays in shared memory
// and registers:
//
//	block (qt, head, seq); kv_head = head / (H/KVH); i0 = qt·16
//	qlen = query_lens[seq]                     all 4 warps: broadcast load
//	if i0 >= qlen: return
//	qs = query_start[seq]; ctx = context_lens[seq]        broadcasts
//	rows = min(16, qlen − i0); kv_end = ctx − qlen + i0 + rows   (causal)
//	Q tile: for u = tid; u < 16·Du; u += 128:  r = u / Du, du = u % Du
//	    if r < rows: Qs[r][du] = q[qs+i0+r, head, du·qv …]     Du = D/qv
//	for j0 = 0; j0 < kv_end; j0 += 32:
//	    tid < 32 (warp 0): p = j0+tid; if p < kv_end:
//	        row_off[tid] = block_tables[seq, p/bs]·kv_block_stride + …   (load)
//	    for u = tid; u < 32·Dk; u += 128:  c = u / Dk, dk = u % Dk
//	        if j0+c < kv_end: Ks[c] ← k_cache[row_off[c] + dk·kv …]; Vs[c] ← v_cache[…]
//	    warp w, rows 4w … 4w+3: lane c scores key j0+c, online softmax,
//	        O[r][d] for d = lane, lane+32, … kept in registers
//	for each row r < rows of warp w, d = lane + 32·i < D:
//	    out[qs+i0+r, head·D + d] = O[r][d] / l[r]
//
// qv and kv are the vector widths (16 bytes, or 1 element when the q view
// or the cache is not 16-byte aligned). The scores never leave the chip:
// no [S, S] matrix, no repeat_interleave (kv_head indexing), no transpose
// (the output index is the [T, H·D] layout itself).
type prefillPlan struct {
	a        *AttentionOperands
	d        attnDims
	qv, kv   int64
	maxTiles int64
}

func planPrefill(a *AttentionOperands) (*prefillPlan, error) {
	d, err := a.dims(KernelFusedPrefill)
	if err != nil {
		return nil, err
	}
	p := &prefillPlan{a: a, d: d, qv: 1, kv: 1}
	p.maxTiles = ceilDiv(int64(a.Seqs.MaxQueryLen()), PrefillBlockQ)
	v := VectorBytes / d.es
	if d.D%v == 0 {
		ok := a.Q.startAddr()%VectorBytes == 0 && (d.qStride*d.es)%VectorBytes == 0 && (d.qHeadStride*d.es)%VectorBytes == 0
		if ok {
			p.qv = v
		}
		if a.KCache.startAddr()%VectorBytes == 0 && a.VCache.startAddr()%VectorBytes == 0 {
			p.kv = v
		}
	}
	return p, nil
}

func (p *prefillPlan) launch() Launch {
	return Launch{Kernel: KernelFusedPrefill, Grid: [3]int64{p.maxTiles, p.d.H, int64(p.a.Seqs.NumSeqs())},
		Block: [3]int{prefillThreads, 1, 1}, Vectorized: p.qv > 1 || p.kv > 1}
}

// tileRows returns the rows and kv_end of q tile qt of sequence seq.
func (p *prefillPlan) tileRows(seq int, qt int64) (rows, kvEnd int64) {
	s := p.a.Seqs
	ql, ctx := int64(s.QueryLen[seq]), int64(s.ContextLen[seq])
	rows = min(PrefillBlockQ, ql-qt*PrefillBlockQ)
	return rows, ctx - ql + qt*PrefillBlockQ + rows
}

// qPattern returns the Q-tile load warps for a tile of rows rows, relative
// to q[qs+i0, head, 0].
func (p *prefillPlan) qPattern(rows int64) []Warp {
	d := &p.d
	du := d.D / p.qv
	var ws []Warp
	for w := int64(0); w < prefillWarps; w++ {
		for it := int64(0); it*prefillThreads < PrefillBlockQ*du; it++ {
			x := Warp{Width: int(p.qv * d.es)}
			for lane := int64(0); lane < WarpSize; lane++ {
				u := it*prefillThreads + w*WarpSize + lane
				if r := u / du; u < PrefillBlockQ*du && r < rows {
					x.Addr[lane] = uint64(r*d.qStride*d.es + (u%du)*p.qv*d.es)
					x.Active |= 1 << lane
				}
			}
			if x.Active != 0 {
				ws = append(ws, x)
			}
		}
	}
	return ws
}

// oPattern returns the output store warps for rows rows, relative to
// out[qs+i0, head·D].
func (p *prefillPlan) oPattern(rows int64) []Warp {
	d := &p.d
	var ws []Warp
	for r := int64(0); r < rows; r++ { // warp r/4, row r%4 of it
		for _, c := range chunks(d.D, d.es) {
			for l := range c.Addr {
				c.Addr[l] += uint64(r * d.outStride * d.es)
			}
			ws = append(ws, c)
		}
	}
	return ws
}

// kvTile returns the K (or V) tile load warps of positions j0 … j0+31
// below kvEnd of sequence seq, KV head g, at absolute addresses.
func (p *prefillPlan) kvTile(cache Operand, seq int, g, j0, kvEnd int64) []Warp {
	d := &p.d
	dk := d.D / p.kv
	var rowAddr [PrefillBlockKV]uint64
	for c := int64(0); c < PrefillBlockKV && j0+c < kvEnd; c++ {
		rowAddr[c] = p.a.kvRow(cache, d, seq, j0+c, g)
	}
	var ws []Warp
	for w := int64(0); w < prefillWarps; w++ {
		for it := int64(0); it*prefillThreads < PrefillBlockKV*dk; it++ {
			x := Warp{Width: int(p.kv * d.es)}
			for lane := int64(0); lane < WarpSize; lane++ {
				u := it*prefillThreads + w*WarpSize + lane
				if c := u / dk; u < PrefillBlockKV*dk && j0+c < kvEnd {
					x.Addr[lane] = rowAddr[c] + uint64((u%dk)*p.kv*d.es)
					x.Active |= 1 << lane
				}
			}
			if x.Active != 0 {
				ws = append(ws, x)
			}
		}
	}
	return ws
}

// btWarp returns warp 0's block-table load for the tile at j0.
func (p *prefillPlan) btWarp(seq int, j0, kvEnd int64) Warp {
	x := Warp{Width: 4}
	for c := int64(0); c < PrefillBlockKV && j0+c < kvEnd; c++ {
		x.Addr[c] = p.a.Meta.BlockTables + uint64(4*(int64(seq)*p.d.maxBlocks+(j0+c)/p.d.bs))
		x.Active |= 1 << c
	}
	return x
}

// simulate counts the launch's traffic: literally in Replay mode, by
// residue classes in Aggregate mode.
func (p *prefillPlan) simulate(mode Mode) (Launch, error) {
	if mode == Replay {
		return p.replay()
	}
	return p.aggregate()
}

// replay executes the kernel's mapping block by block: one block per
// (sequence, head, query tile).
func (p *prefillPlan) replay() (Launch, error) {
	l := p.launch()
	a, d := p.a, &p.d
	B := a.Seqs.NumSeqs()
	var work int64
	for seq := 0; seq < B; seq++ {
		work += int64(a.Seqs.QueryLen[seq]) * int64(a.Seqs.ContextLen[seq])
	}
	if work*d.H*d.D/PrefillBlockQ/WarpSize > maxReplayWarps {
		return l, fmt.Errorf("%s: too large to replay; use Aggregate", KernelFusedPrefill)
	}
	c := NewCounter(true)
	for seq := 0; seq < B; seq++ {
		for head := int64(0); head < d.H; head++ {
			for qt := int64(0); qt < p.maxTiles; qt++ {
				p.replayBlock(c, seq, head, qt)
			}
		}
	}
	l.finishReplay(c, a.metaRanges()...)
	return l, nil
}

// replayBlock replays the block of (seq, head, query tile qt): its
// metadata reads, the Q tile, every K/V tile up to the tile's kv_end
// (block table, then K and V a row at a time), and the output tile.
func (p *prefillPlan) replayBlock(c *Counter, seq int, head, qt int64) {
	a, d, m := p.a, &p.d, p.a.Meta
	ql := int64(a.Seqs.QueryLen[seq])
	qs := int64(a.Seqs.QueryStart[seq])
	g := head / d.group
	c.at(false, broadcast(0), m.QueryLen+uint64(4*seq), prefillWarps)
	i0 := qt * PrefillBlockQ
	if i0 >= ql {
		return
	}
	c.at(false, broadcast(0), m.QueryStart+uint64(4*seq), prefillWarps)
	c.at(false, broadcast(0), m.ContextLens+uint64(4*seq), prefillWarps)
	rows, kvEnd := p.tileRows(seq, qt)
	for _, w := range p.qPattern(rows) {
		c.at(false, w, a.qRow(d, qs+i0, head), 1)
	}
	for j0 := int64(0); j0 < kvEnd; j0 += PrefillBlockKV {
		bt := p.btWarp(seq, j0, kvEnd)
		c.Load(&bt, 1)
		ks := p.kvTile(a.KCache, seq, g, j0, kvEnd)
		vs := p.kvTile(a.VCache, seq, g, j0, kvEnd)
		for i := range ks { // each iteration loads K then V
			c.Load(&ks[i], 1)
			c.Load(&vs[i], 1)
		}
	}
	for _, w := range p.oPattern(rows) {
		c.at(true, w, a.outRow(d, qs+i0, head), 1)
	}
}

// aggregate counts the launch by residue classes (see aggregate.go),
// sequence by sequence.
func (p *prefillPlan) aggregate() (Launch, error) {
	l := p.launch()
	a, d, m := p.a, &p.d, p.a.Meta
	c := NewCounter(false)
	var ld, st, meta footprint
	for seq := 0; seq < a.Seqs.NumSeqs(); seq++ {
		ql := int64(a.Seqs.QueryLen[seq])
		qs := int64(a.Seqs.QueryStart[seq])
		ctx := int64(a.Seqs.ContextLen[seq])
		nqt := ceilDiv(ql, PrefillBlockQ)
		c.at(false, broadcast(0), m.QueryLen+uint64(4*seq), prefillWarps*d.H*p.maxTiles)
		meta.ints(m.QueryLen, int64(seq), 1)
		if nqt == 0 {
			continue
		}
		c.at(false, broadcast(0), m.QueryStart+uint64(4*seq), prefillWarps*d.H*nqt)
		c.at(false, broadcast(0), m.ContextLens+uint64(4*seq), prefillWarps*d.H*nqt)
		meta.ints(m.QueryStart, int64(seq), 1)
		meta.ints(m.ContextLens, int64(seq), 1)
		meta.ints(m.BlockTables, int64(seq)*d.maxBlocks, ceilDiv(ctx, d.bs))
		ld.addLayout(a.qRow(d, qs, 0), []dim{{ql, d.qStride * d.es}, {d.H, d.qHeadStride * d.es}, {d.D, d.es}}, d.es)
		st.addLayout(a.outRow(d, qs, 0), []dim{{ql, d.outStride * d.es}, {d.H * d.D, d.es}}, d.es)
		for pos := int64(0); pos < ctx; pos++ {
			for _, cache := range []Operand{a.KCache, a.VCache} {
				r := a.kvRow(cache, d, seq, pos, 0)
				ld.add(r, r+uint64(d.KVH*d.D*d.es))
			}
		}
		p.aggregateQO(c, seq, nqt)
		p.aggregateKV(c, seq, nqt, ctx)
	}
	return l, l.finishAggregate(c, &ld, &st, &meta)
}

// aggregateQO counts sequence seq's Q tiles and output tiles: full tiles
// are translates of one pattern; the last tile may be short.
func (p *prefillPlan) aggregateQO(c *Counter, seq int, nqt int64) {
	a, d := p.a, &p.d
	qs := int64(a.Seqs.QueryStart[seq])
	var hq, ho residues
	for qt := int64(0); qt < nqt; qt++ {
		rows, _ := p.tileRows(seq, qt)
		for head := int64(0); head < d.H; head++ {
			qa, oa := a.qRow(d, qs+qt*PrefillBlockQ, head), a.outRow(d, qs+qt*PrefillBlockQ, head)
			if rows == PrefillBlockQ {
				hq[qa%LineBytes]++
				ho[oa%LineBytes]++
				continue
			}
			for _, w := range p.qPattern(rows) {
				c.at(false, w, qa, 1)
			}
			for _, w := range p.oPattern(rows) {
				c.at(true, w, oa, 1)
			}
		}
	}
	c.replayPattern(false, p.qPattern(PrefillBlockQ), hq, 1)
	c.replayPattern(true, p.oPattern(PrefillBlockQ), ho, 1)
}

// aggregateKV counts sequence seq's KV tiles: tile j is loaded whole by
// every q tile whose kv_end reaches past it, and cut short by the q tile
// whose kv_end falls inside it.
func (p *prefillPlan) aggregateKV(c *Counter, seq int, nqt, ctx int64) {
	nt := ceilDiv(ctx, PrefillBlockKV)
	readers := make([]int64, nt) // q tiles loading tile j whole
	type cut struct{ j0, kvEnd int64 }
	var cuts []cut
	for qt := int64(0); qt < nqt; qt++ {
		_, kvEnd := p.tileRows(seq, qt)
		full := kvEnd / PrefillBlockKV
		for j := int64(0); j < full; j++ {
			readers[j]++
		}
		if kvEnd%PrefillBlockKV != 0 {
			cuts = append(cuts, cut{full * PrefillBlockKV, kvEnd})
		}
	}
	for j := int64(0); j < nt; j++ {
		if readers[j] > 0 {
			j0 := j * PrefillBlockKV
			p.loadKVTile(c, seq, j0, j0+PrefillBlockKV, readers[j])
		}
	}
	for _, ct := range cuts {
		p.loadKVTile(c, seq, ct.j0, ct.kvEnd, 1)
	}
}

// loadKVTile counts n loads, by every head, of sequence seq's K/V tile
// [j0, kvEnd): its block-table entries, then K and V of each KV head
// (read once per query head of its group).
func (p *prefillPlan) loadKVTile(c *Counter, seq int, j0, kvEnd, n int64) {
	a, d := p.a, &p.d
	bt := p.btWarp(seq, j0, kvEnd)
	c.Load(&bt, n*d.H)
	for g := int64(0); g < d.KVH; g++ {
		for _, cache := range []Operand{a.KCache, a.VCache} {
			for _, w := range p.kvTile(cache, seq, g, j0, kvEnd) {
				c.Load(&w, n*d.group)
			}
		}
	}
}

// SimulateFusedPrefill simulates flash_attention_prefill over a varlen batch.
func SimulateFusedPrefill(a *AttentionOperands, mode Mode) (Launch, error) {
	p, err := planPrefill(a)
	if err != nil {
		return Launch{}, err
	}
	return p.simulate(mode)
}

// The prefill launcher: FusedPrefill, planned by planPrefill above.

// PrefillSharedBytes is the dynamic shared memory flash_attention_prefill
// needs for head_dim D: the Q tile, the padded K tile, the V tile (fp32)
// and 32 row offsets.
func PrefillSharedBytes(D int) int64 {
	return int64(PrefillBlockQ*D+PrefillBlockKV*(D+1)+PrefillBlockKV*D)*4 + PrefillBlockKV*8
}

// FusedPrefill runs flash_attention_prefill: causal attention of the new
// tokens over the cached positions, straight into out [T, H·D].
func (d *Device) FusedPrefill(q, kCache, vCache, out *DeviceTensor, s *DeviceSeqs) error {
	if err := d.ok(); err != nil {
		return err
	}
	a, err := attention(q, kCache, vCache, out, s)
	if err != nil {
		return err
	}
	p, err := planPrefill(a)
	if err != nil {
		return err
	}
	smem := PrefillSharedBytes(int(p.d.D))
	if smem > d.Info.MaxSharedOptin {
		return fmt.Errorf("cuda: %s needs %d bytes of shared memory for head_dim %d; %s allows %d",
			KernelFusedPrefill, smem, p.d.D, d.Info.Name, d.Info.MaxSharedOptin)
	}
	args, err := newAttnArgs(a, &p.d)
	if err != nil {
		return err
	}
	args.qvec, args.kvvec = int32(p.qv), int32(p.kv)
	if d.record {
		if err := d.note(p.simulate(Aggregate)); err != nil {
			return err
		}
	}
	ptrs := [4]uintptr{q.buf.ptr, kCache.buf.ptr, vCache.buf.ptr, out.buf.ptr}
	l, err := dimsOf(p.launch(), smem)
	if err != nil {
		return err
	}
	return d.timed(func() error { return launchFlashPrefill(p.d.dt, ptrs, s, args, l) })
}
