package cuda

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stride-lm/stride/tensor"
)

// This file holds the float64 attention reference the GPU tests compare
// every kernel with, and tests of the reference itself.

// attnCase is one attention step with real data: a fused QKV buffer whose
// q, k, v views feed the kernels, and caches whose earlier-context slots
// hold random values.
type attnCase struct {
	dt           tensor.DType
	H, KVH, D    int
	bs, nb       int
	s            *Seqs
	qkv, q, k, v *tensor.Tensor
	kc, vc       *tensor.Tensor
}

func newAttnCase(t testing.TB, r *rand.Rand, dt tensor.DType, H, KVH, D, bs int, qlens []int, extra int) *attnCase {
	s, nb := randomSeqs(r, qlens, extra, bs)
	T := len(s.SlotMapping)
	c := &attnCase{dt: dt, H: H, KVH: KVH, D: D, bs: bs, nb: nb, s: s}
	c.qkv = tensor.Must(tensor.Randn(nil, dt, r.Uint64(), T, (H+2*KVH)*D))
	view := func(col, heads int) *tensor.Tensor {
		return tensor.Must(tensor.Must(c.qkv.Narrow(1, col, heads*D)).View(T, heads, D))
	}
	c.q, c.k, c.v = view(0, H), view(H*D, KVH), view((H+KVH)*D, KVH)
	c.kc = tensor.Must(tensor.Randn(nil, dt, r.Uint64(), nb, bs, KVH, D))
	c.vc = tensor.Must(tensor.Randn(nil, dt, r.Uint64(), nb, bs, KVH, D))
	return c
}

func at(t testing.TB, x *tensor.Tensor, idx ...int) float64 {
	return float64(must(x.At(idx...)))
}

// hostData holds q, k, v and the initial caches as flat float64 slices in
// row-major order, so the reference indexes them directly.
type hostData struct {
	q, k, v, kc, vc []float64
}

func flat(x *tensor.Tensor) []float64 {
	f := must(x.Float32s())
	out := make([]float64, len(f))
	for i, v := range f {
		out[i] = float64(v)
	}
	return out
}

// reference is causal attention in float64: out[row, h·D+e]. K and V of
// position p of sequence i come from this step's k, v for the new tokens
// and from the initial caches for earlier positions.
func (c *attnCase) reference(t testing.TB) []float64 {
	h := hostData{q: flat(c.q), k: flat(c.k), v: flat(c.v), kc: flat(c.kc), vc: flat(c.vc)}
	T := len(c.s.SlotMapping)
	out := make([]float64, T*c.H*c.D)
	G := c.H / c.KVH
	D, KVH := c.D, c.KVH
	scale := 1 / math.Sqrt(float64(D))
	kvRow := func(val bool, i, p, g int) []float64 {
		ql, C := c.s.QueryLen[i], c.s.ContextLen[i]
		if p >= C-ql {
			row := c.s.QueryStart[i] + p - (C - ql)
			src := h.k
			if val {
				src = h.v
			}
			return src[(row*KVH+g)*D : (row*KVH+g+1)*D]
		}
		slot := int(c.s.physSlot(i, p, c.bs))
		src := h.kc
		if val {
			src = h.vc
		}
		return src[(slot*KVH+g)*D : (slot*KVH+g+1)*D]
	}
	for i := range c.s.QueryLen {
		ql, C := c.s.QueryLen[i], c.s.ContextLen[i]
		for j := 0; j < ql; j++ {
			row, pos := c.s.QueryStart[i]+j, C-ql+j
			for hd := 0; hd < c.H; hd++ {
				g := hd / G
				q := h.q[(row*c.H+hd)*D : (row*c.H+hd+1)*D]
				sc := make([]float64, pos+1)
				m := math.Inf(-1)
				for p := 0; p <= pos; p++ {
					k := kvRow(false, i, p, g)
					var dot float64
					for e := range q {
						dot += q[e] * k[e]
					}
					sc[p] = dot * scale
					m = math.Max(m, sc[p])
				}
				var sum float64
				for p := range sc {
					sc[p] = math.Exp(sc[p] - m)
					sum += sc[p]
				}
				o := out[(row*c.H+hd)*D : (row*c.H+hd+1)*D]
				for p := range sc {
					v := kvRow(true, i, p, g)
					for e := range o {
						o[e] += sc[p] * v[e] / sum
					}
				}
			}
		}
	}
	return out
}

// The reference on cases with a known answer: one position attends only
// to itself (out = its v row); with q = 0 every position weighs the same
// (out = mean of the visible v rows).
func TestAttentionReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	c := newAttnCase(t, r, tensor.F32, 4, 2, 8, 4, []int{1}, 0)
	out := c.reference(t)
	for h := 0; h < 4; h++ {
		for e := 0; e < 8; e++ {
			if want := at(t, c.v, 0, h/2, e); math.Abs(out[h*8+e]-want) > 1e-12 {
				t.Fatalf("single position: head %d elem %d = %v, want %v", h, e, out[h*8+e], want)
			}
		}
	}
	c = newAttnCase(t, r, tensor.F32, 2, 1, 4, 3, []int{5}, 7) // 5 new tokens on 7 cached
	for i := 0; i < c.q.Shape()[0]; i++ {
		for h := 0; h < 2; h++ {
			for e := 0; e < 4; e++ {
				if err := c.q.Set(0, i, h, e); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	out = c.reference(t)
	C, ql := c.s.ContextLen[0], c.s.QueryLen[0]
	for j := 0; j < ql; j++ {
		pos := C - ql + j
		for e := 0; e < 4; e++ {
			var mean float64
			for p := 0; p <= pos; p++ {
				mean += c.kvAtSlow(t, true, 0, p, 0, e)
			}
			mean /= float64(pos + 1)
			if got := out[(j*2+1)*4+e]; math.Abs(got-mean) > 1e-9 {
				t.Fatalf("q=0 row %d elem %d: %v, want mean %v", j, e, got, mean)
			}
		}
	}
}

// kvAtSlow reads K or V of position p through tensor.At, independently of
// the flat indexing the reference uses.
func (c *attnCase) kvAtSlow(t testing.TB, val bool, i, p, g, e int) float64 {
	ql, C := c.s.QueryLen[i], c.s.ContextLen[i]
	if p >= C-ql {
		row := c.s.QueryStart[i] + p - (C - ql)
		if val {
			return at(t, c.v, row, g, e)
		}
		return at(t, c.k, row, g, e)
	}
	slot := int(c.s.physSlot(i, p, c.bs))
	x := c.kc
	if val {
		x = c.vc
	}
	return at(t, x, slot/c.bs, slot%c.bs, g, e)
}
