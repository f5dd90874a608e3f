package cuda

import (
	"math/rand/v2"
	"testing"

	"github.com/stride-lm/stride/tensor"
)

// randomView returns a random view of a random meta tensor: up to 4 dims,
// then transposes, stepped slices, narrows and expands, so strides are
// arbitrary, offsets non-zero and sometimes 0-strided.
func randomView(r *rand.Rand, dt tensor.DType) *tensor.Tensor {
	return randomViewOf(r, func(shape ...int) *tensor.Tensor { return tensor.Must(tensor.Meta(dt, shape...)) })
}

// randomViewOf is randomView over a base tensor made by base (a meta
// tensor, or real data for the GPU tests).
func randomViewOf(r *rand.Rand, base func(shape ...int) *tensor.Tensor) *tensor.Tensor {
	nd := 1 + r.IntN(4)
	shape := make([]int, nd)
	for i := range shape {
		shape[i] = 1 + r.IntN(24)
		if r.IntN(4) == 0 {
			shape[i] = 32 * (1 + r.IntN(3))
		}
	}
	t := base(shape...)
	for k := r.IntN(4); k > 0; k-- {
		d := t.Dim()
		switch r.IntN(4) {
		case 0:
			if d > 1 {
				t = tensor.Must(t.Transpose(r.IntN(d), r.IntN(d)))
			}
		case 1:
			i := r.IntN(d)
			n, _ := t.Size(i)
			if n > 1 {
				t = tensor.Must(t.Slice(i, r.IntN(n/2+1), n, 1+r.IntN(3)))
			}
		case 2:
			i := r.IntN(d)
			n, _ := t.Size(i)
			if n > 2 {
				t = tensor.Must(t.Narrow(i, 1, n-1-r.IntN(n-2)))
			}
		case 3:
			if d < 4 {
				u := tensor.Must(t.Unsqueeze(r.IntN(d + 1)))
				sh := u.Shape()
				for j, s := range sh {
					if s == 1 {
						sh[j] = 1 + r.IntN(5)
						break
					}
				}
				t = tensor.Must(u.Expand(sh...))
			}
		}
	}
	return t
}

// rowMajorAddrs lists the byte address of every element of o in row-major
// logical order, straight from the unmerged shape and strides.
func rowMajorAddrs(o Operand) []uint64 {
	shape, st := o.shape(), o.strides()
	var out []uint64
	idx := make([]int, len(shape))
	n := o.Layout.Numel()
	for e := 0; e < n; e++ {
		off := o.offset()
		for k := range shape {
			off += int64(idx[k] * st[k])
		}
		out = append(out, o.elemAddr(off))
		for k := len(shape) - 1; k >= 0; k-- {
			idx[k]++
			if idx[k] < shape[k] {
				break
			}
			idx[k] = 0
		}
	}
	return out
}

// oracleCopy counts strided_copy's loads and stores from first principles:
// units of vec consecutive row-major elements, 32 units per warp, a map of
// sectors per warp and per launch.
func oracleCopy(dst, src Operand, vec int) Launch {
	sa, da := rowMajorAddrs(src), rowMajorAddrs(dst)
	var l Launch
	count := func(t *Traffic, all map[uint64]bool, addrs []uint64, width int) {
		units := len(addrs) / vec
		for g := 0; g < units; g += 32 {
			sec := map[uint64]bool{}
			ln := map[uint64]bool{}
			by := map[uint64]bool{}
			for u := g; u < min(g+32, units); u++ {
				a := addrs[u*vec]
				sec[a/32], ln[a/128], by[a] = true, true, true
				for b := a; b < a+uint64(width); b++ {
					all[b/32] = true
				}
			}
			t.Requests++
			t.Sectors += int64(len(sec))
			t.Lines += int64(len(ln))
			t.BytesRequested += int64(len(by) * width)
		}
		t.UniqueSectors = int64(len(all))
	}
	w := int(src.es()) * vec
	count(&l.Loads, map[uint64]bool{}, sa, w)
	count(&l.Stores, map[uint64]bool{}, da, w)
	return l
}

func sameTraffic(a, b Launch) bool {
	return a.Loads == b.Loads && a.Stores == b.Stores && a.MetaBytes == b.MetaBytes
}

// The aggregate count (residue classes, super-rows, footprints) must equal
// the literal replay of the kernel's thread mapping, and both must equal a
// first-principles oracle, on random views, dtypes and misaligned bases.
func TestCopyAggregateEqualsReplay(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	n := 400
	if testing.Short() {
		n = 100
	}
	vecSeen := 0
	for i := 0; i < n; i++ {
		dt := []tensor.DType{tensor.F32, tensor.F16, tensor.BF16}[r.IntN(3)]
		src := randomView(r, dt)
		for src.Numel() > 1<<13 {
			src = randomView(r, dt)
		}
		dst := tensor.Must(tensor.Meta(dt, src.Shape()...))
		es := uint64(dt.Size())
		so := Operand{src, 1<<30 + 256*uint64(r.IntN(4)) + es*uint64(r.IntN(3)*r.IntN(2))}
		do := Operand{dst, 1<<31 + es*uint64(r.IntN(2)*r.IntN(9))}
		p, err := planCopy(KernelStridedCopy, do, so)
		if err != nil {
			t.Fatalf("%v: %v", src, err)
		}
		agg, err := p.simulate(do, so, Aggregate)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := p.simulate(do, so, Replay)
		if err != nil {
			t.Fatal(err)
		}
		if !sameTraffic(agg, rep) {
			t.Fatalf("%v base %#x: aggregate\n%v\nreplay\n%v", src, so.Base, agg, rep)
		}
		if src.Numel() > 0 {
			if o := oracleCopy(do, so, int(p.vec)); !sameTraffic(o, rep) {
				t.Fatalf("%v (vec %d): replay\n%v\noracle\n%v", src, p.vec, rep, o)
			}
		}
		if p.vec > 1 {
			vecSeen++
		}
	}
	if vecSeen == 0 {
		t.Fatal("no random case took the vector path: the test does not cover it")
	}
}

// The vector path is taken only when every 16-byte access is aligned: a
// view one element into its storage falls back to scalar loads.
func TestCopyVectorAlignment(t *testing.T) {
	as := NewAddressSpace()
	base := tensor.Must(tensor.Meta(tensor.F32, 64, 129))
	aligned := tensor.Must(base.Narrow(1, 0, 128)) // row stride 129·4 bytes: not a multiple of 16
	rows := tensor.Must(tensor.Meta(tensor.F32, 64, 132))
	ok := tensor.Must(rows.Narrow(1, 4, 128))  // offset 16 B, row stride 528 B
	bad := tensor.Must(rows.Narrow(1, 1, 128)) // offset 4 B
	for _, c := range []struct {
		src  *tensor.Tensor
		want bool
	}{{aligned, false}, {ok, true}, {bad, false}} {
		dst := tensor.Must(tensor.Meta(tensor.F32, c.src.Shape()...))
		l, err := SimulateStridedCopy(as.Operand(dst), as.Operand(c.src), Aggregate)
		if err != nil {
			t.Fatal(err)
		}
		if l.Vectorized != c.want {
			t.Errorf("%v: vectorized=%v, want %v", c.src, l.Vectorized, c.want)
		}
	}
	// misaligned rows: each 32-lane fp32 load of a row straddles 5 sectors.
	dst := tensor.Must(tensor.Meta(tensor.F32, 64, 128))
	l, _ := SimulateStridedCopy(as.Operand(dst), as.Operand(bad), Aggregate)
	if l.Loads.Requests != 64*4 || l.Loads.Sectors != 64*4*5 {
		t.Fatalf("offset-1 view: %v, want 256 requests × 5 sectors", l.Loads)
	}
}

func TestCopyErrors(t *testing.T) {
	as := NewAddressSpace()
	a := as.Operand(tensor.Must(tensor.Meta(tensor.F32, 4, 5)))
	b := as.Operand(tensor.Must(tensor.Meta(tensor.F16, 4, 5)))
	c := as.Operand(tensor.Must(tensor.Must(tensor.Meta(tensor.F32, 5, 4)).T()))
	if _, err := SimulateStridedCopy(b, a, Aggregate); err == nil {
		t.Error("dtype mismatch accepted")
	}
	if _, err := SimulateStridedCopy(c, a, Aggregate); err == nil {
		t.Error("non-contiguous dst accepted")
	}
	d := as.Operand(tensor.Must(tensor.Meta(tensor.F32, 5, 4)))
	if _, err := SimulateStridedCopy(d, a, Aggregate); err == nil {
		t.Error("shape mismatch accepted")
	}
	if _, err := SimulateStridedCopy(Operand{}, a, Aggregate); err == nil {
		t.Error("nil dst accepted")
	}
	// 5 unmergeable dims
	x := tensor.Must(tensor.Meta(tensor.F32, 2, 2, 2, 2, 2))
	y := tensor.Must(x.Permute(4, 3, 2, 1, 0))
	if _, err := SimulateStridedCopy(as.Operand(tensor.Must(tensor.Meta(tensor.F32, 2, 2, 2, 2, 2))), as.Operand(y), Aggregate); err == nil {
		t.Error("5 unmergeable dims accepted")
	}
}
