package cuda

import (
	"fmt"
	"math"
	"slices"
)

// Names of the naive path's attention kernels in cuda/kernels/naive.cu.
const (
	KernelNaiveScores  = "naive_scores"
	KernelNaiveSoftmax = "naive_softmax"
	KernelNaiveAV      = "naive_av"
)

const (
	naiveTile    = 32
	naiveThreadY = 8
	// softmaxThreads is the block size of naive_softmax.
	softmaxThreads = 256
)

// The naive path's matmuls are classic shared-memory tiled GEMMs: a block
// of 32×8 threads owns a 32×32 output tile and walks the reduction dim 32
// at a time. Thread (tx, ty) loads, for k = 0…3, element tx of tile row
// ty+8k of each operand, so warp ty reads 32 consecutive elements of one
// row: coalesced whenever the operand's innermost dim is contiguous. Each
// output row is written as 32-element chunks, lane tx on column tx.
//
//	naive_scores  grid (⌈L/32⌉, ⌈Tq/32⌉, H)
//	    Qs[r][tx] = q[i0+r, h, d0+tx]; Ks[r][tx] = k[j0+r, h, d0+tx]
//	    scores[h, i, j] = Σ_d q·k · scale, or −inf where j > L−Tq+i (causal)
//	naive_softmax grid (H·Tq), 256 threads, in place over one row of L:
//	    pass 1: thread-strided loads, running max and sum
//	    pass 2: loads again and stores exp(x−m)/Σ
//	naive_av      grid (⌈D/32⌉, ⌈Tq/32⌉, H)
//	    Ps[r][tx] = p[h, i0+r, j0+tx]; Vs[r][tx] = v[j0+r, h, d0+tx]
//	    out[h, i, d] = Σ_j p·v          out is [H, Tq, D] contiguous
//
// Re-reading operand tiles (q once per column tile, k once per row tile)
// is L1/L2 traffic; the compulsory HBM bytes are each operand once.

// checkRows checks a [rows, H, D]-shaped operand read row-wise with unit
// element stride.
func checkRows(name, what string, o Operand, rows, H, D int) error {
	if o.Layout == nil {
		return fmt.Errorf("%s: missing %s", name, what)
	}
	sh, st := o.shape(), o.strides()
	if len(sh) != 3 || (rows >= 0 && sh[0] != rows) || (H >= 0 && sh[1] != H) || (D >= 0 && sh[2] != D) {
		return fmt.Errorf("%s: %s has shape %v, want [%d, %d, %d]", name, what, sh, rows, H, D)
	}
	if sh[2] > 1 && st[2] != 1 {
		return fmt.Errorf("%s: %s's last dim must be contiguous, got strides %v", name, what, st)
	}
	return nil
}

func checkContig(name, what string, o Operand, shape ...int) error {
	if o.Layout == nil {
		return fmt.Errorf("%s: missing %s", name, what)
	}
	if !slices.Equal(o.shape(), shape) || !o.Layout.IsContiguous() {
		return fmt.Errorf("%s: %s must be contiguous %v, got shape %v strides %v", name, what, shape, o.shape(), o.strides())
	}
	return nil
}

// rowHist is the residue histogram of the rows (h, i) of a [H, N, ·]
// operand read through its strides (in elements).
func rowHist(o Operand, n0, s0, n1, s1 int64) residues {
	es := o.es()
	return point(o.startAddr()).convolve(linearResidues(0, n0, s0*es)).convolve(linearResidues(0, n1, s1*es))
}

// SimulateNaiveScores simulates naive_scores: scores [H, Tq, L] (contiguous) =
// q [Tq, H, D] · k [L, H, D]ᵀ, q and k read through their strides (q a
// view of the QKV output, k fresh, gathered or repeated).
func SimulateNaiveScores(scores, q, k Operand, mode Mode) (Launch, error) {
	p, err := planNaiveScores(scores, q, k)
	if err != nil {
		return Launch{}, err
	}
	return p.simulate(mode)
}

// naivePlan holds the checked sizes and operands of a naive kernel: a, b
// the inputs and o the output (scores: q, k → scores; softmax: scores in
// place; av: probs, v → out).
type naivePlan struct {
	kernel      string
	H, Tq, L, D int64
	a, b, o     Operand
	grid        [3]int64
	block       [3]int
}

func (p *naivePlan) launch() Launch {
	return Launch{Kernel: p.kernel, Grid: p.grid, Block: p.block}
}

func planNaiveScores(scores, q, k Operand) (*naivePlan, error) {
	name := KernelNaiveScores
	if err := checkRows(name, "q", q, -1, -1, -1); err != nil {
		return nil, err
	}
	qs := q.shape()
	Tq, H, D := int64(qs[0]), int64(qs[1]), int64(qs[2])
	if err := checkRows(name, "k", k, -1, int(H), int(D)); err != nil {
		return nil, err
	}
	L := int64(k.shape()[0])
	if err := checkContig(name, "scores", scores, int(H), int(Tq), int(L)); err != nil {
		return nil, err
	}
	if q.dtype() != k.dtype() || q.dtype() != scores.dtype() {
		return nil, fmt.Errorf("%s: q %v, k %v, scores %v: one dtype", name, q.dtype(), k.dtype(), scores.dtype())
	}
	if L < Tq {
		return nil, fmt.Errorf("%s: %d keys for %d queries: causal attention needs L ≥ Tq", name, L, Tq)
	}
	return &naivePlan{kernel: name, H: H, Tq: Tq, L: L, D: D, a: q, b: k, o: scores,
		grid: [3]int64{ceilDiv(L, naiveTile), ceilDiv(Tq, naiveTile), H}, block: [3]int{naiveTile, naiveThreadY, 1}}, nil
}

func (p *naivePlan) simulate(mode Mode) (Launch, error) {
	switch p.kernel {
	case KernelNaiveSoftmax:
		return p.simulateSoftmax(mode)
	case KernelNaiveAV:
		return p.simulateAV(mode)
	}
	return p.simulateScores(mode)
}

func (p *naivePlan) simulateScores(mode Mode) (Launch, error) {
	name, q, k, scores := p.kernel, p.a, p.b, p.o
	Tq, H, D, L := p.Tq, p.H, p.D, p.L
	es := q.es()
	nIT, nJT := ceilDiv(Tq, naiveTile), ceilDiv(L, naiveTile)
	l := p.launch()
	qst, kst := q.strides(), k.strides()
	qRow := func(i, h int64) uint64 { return q.elemAddr(q.offset() + i*int64(qst[0]) + h*int64(qst[1])) }
	kRow := func(j, h int64) uint64 { return k.elemAddr(k.offset() + j*int64(kst[0]) + h*int64(kst[1])) }
	sRow := func(h, i int64) uint64 { return scores.elemAddr(scores.offset() + (h*Tq+i)*L) }
	if mode == Replay {
		if H*nIT*nJT*(2*ceilDiv(D, naiveTile)+1)*naiveTile > maxReplayWarps {
			return l, fmt.Errorf("%s: too large to replay", name)
		}
		c := NewCounter(true)
		for h := int64(0); h < H; h++ {
			for it := int64(0); it < nIT; it++ {
				for jt := int64(0); jt < nJT; jt++ {
					i0, j0 := it*naiveTile, jt*naiveTile
					for d0 := int64(0); d0 < D; d0 += naiveTile {
						n := int(min(naiveTile, D-d0))
						for r := int64(0); r < naiveTile; r++ { // warp r%8, k = r/8
							if i0+r < Tq {
								x := Strided(qRow(i0+r, h)+uint64(d0*es), n, es, int(es))
								c.Load(&x, 1)
							}
							if j0+r < L {
								x := Strided(kRow(j0+r, h)+uint64(d0*es), n, es, int(es))
								c.Load(&x, 1)
							}
						}
					}
					for r := int64(0); r < naiveTile && i0+r < Tq; r++ {
						x := Strided(sRow(h, i0+r)+uint64(j0*es), int(min(naiveTile, L-j0)), es, int(es))
						c.Store(&x, 1)
					}
				}
			}
		}
		l.finishReplay(c)
		return l, nil
	}
	c := NewCounter(false)
	c.replayPattern(false, chunks(D, es), rowHist(q, Tq, int64(qst[0]), H, int64(qst[1])), nJT)
	c.replayPattern(false, chunks(D, es), rowHist(k, L, int64(kst[0]), H, int64(kst[1])), nIT)
	c.replayPattern(true, chunks(L, es), linearResidues(scores.startAddr(), H*Tq, L*es), 1)
	var ld, st footprint
	ld.addLayout(q.startAddr(), byteDims(q), es)
	ld.addLayout(k.startAddr(), byteDims(k), es)
	st.addLayout(scores.startAddr(), byteDims(scores), es)
	return l, l.finishAggregate(c, &ld, &st, nil)
}

// SimulateNaiveSoftmax simulates naive_softmax over the rows of a contiguous
// [H, Tq, L] scores tensor, in place.
func SimulateNaiveSoftmax(scores Operand, mode Mode) (Launch, error) {
	p, err := planNaiveSoftmax(scores)
	if err != nil {
		return Launch{}, err
	}
	return p.simulate(mode)
}

func planNaiveSoftmax(scores Operand) (*naivePlan, error) {
	name := KernelNaiveSoftmax
	if scores.Layout == nil || scores.Layout.Dim() != 3 || !scores.Layout.IsContiguous() {
		return nil, fmt.Errorf("%s: scores must be contiguous [H, Tq, L]", name)
	}
	sh := scores.shape()
	return &naivePlan{kernel: name, H: int64(sh[0]), Tq: int64(sh[1]), L: int64(sh[2]), a: scores, o: scores,
		grid: [3]int64{int64(sh[0] * sh[1]), 1, 1}, block: [3]int{softmaxThreads, 1, 1}}, nil
}

func (p *naivePlan) simulateSoftmax(mode Mode) (Launch, error) {
	name, scores := p.kernel, p.o
	rows, L := p.H*p.Tq, p.L
	es := scores.es()
	l := p.launch()
	if rows == 0 || L == 0 {
		return l, nil
	}
	if mode == Replay {
		if rows*3*ceilDiv(L, WarpSize) > maxReplayWarps {
			return l, fmt.Errorf("%s: too large to replay", name)
		}
		c := NewCounter(true)
		for r := int64(0); r < rows; r++ {
			base := scores.elemAddr(scores.offset() + r*L)
			for pass := 0; pass < 2; pass++ {
				for j := int64(0); j < L; j += softmaxThreads {
					for w := int64(0); w < softmaxThreads/WarpSize; w++ {
						j0 := j + w*WarpSize
						if j0 >= L {
							break
						}
						x := Strided(base+uint64(j0*es), int(min(WarpSize, L-j0)), es, int(es))
						c.Load(&x, 1)
						if pass == 1 {
							c.Store(&x, 1)
						}
					}
				}
			}
		}
		l.finishReplay(c)
		return l, nil
	}
	c := NewCounter(false)
	h := linearResidues(scores.startAddr(), rows, L*es)
	c.replayPattern(false, chunks(L, es), h, 2)
	c.replayPattern(true, chunks(L, es), h, 1)
	var ld, st footprint
	ld.addLayout(scores.startAddr(), byteDims(scores), es)
	st.addLayout(scores.startAddr(), byteDims(scores), es)
	return l, l.finishAggregate(c, &ld, &st, nil)
}

// SimulateNaiveAV simulates naive_av: out [H, Tq, D] (contiguous) =
// probs [H, Tq, L] · v [L, H, D], v read through its strides.
func SimulateNaiveAV(out, probs, v Operand, mode Mode) (Launch, error) {
	p, err := planNaiveAV(out, probs, v)
	if err != nil {
		return Launch{}, err
	}
	return p.simulate(mode)
}

func planNaiveAV(out, probs, v Operand) (*naivePlan, error) {
	name := KernelNaiveAV
	if probs.Layout == nil || probs.Layout.Dim() != 3 || !probs.Layout.IsContiguous() {
		return nil, fmt.Errorf("%s: probs must be contiguous [H, Tq, L]", name)
	}
	ps := probs.shape()
	H, Tq, L := int64(ps[0]), int64(ps[1]), int64(ps[2])
	if err := checkRows(name, "v", v, int(L), int(H), -1); err != nil {
		return nil, err
	}
	D := int64(v.shape()[2])
	if err := checkContig(name, "out", out, int(H), int(Tq), int(D)); err != nil {
		return nil, err
	}
	if v.dtype() != probs.dtype() || out.dtype() != probs.dtype() {
		return nil, fmt.Errorf("%s: probs %v, v %v, out %v: one dtype", name, probs.dtype(), v.dtype(), out.dtype())
	}
	return &naivePlan{kernel: name, H: H, Tq: Tq, L: L, D: D, a: probs, b: v, o: out,
		grid: [3]int64{ceilDiv(D, naiveTile), ceilDiv(Tq, naiveTile), H}, block: [3]int{naiveTile, naiveThreadY, 1}}, nil
}

func (p *naivePlan) simulateAV(mode Mode) (Launch, error) {
	name, probs, v, out := p.kernel, p.a, p.b, p.o
	H, Tq, L, D := p.H, p.Tq, p.L, p.D
	es := v.es()
	nIT, nDT := ceilDiv(Tq, naiveTile), ceilDiv(D, naiveTile)
	l := p.launch()
	vst := v.strides()
	pRow := func(h, i int64) uint64 { return probs.elemAddr(probs.offset() + (h*Tq+i)*L) }
	vRow := func(j, h int64) uint64 { return v.elemAddr(v.offset() + j*int64(vst[0]) + h*int64(vst[1])) }
	oRow := func(h, i int64) uint64 { return out.elemAddr(out.offset() + (h*Tq+i)*D) }
	if mode == Replay {
		if H*nIT*nDT*(2*ceilDiv(L, naiveTile)+1)*naiveTile > maxReplayWarps {
			return l, fmt.Errorf("%s: too large to replay", name)
		}
		c := NewCounter(true)
		for h := int64(0); h < H; h++ {
			for it := int64(0); it < nIT; it++ {
				for dt := int64(0); dt < nDT; dt++ {
					i0, d0 := it*naiveTile, dt*naiveTile
					nd := int(min(naiveTile, D-d0))
					for j0 := int64(0); j0 < L; j0 += naiveTile {
						for r := int64(0); r < naiveTile; r++ {
							if i0+r < Tq {
								x := Strided(pRow(h, i0+r)+uint64(j0*es), int(min(naiveTile, L-j0)), es, int(es))
								c.Load(&x, 1)
							}
							if j0+r < L {
								x := Strided(vRow(j0+r, h)+uint64(d0*es), nd, es, int(es))
								c.Load(&x, 1)
							}
						}
					}
					for r := int64(0); r < naiveTile && i0+r < Tq; r++ {
						x := Strided(oRow(h, i0+r)+uint64(d0*es), nd, es, int(es))
						c.Store(&x, 1)
					}
				}
			}
		}
		l.finishReplay(c)
		return l, nil
	}
	c := NewCounter(false)
	c.replayPattern(false, chunks(L, es), linearResidues(probs.startAddr(), H*Tq, L*es), nDT)
	c.replayPattern(false, chunks(D, es), rowHist(v, L, int64(vst[0]), H, int64(vst[1])), nIT)
	c.replayPattern(true, chunks(D, es), linearResidues(out.startAddr(), H*Tq, D*es), 1)
	var ld, st footprint
	ld.addLayout(probs.startAddr(), byteDims(probs), es)
	ld.addLayout(v.startAddr(), byteDims(v), es)
	st.addLayout(out.startAddr(), byteDims(out), es)
	return l, l.finishAggregate(c, &ld, &st, nil)
}

// The naive kernels' launchers, planned by planNaiveScores, planNaiveSoftmax
// and planNaiveAV above.

// naiveArgs mirrors StrideNaiveArgs.
type naiveArgs struct {
	heads, tq, l, d               int32
	qOffset, qStride, qHeadStride int64
	kOffset, kStride, kHeadStride int64
	sOffset, oOffset              int64
	scale                         float32
}

func (d *Device) runNaive(p *naivePlan, ptrs [3]uintptr, a *naiveArgs) error {
	for _, v := range []int64{p.H, p.Tq, p.L, p.D} {
		if v > math.MaxInt32 {
			return fmt.Errorf("cuda: %s: size %d does not fit int32", p.kernel, v)
		}
	}
	a.heads, a.tq, a.l, a.d = int32(p.H), int32(p.Tq), int32(p.L), int32(p.D)
	if d.record {
		if err := d.note(p.simulate(Aggregate)); err != nil {
			return err
		}
	}
	l, err := dimsOf(p.launch(), 0)
	if err != nil {
		return err
	}
	return d.timed(func() error { return launchNaive(p.kernel, p.o.dtype(), ptrs, a, l) })
}

// NaiveScores writes scores [H, Tq, L] = q [Tq, H, D] · k [L, H, D]ᵀ / √D,
// causally masked with −inf.
func (d *Device) NaiveScores(scores, q, k *DeviceTensor) error {
	if err := d.ok(); err != nil {
		return err
	}
	p, err := planNaiveScores(scores.Operand(), q.Operand(), k.Operand())
	if err != nil {
		return err
	}
	qs, ks := q.layout.Strides(), k.layout.Strides()
	a := &naiveArgs{qOffset: int64(q.layout.Offset()), qStride: int64(qs[0]), qHeadStride: int64(qs[1]),
		kOffset: int64(k.layout.Offset()), kStride: int64(ks[0]), kHeadStride: int64(ks[1]),
		sOffset: int64(scores.layout.Offset()), scale: float32(1 / math.Sqrt(float64(p.D)))}
	return d.runNaive(p, [3]uintptr{q.buf.ptr, k.buf.ptr, scores.buf.ptr}, a)
}

// NaiveSoftmax normalizes every row of scores [H, Tq, L] in place.
func (d *Device) NaiveSoftmax(scores *DeviceTensor) error {
	if err := d.ok(); err != nil {
		return err
	}
	p, err := planNaiveSoftmax(scores.Operand())
	if err != nil {
		return err
	}
	a := &naiveArgs{sOffset: int64(scores.layout.Offset())}
	return d.runNaive(p, [3]uintptr{scores.buf.ptr, 0, scores.buf.ptr}, a)
}

// NaiveAV writes out [H, Tq, D] = probs [H, Tq, L] · v [L, H, D].
func (d *Device) NaiveAV(out, probs, v *DeviceTensor) error {
	if err := d.ok(); err != nil {
		return err
	}
	p, err := planNaiveAV(out.Operand(), probs.Operand(), v.Operand())
	if err != nil {
		return err
	}
	vs := v.layout.Strides()
	a := &naiveArgs{kOffset: int64(v.layout.Offset()), kStride: int64(vs[0]), kHeadStride: int64(vs[1]),
		sOffset: int64(probs.layout.Offset()), oOffset: int64(out.layout.Offset())}
	return d.runNaive(p, [3]uintptr{probs.buf.ptr, v.buf.ptr, out.buf.ptr}, a)
}
