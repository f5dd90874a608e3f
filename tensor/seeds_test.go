package tensor

import (
	"slices"
	"strings"
	"testing"
)

// The tests in this file reproduce, number for number, the worked PyTorch
// examples printed in the course notes under /work/shared/seeds (the
// oracle for tensor semantics in this project). Each test names the
// section it comes from.

// Seed 003, "storage + 元数据": x = arange(12).reshape(3,4), its t(), the
// slice x[:,1:3], a write through the transpose, the failing view(12),
// reshape copying and contiguous().stride() == (3, 1).
func TestSeedStorageAndMetadata(t *testing.T) {
	led := NewLedger()
	x := coreMust(t)(coreMust(t)(arange(led, F32, 12)).Reshape(3, 4))
	coreLayout(t, "x", x, []int{3, 4}, []int{4, 1}, 0, true)

	tr := coreMust(t)(x.T())
	coreLayout(t, "x.t()", tr, []int{4, 3}, []int{1, 4}, 0, false)
	if !SharesStorage(x, tr) {
		t.Error("x.t() does not share x's storage")
	}

	s := coreMust(t)(x.Slice(1, 1, 3, 1)) // x[:, 1:3]
	coreLayout(t, "x[:,1:3]", s, []int{3, 2}, []int{4, 1}, 1, false)
	coreValues(t, "x[:,1:3]", s, []float32{1, 2, 5, 6, 9, 10})

	// t[0, 1] = 100.0 writes storage[0·1 + 1·4] = storage[4], which is x[1, 0].
	if err := tr.Set(100, 0, 1); err != nil {
		t.Fatal(err)
	}
	if v, _ := x.At(1, 0); v != 100 {
		t.Errorf("after t[0,1]=100, x[1,0] = %v, want 100", v)
	}

	_, err := tr.View(12)
	coreErrContains(t, "t.view(12)", err, "view",
		"view size is not compatible with input tensor's size and stride", "reshape", "[4, 3]", "[1, 4]")

	before := led.Stats()
	r := coreMust(t)(tr.Reshape(12))
	d := led.Stats().Sub(before)
	if SharesStorage(r, x) {
		t.Error("t.reshape(12) shares storage; PyTorch copies here")
	}
	if d.BytesCopied != 48 || d.CopyOps != 1 || d.Allocations != 1 {
		t.Errorf("t.reshape(12) accounting %v, want one 48-byte copy", d)
	}
	coreValues(t, "t.reshape(12)", r, []float32{0, 100, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11})

	c := coreMust(t)(tr.Contiguous())
	if !slices.Equal(c.Strides(), []int{3, 1}) {
		t.Errorf("t.contiguous().stride() = %v, want (3, 1)", c.Strides())
	}
}

// Seed 000 §3.2: y = x.transpose(0,1) of x = [[0,1,2],[3,4,5]] has shape
// [3,2] and strides [1,3]; y[0,1]=3, y[1,0]=1, y[2,1]=5.
func TestSeedTranspose2x3(t *testing.T) {
	x := coreArange(t, nil, 2, 3)
	y := coreMust(t)(x.Transpose(0, 1))
	coreLayout(t, "y", y, []int{3, 2}, []int{1, 3}, 0, false)
	for _, c := range []struct {
		i, j int
		want float32
	}{{0, 1, 3}, {1, 0, 1}, {2, 1, 5}} {
		if v, _ := y.At(c.i, c.j); v != c.want {
			t.Errorf("y[%d,%d] = %v, want %v", c.i, c.j, v, c.want)
		}
	}
	coreValues(t, "y", y, []float32{0, 3, 1, 4, 2, 5})
}

// Seed 000 §2.3: row-major [2,3] has strides [3,1]; the same matrix stored
// column-major has strides [1,2], so its memory reads A00 A10 A01 A11 A02 A12.
func TestSeedRowVsColumnMajor(t *testing.T) {
	if got := ContiguousStrides([]int{2, 3}); !slices.Equal(got, []int{3, 1}) {
		t.Errorf("row-major strides %v", got)
	}
	mem := coreMust(t)(arange(nil, F32, 6)) // memory slot k holds k
	colMajor := coreMust(t)(mem.AsStrided([]int{2, 3}, []int{1, 2}, 0))
	// A_ij lives at slot i + 2j: reading row-major gives the slots of A00 A01 A02 A10 A11 A12.
	coreValues(t, "column-major", colMajor, []float32{0, 2, 4, 1, 3, 5})
	if colMajor.IsContiguous() {
		t.Error("column-major [2,3] reported contiguous")
	}
}

// Seed 000 §2.5: the three hand-computed stride cases, plus the element
// each example index lands on.
func TestSeedStrideHandComputed(t *testing.T) {
	cases := []struct {
		shape, strides, idx []int
		linear              int
	}{
		{[]int{3, 4}, []int{4, 1}, []int{2, 3}, 11},
		{[]int{2, 3, 4}, []int{12, 4, 1}, []int{1, 2, 3}, 23},
		{[]int{2, 4096, 32, 128}, []int{16777216, 4096, 128, 1}, nil, 0},
	}
	for _, c := range cases {
		if got := ContiguousStrides(c.shape); !slices.Equal(got, c.strides) {
			t.Errorf("ContiguousStrides(%v) = %v, want %v", c.shape, got, c.strides)
		}
		m := coreMust(t)(Meta(F32, c.shape...))
		coreLayout(t, FormatInts(c.shape), m, c.shape, c.strides, 0, true)
		if c.idx != nil {
			x := coreArange(t, nil, c.shape...)
			if v, _ := x.At(c.idx...); int(v) != c.linear {
				t.Errorf("%v at %v = %v, want %d", c.shape, c.idx, v, c.linear)
			}
		}
	}
	// §2.5 case 3: one sample of [2,4096,32,128] is 16.77M elements, "about 32MB in FP16".
	m := coreMust(t)(Meta(F16, 1, 4096, 32, 128))
	if m.Nbytes() != 33554432 {
		t.Errorf("one FP16 sample is %d bytes, want 33554432 (32 MiB)", m.Nbytes())
	}
}

// Seed 000 §3.3 and §7.1: sub = x[1:, 1:3] has offset 5 (1·4 + 1·1),
// shape [2,2], strides [4,1], values 5 6 9 10, and its data pointer is the
// base plus 5·4 = 20 bytes (0x7f9a1000 → 0x7f9a1014).
func TestSeedSliceOffset5(t *testing.T) {
	led := NewLedger()
	x := coreArange(t, led, 3, 4)
	before := led.Stats()
	sub := coreMust(t)(coreMust(t)(x.Slice(0, 1, 3, 1)).Slice(1, 1, 3, 1))
	coreLayout(t, "x[1:,1:3]", sub, []int{2, 2}, []int{4, 1}, 5, false)
	coreValues(t, "x[1:,1:3]", sub, []float32{5, 6, 9, 10})
	if got := sub.Offset() * sub.DType().Size(); got != 0x14 {
		t.Errorf("byte offset %#x, want 0x14", got)
	}
	if !SharesStorage(x, sub) || sub.Storage().Len() != 12 {
		t.Error("slice does not share the 12-element storage")
	}
	// Open-ended slices clamp like Python: x[1:] is x.Slice(0, 1, 1<<62, 1).
	sub2 := coreMust(t)(coreMust(t)(x.Slice(0, 1, 1<<62, 1)).Slice(1, 1, 3, 1))
	coreLayout(t, "x[1:,1:3] (open end)", sub2, []int{2, 2}, []int{4, 1}, 5, false)
	if d := led.Stats().Sub(before); d.Allocations != 0 || d.BytesCopied != 0 {
		t.Errorf("slicing allocated or copied: %v", d)
	}
}

// Seed 000 §3.4 and interview question 3: expand sets the stride of the
// broadcast dim to 0 and allocates nothing.
func TestSeedExpandStrideZero(t *testing.T) {
	led := NewLedger()
	x := coreMust(t)(FromFloat32(led, F32, []float32{1, 2, 3}, 3))
	before := led.Stats()
	e := coreMust(t)(x.Expand(1000000, 3))
	coreLayout(t, "expand(1000000,3)", e, []int{1000000, 3}, []int{0, 1}, 0, false)
	if v, _ := e.At(999999, 1); v != 2 {
		t.Errorf("expanded[999999,1] = %v, want 2", v)
	}
	if d := led.Stats().Sub(before); d.Allocations != 0 || d.BytesAllocated != 0 {
		t.Errorf("expand allocated: %v", d)
	}
	// "a full copy would take 1000000·3·4 B ≈ 12 MB": that is what Nbytes reports.
	if e.Nbytes() != 12000000 || e.Storage().Bytes() != 12 {
		t.Errorf("Nbytes %d storage bytes %d, want 12000000 and 12", e.Nbytes(), e.Storage().Bytes())
	}
	row := coreMust(t)(Meta(F32, 1, 1024))
	coreLayout(t, "[1,1024].expand(10000,1024)", coreMust(t)(row.Expand(10000, 1024)), []int{10000, 1024}, []int{0, 1}, 0, false)
}

// Seed 000 §3.5: unsqueeze inserts a size-1 dim; squeeze drops it again.
func TestSeedSqueezeUnsqueeze(t *testing.T) {
	x := coreArange(t, nil, 2, 3)
	u := coreMust(t)(x.Unsqueeze(0))
	coreLayout(t, "unsqueeze(0)", u, []int{1, 2, 3}, []int{6, 3, 1}, 0, true)
	u2 := coreMust(t)(x.Unsqueeze(2))
	coreLayout(t, "unsqueeze(2)", u2, []int{2, 3, 1}, []int{3, 1, 1}, 0, true)
	s := coreMust(t)(u.Squeeze(0))
	coreLayout(t, "squeeze(0)", s, []int{2, 3}, []int{3, 1}, 0, true)
	coreValues(t, "squeeze(unsqueeze)", s, []float32{0, 1, 2, 3, 4, 5})
}

// Seed 000 §4.1: the contiguity table, row by row.
func TestSeedContiguityTable(t *testing.T) {
	x := coreMust(t)(Randn(nil, F32, 1, 2, 3))
	rows := []struct {
		op         string
		t          *Tensor
		shape      []int
		strides    []int
		contiguous bool
	}{
		{"torch.randn(2, 3)", x, []int{2, 3}, []int{3, 1}, true},
		{"x.transpose(0, 1)", coreMust(t)(x.Transpose(0, 1)), []int{3, 2}, []int{1, 3}, false},
		{"x[:, ::2]", coreMust(t)(x.Slice(1, 0, 3, 2)), []int{2, 2}, []int{3, 2}, false},
		{"x.expand(5, 2, 3)", coreMust(t)(x.Expand(5, 2, 3)), []int{5, 2, 3}, []int{0, 3, 1}, false},
		{"x.unsqueeze(0)", coreMust(t)(x.Unsqueeze(0)), []int{1, 2, 3}, []int{6, 3, 1}, true},
	}
	for _, r := range rows {
		coreLayout(t, r.op, r.t, r.shape, r.strides, 0, r.contiguous)
	}
	// The same predicate on raw layouts, including the degenerate rules:
	// size-1 dims are ignored, 0 or 1 elements are always contiguous.
	raw := []struct {
		shape, strides []int
		want           bool
	}{
		{[]int{}, []int{}, true},
		{[]int{1}, []int{7}, true},
		{[]int{1, 1}, []int{5, 9}, true},
		{[]int{0, 10}, []int{10, 1}, true},
		{[]int{0, 10}, []int{1, 7}, true},
		{[]int{3, 0}, []int{0, 0}, true},
		{[]int{2, 1, 3}, []int{3, 99, 1}, true},
		{[]int{2, 3}, []int{3, 2}, false},
		{[]int{3}, []int{2}, false},
		{[]int{2, 3}, []int{1, 2}, false},
	}
	for _, r := range raw {
		if got := isContiguous(r.shape, r.strides); got != r.want {
			t.Errorf("isContiguous(%v, %v) = %v, want %v", r.shape, r.strides, got, r.want)
		}
	}
}

// Seed 000 §4.2: x = randn(2,3); x.t().view(6) fails, x.view(6) works.
func TestSeedTransposeViewFails(t *testing.T) {
	x := coreMust(t)(Randn(nil, F32, 2, 2, 3))
	if _, err := x.View(6); err != nil {
		t.Errorf("contiguous x.view(6): %v", err)
	}
	xt := coreMust(t)(x.T())
	coreLayout(t, "x.t()", xt, []int{3, 2}, []int{1, 3}, 0, false)
	_, err := xt.View(6)
	coreErrContains(t, "x.t().view(6)", err, "view", "view size is not compatible with input tensor's size and stride", "[3, 2]", "[1, 3]")
	_, err = xt.View(-1)
	coreErrContains(t, "x.t().view(-1)", err, "view", "view size is not compatible")
}

// Seed 000 interview question 1: [2,3,4,5] has strides (60,20,5,1);
// permute(0,2,1,3) gives [2,4,3,5] with strides [60,5,20,1], not
// contiguous, and moves no bytes.
func TestSeedPermute2345(t *testing.T) {
	led := NewLedger()
	x := coreArange(t, led, 2, 3, 4, 5)
	coreLayout(t, "x", x, []int{2, 3, 4, 5}, []int{60, 20, 5, 1}, 0, true)
	before := led.Stats()
	p := coreMust(t)(x.Permute(0, 2, 1, 3))
	coreLayout(t, "permute(0,2,1,3)", p, []int{2, 4, 3, 5}, []int{60, 5, 20, 1}, 0, false)
	if d := led.Stats().Sub(before); d.Allocations != 0 || d.BytesCopied != 0 {
		t.Errorf("permute moved bytes: %v", d)
	}
	// p[a,b,c,d] = x[a,c,b,d] = 60a + 20c + 5b + d.
	if v, _ := p.At(1, 3, 2, 4); v != 60+40+15+4 {
		t.Errorf("p[1,3,2,4] = %v, want 119", v)
	}
}

// Seed 003 exercise: (2,3,4).permute(2,0,1) has strides (1,12,4), shape
// (4,2,3), is not contiguous, and view(4,6) succeeds because
// stride[1] == shape[2]·stride[2] (12 == 3·4).
func TestSeedPermuteThenView(t *testing.T) {
	for _, x := range []*Tensor{coreArange(t, nil, 2, 3, 4), coreMust(t)(Meta(F32, 2, 3, 4))} {
		p := coreMust(t)(x.Permute(2, 0, 1))
		coreLayout(t, "permute(2,0,1)", p, []int{4, 2, 3}, []int{1, 12, 4}, 0, false)
		v, err := p.View(4, 6)
		if err != nil {
			t.Fatalf("permute(2,0,1).view(4,6): %v", err)
		}
		coreLayout(t, "view(4,6)", v, []int{4, 6}, []int{1, 4}, 0, false)
		if !SharesStorage(v, x) {
			t.Error("view(4,6) does not share storage")
		}
		if !x.IsMeta() {
			// v[i, 3j'+k] = x[j', k, i] = 12j' + 4k + i.
			want := make([]float32, 0, 24)
			for i := range 4 {
				for j := range 2 {
					for k := range 3 {
						want = append(want, float32(12*j+4*k+i))
					}
				}
			}
			coreValues(t, "view(4,6)", v, want)
		}
	}
}

// Seed 000 "课后思考题" 1: torch.empty(0, 10) has strides (10, 1) and is
// contiguous.
func TestSeedEmptyZeroByTen(t *testing.T) {
	x := coreMust(t)(Empty(nil, F32, 0, 10))
	coreLayout(t, "empty(0,10)", x, []int{0, 10}, []int{10, 1}, 0, true)
	if x.Numel() != 0 || x.Nbytes() != 0 {
		t.Errorf("numel %d nbytes %d", x.Numel(), x.Nbytes())
	}
	v, err := x.View(10, 0)
	if err != nil {
		t.Fatalf("empty(0,10).view(10,0): %v", err)
	}
	coreLayout(t, "view(10,0)", v, []int{10, 0}, []int{1, 1}, 0, true)
}

// Seed 000 "课后思考题" 2: a [2,3,32,32] NCHW tensor stored channels-last
// has strides (3072,1,96,3): channels-last contiguous, not contiguous.
func TestSeedChannelsLast(t *testing.T) {
	st, err := ChannelsLastStrides([]int{2, 3, 32, 32})
	if err != nil || !slices.Equal(st, []int{3072, 1, 96, 3}) {
		t.Fatalf("ChannelsLastStrides = %v, %v; want (3072, 1, 96, 3)", st, err)
	}
	// Independent construction: an NHWC contiguous tensor viewed as NCHW.
	nhwc := coreMust(t)(Meta(F32, 2, 32, 32, 3))
	nchw := coreMust(t)(nhwc.Permute(0, 3, 1, 2))
	coreLayout(t, "NHWC.permute(0,3,1,2)", nchw, []int{2, 3, 32, 32}, []int{3072, 1, 96, 3}, 0, false)
	if !nchw.IsChannelsLast() {
		t.Error("channels-last tensor: IsChannelsLast false")
	}
	if !nchw.IsNonOverlappingAndDense() {
		t.Error("channels-last tensor is dense, IsNonOverlappingAndDense false")
	}
	ms := coreMust(t)(MetaStrided(F32, []int{2, 3, 32, 32}, st, 0))
	if !ms.IsChannelsLast() || ms.IsContiguous() {
		t.Errorf("MetaStrided channels-last: channels_last=%v contiguous=%v", ms.IsChannelsLast(), ms.IsContiguous())
	}
	plain := coreMust(t)(Meta(F32, 2, 3, 32, 32))
	if plain.IsChannelsLast() || !plain.IsContiguous() {
		t.Errorf("NCHW contiguous: channels_last=%v contiguous=%v", plain.IsChannelsLast(), plain.IsContiguous())
	}
	if _, err := ChannelsLastStrides([]int{2, 3, 4}); err == nil {
		t.Error("ChannelsLastStrides of a 3-D shape succeeded")
	}
	// A real channels-last tensor: element (n,c,h,w) is NHWC slot n·3072 + h·96 + w·3 + c.
	real := coreMust(t)(coreArange(t, nil, 2, 32, 32, 3).Permute(0, 3, 1, 2))
	if v, _ := real.At(1, 2, 5, 7); v != 3072+5*96+7*3+2 {
		t.Errorf("channels-last [1,2,5,7] = %v", v)
	}
}

// Seed 003 "expand 与 repeat": bias.expand(4,3) has stride (0,1) over 12
// bytes, bias.repeat(4,1) has stride (3,1) over 48 bytes; writing
// e[0,0]=5 changes bias[0] and e[3,0]; an in-place op on e fails with
// "unsupported operation"; arange(6).unfold(0,3,1) has stride (1,1).
func TestSeedExpandVsRepeat(t *testing.T) {
	led := NewLedger()
	bias := coreMust(t)(FromFloat32(led, F32, []float32{1, 2, 3}, 3))
	before := led.Stats()
	e := coreMust(t)(bias.Expand(4, 3))
	if d := led.Stats().Sub(before); d.Allocations != 0 || d.BytesCopied != 0 {
		t.Errorf("expand accounting %v", d)
	}
	before = led.Stats()
	r := coreMust(t)(bias.Repeat(4, 1))
	d := led.Stats().Sub(before)
	if d.Allocations != 1 || d.BytesAllocated != 48 || d.BytesCopied != 48 || d.CopyOps != 1 {
		t.Errorf("repeat accounting %v, want one 48-byte allocation and copy", d)
	}
	if !slices.Equal(e.Strides(), []int{0, 1}) || e.Storage().Bytes() != 12 {
		t.Errorf("expand: stride %v bytes %d, want (0,1) 12", e.Strides(), e.Storage().Bytes())
	}
	if !slices.Equal(r.Strides(), []int{3, 1}) || r.Storage().Bytes() != 48 {
		t.Errorf("repeat: stride %v bytes %d, want (3,1) 48", r.Strides(), r.Storage().Bytes())
	}
	coreValues(t, "repeat(4,1)", r, []float32{1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3})

	if err := e.Set(5, 0, 0); err != nil {
		t.Fatal(err)
	}
	coreValues(t, "bias after e[0,0]=5", bias, []float32{5, 2, 3})
	if v, _ := e.At(3, 0); v != 5 {
		t.Errorf("e[3,0] = %v, want 5", v)
	}
	if v, _ := r.At(3, 0); v != 1 {
		t.Errorf("repeat is a copy, but r[3,0] = %v after the write", v)
	}

	// e.add_(1): every in-place writer checks for overlap first.
	err := e.CheckNoOverlap("add_")
	coreErrContains(t, "e.add_(1)", err, "add_", "unsupported operation", "[4, 3]", "[0, 1]")
	ones := coreMust(t)(Full(led, F32, 1, 4, 3))
	coreErrContains(t, "e.copy_(ones)", e.CopyFrom(ones), "copy_", "unsupported operation")
	coreErrContains(t, "ScaleInPlace(e, 2)", ScaleInPlace(e, 2), "mul_", "unsupported operation")
	coreValues(t, "bias after refused copy_", bias, []float32{5, 2, 3})

	win := coreMust(t)(coreMust(t)(arange(led, F32, 6)).Unfold(0, 3, 1))
	coreLayout(t, "unfold(0,3,1)", win, []int{4, 3}, []int{1, 1}, 0, false)
	coreValues(t, "unfold(0,3,1)", win, []float32{0, 1, 2, 1, 2, 3, 2, 3, 4, 3, 4, 5})
	if !win.Overlaps() {
		t.Error("overlapping windows: Overlaps false")
	}
}

// Seed 003 GQA example: b=1, hq=8, hkv=2, s=16, d=64. repeat_interleave
// of K over the head dim makes 4× the bytes; the grouped broadcast view
// reads exactly the same elements with no copy.
func TestSeedGQARepeatInterleave(t *testing.T) {
	led := NewLedger()
	b, hq, hkv, s, d := 1, 8, 2, 16, 64
	g := hq / hkv
	k := coreMust(t)(Randn(led, F32, 0, b, hkv, s, d))
	kRep := coreMust(t)(k.RepeatInterleave(g, 1))
	if !slices.Equal(kRep.Shape(), []int{b, hq, s, d}) {
		t.Fatalf("k_rep shape %v", kRep.Shape())
	}
	if ratio := kRep.Storage().Bytes() / k.Storage().Bytes(); ratio != 4 {
		t.Errorf("k_rep is %dx k, want 4x", ratio)
	}
	// Head h of k_rep is head h/g of k.
	for h := range hq {
		for _, pos := range [][2]int{{0, 0}, {7, 33}, {15, 63}} {
			a, _ := kRep.At(0, h, pos[0], pos[1])
			w, _ := k.At(0, h/g, pos[0], pos[1])
			if a != w {
				t.Fatalf("k_rep[0,%d,%v] = %v, want k[0,%d,..] = %v", h, pos, a, h/g, w)
			}
		}
	}
	before := led.Stats()
	grouped := coreMust(t)(coreMust(t)(k.View(b, hkv, 1, s, d)).Expand(b, hkv, g, s, d))
	if dd := led.Stats().Sub(before); dd.BytesAllocated != 0 || dd.BytesCopied != 0 {
		t.Errorf("grouped broadcast allocated: %v", dd)
	}
	got := coreMust(t)(grouped.Reshape(b, hq, s, d)) // must copy: the group dim has stride 0
	want, _ := kRep.Float32s()
	coreValues(t, "broadcast grouped K", got, want)
}

// Seed 000 §6.1: the ten-row Multi-Head Attention trace for B=2, S=4096,
// H=32, D=128, on meta tensors (no 4 GiB allocations). Rows 5-7 are
// produced by matmul/softmax in the real model; here they are checked as
// fresh contiguous meta tensors of the table's shape.
func TestSeedMHATable(t *testing.T) {
	const B, S, H, D = 2, 4096, 32, 128
	type row struct {
		step       int
		op         string
		t          *Tensor
		shape      []int
		strides    []int
		contiguous bool
		shares     *Tensor // storage it must share, nil for a new storage
	}
	X := coreMust(t)(Meta(F32, B, S, H*D))
	q := coreMust(t)(X.View(B, S, H, D))
	qT := coreMust(t)(q.Transpose(1, 2))
	K := coreMust(t)(Meta(F32, B, S, H*D))
	kT := coreMust(t)(coreMust(t)(K.View(B, S, H, D)).Transpose(1, 2))
	scores := coreMust(t)(Meta(F32, B, H, S, S))
	attn := coreMust(t)(Meta(F32, B, H, S, S)) // softmax(scores): a new contiguous tensor
	out := coreMust(t)(Meta(F32, B, H, S, D))
	outT := coreMust(t)(out.Transpose(1, 2))
	outC := coreMust(t)(outT.Contiguous())
	outV := coreMust(t)(outC.View(B, S, H*D))
	rows := []row{
		{1, "X (QKV projection)", X, []int{2, 4096, 4096}, []int{16777216, 4096, 1}, true, nil},
		{2, "q = Q.view(2, 4096, 32, 128)", q, []int{2, 4096, 32, 128}, []int{16777216, 4096, 128, 1}, true, X},
		{3, "q = q.transpose(1, 2)", qT, []int{2, 32, 4096, 128}, []int{16777216, 128, 4096, 1}, false, X},
		{4, "k = K.view(...).transpose(1, 2)", kT, []int{2, 32, 4096, 128}, []int{16777216, 128, 4096, 1}, false, K},
		{5, "scores = q @ k.transpose(-2, -1)", scores, []int{2, 32, 4096, 4096}, []int{536870912, 16777216, 4096, 1}, true, nil},
		{6, "attn = softmax(scores, dim=-1)", attn, []int{2, 32, 4096, 4096}, []int{536870912, 16777216, 4096, 1}, true, nil},
		{7, "out = attn @ v", out, []int{2, 32, 4096, 128}, []int{16777216, 524288, 128, 1}, true, nil},
		{8, "out = out.transpose(1, 2)", outT, []int{2, 4096, 32, 128}, []int{16777216, 128, 524288, 1}, false, out},
		{9, "out = out.contiguous()", outC, []int{2, 4096, 32, 128}, []int{16777216, 4096, 128, 1}, true, nil},
		{10, "out = out.view(2, 4096, 4096)", outV, []int{2, 4096, 4096}, []int{16777216, 4096, 1}, true, outC},
	}
	for _, r := range rows {
		name := strings.Join([]string{"row", string(rune('0' + r.step%10)), r.op}, " ")
		coreLayout(t, name, r.t, r.shape, r.strides, 0, r.contiguous)
		if !r.t.IsMeta() {
			t.Errorf("%s: not a meta tensor", name)
		}
		if r.shares != nil && !SharesStorage(r.t, r.shares) {
			t.Errorf("%s: does not share storage (zero-copy row)", name)
		}
	}
	if SharesStorage(outC, out) {
		t.Error("row 9: contiguous() of the transposed output must be a new storage (the physical copy)")
	}
	// §6.3: viewing row 8 directly as [B, S, H·D] fails; reshape copies.
	_, err := outT.View(B, S, H*D)
	coreErrContains(t, "row 8 .view(2, 4096, 4096)", err, "view", "view size is not compatible", "[2, 4096, 32, 128]", "[16777216, 128, 524288, 1]")
	re := coreMust(t)(outT.Reshape(B, S, H*D))
	if SharesStorage(re, out) {
		t.Error("row 8 .reshape shares storage; it must copy")
	}
	// Row 5 in bytes: the [2,32,4096,4096] F32 scores are 4 GiB; as meta they cost nothing.
	if scores.Nbytes() != 4<<30 {
		t.Errorf("scores Nbytes %d, want 4 GiB", scores.Nbytes())
	}
	// §4.4: one [4, 4096, 8192] BF16 hidden state is 256 MB.
	hs := coreMust(t)(Meta(BF16, 4, 4096, 8192))
	if hs.Nbytes() != 268435456 {
		t.Errorf("hidden state %d bytes, want 268435456", hs.Nbytes())
	}
}

// Seed 000 §7.2: transposing and expanding a base tensor allocates
// nothing, and a write to base shows up through both views
// (transposed[0,0] and expanded[500,0,0] read 999).
func TestSeedZeroCopyWriteThrough(t *testing.T) {
	led := NewLedger()
	base := coreMust(t)(Randn(led, F32, 7, 64, 128))
	before := led.Stats()
	transposed := coreMust(t)(base.T())
	expanded := coreMust(t)(coreMust(t)(base.Unsqueeze(0)).Expand(1000, 64, 128))
	if d := led.Stats().Sub(before); d.Allocations != 0 || d.BytesAllocated != 0 || d.BytesCopied != 0 {
		t.Errorf("t()/expand accounting %v", d)
	}
	coreLayout(t, "expanded", expanded, []int{1000, 64, 128}, []int{0, 128, 1}, 0, false)
	if err := base.Set(999, 0, 0); err != nil {
		t.Fatal(err)
	}
	a, _ := transposed.At(0, 0)
	b, _ := expanded.At(500, 0, 0)
	if a != 999 || b != 999 {
		t.Errorf("transposed[0,0]=%v expanded[500,0,0]=%v, want 999", a, b)
	}
	// The seed's full-size shapes, as meta: 4096x8192 expanded 1000 times.
	m := coreMust(t)(coreMust(t)(coreMust(t)(Meta(F32, 4096, 8192)).Unsqueeze(0)).Expand(1000, 4096, 8192))
	coreLayout(t, "meta expand(1000,4096,8192)", m, []int{1000, 4096, 8192}, []int{0, 8192, 1}, 0, false)
}
