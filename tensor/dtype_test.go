package tensor

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
)

// refBF16 rounds f to bfloat16 bits by the IEEE rule, computed with
// float64 distances: take the two bfloat16 values around f (truncation and
// the next one away from zero), pick the nearer, and on a tie the one
// with an even last mantissa bit. Past the largest finite value the next
// value up is 2^128, which rounds to infinity.
func refBF16(f float32) uint16 {
	u := math.Float32bits(f)
	lo := uint16(u >> 16)
	if u&0xffff == 0 {
		return lo // exactly representable
	}
	loVal := math.Abs(float64(BF16Float(lo)))
	var hiVal float64
	hi := lo + 1
	if hi&0x7fff == 0x7f80 {
		hiVal = math.Ldexp(1, 128)
	} else {
		hiVal = math.Abs(float64(BF16Float(hi)))
	}
	x := math.Abs(float64(f))
	dl, dh := x-loVal, hiVal-x
	switch {
	case dl < dh:
		return lo
	case dh < dl:
		return hi
	case lo&1 == 0:
		return lo
	}
	return hi
}

func TestBF16RoundsToNearestEven(t *testing.T) {
	// Hand-picked ties: 1 + 2^-8 lies halfway between 1 (0x3f80, even) and
	// 1 + 2^-7 (0x3f81): even wins, so it rounds down. 1 + 3·2^-8 lies
	// halfway between 0x3f81 (odd) and 0x3f82 (even): it rounds up.
	ties := []struct {
		in   uint32
		want uint16
	}{
		{0x3f808000, 0x3f80},
		{0x3f818000, 0x3f82},
		{0xbf808000, 0xbf80}, // negative: same rule on the magnitude
		{0xbf818000, 0xbf82},
		{0x3f808001, 0x3f81}, // just above the tie rounds up
		{0x3f807fff, 0x3f80}, // just below rounds down
		{0x7f7f8000, 0x7f80}, // halfway past the largest finite: ties to even = +Inf
		{0x7f7f7fff, 0x7f7f},
		{0x00008000, 0x0000}, // subnormal tie to even zero
		{0x00018000, 0x0002},
	}
	for _, c := range ties {
		f := math.Float32frombits(c.in)
		if got := BF16Bits(f); got != c.want {
			t.Errorf("BF16Bits(%#08x) = %#04x, want %#04x", c.in, got, c.want)
		}
		if got := refBF16(f); got != c.want {
			t.Errorf("reference BF16(%#08x) = %#04x, want %#04x (reference is wrong)", c.in, got, c.want)
		}
	}
	// Random finite bit patterns against the float64 reference.
	r := rand.New(rand.NewPCG(16, 16))
	for range 200000 {
		u := r.Uint32()
		if u&0x7f800000 == 0x7f800000 {
			continue
		}
		f := math.Float32frombits(u)
		if got, want := BF16Bits(f), refBF16(f); got != want {
			t.Fatalf("BF16Bits(%#08x) = %#04x, reference %#04x", u, got, want)
		}
	}
	// Every bfloat16 value survives the round trip exactly.
	for b := range 1 << 16 {
		h := uint16(b)
		f := BF16Float(h)
		if f != f {
			continue
		}
		if got := BF16Bits(f); got != h {
			t.Fatalf("BF16Bits(BF16Float(%#04x)) = %#04x", h, got)
		}
	}
}

func TestBF16SpecialValues(t *testing.T) {
	inf := float32(math.Inf(1))
	for _, c := range []struct {
		f    float32
		want uint16
	}{
		{inf, 0x7f80}, {-inf, 0xff80}, {0, 0x0000}, {float32(math.Copysign(0, -1)), 0x8000}, {1, 0x3f80}, {-2, 0xc000},
	} {
		if got := BF16Bits(c.f); got != c.want {
			t.Errorf("BF16Bits(%v) = %#04x, want %#04x", c.f, got, c.want)
		}
	}
	// Every NaN stays a NaN with its sign, including payloads that live only
	// in the low 16 bits (plain truncation would turn those into ±Inf).
	for _, u := range []uint32{0x7f800001, 0xff800001, 0x7fc00000, 0x7fffffff, 0xffc00000, 0x7f80ffff, 0x7fbf0000} {
		b := BF16Bits(math.Float32frombits(u))
		back := BF16Float(b)
		if back == back {
			t.Errorf("BF16Bits(NaN %#08x) = %#04x is not a NaN", u, b)
		}
		if (b>>15 == 1) != (u>>31 == 1) {
			t.Errorf("BF16Bits(NaN %#08x) = %#04x lost the sign", u, b)
		}
	}
}

// f16Sorted lists every finite non-negative binary16 value in increasing
// order with its bits, for the nearest-value reference.
func f16Sorted() ([]float64, []uint16) {
	var vals []float64
	var bits []uint16
	for b := range 0x7c00 { // +0 … largest finite
		vals = append(vals, float64(F16Float(uint16(b))))
		bits = append(bits, uint16(b))
	}
	return vals, bits
}

func TestF16RoundTripAndRounding(t *testing.T) {
	// Every binary16 value converts to float32 and back unchanged; NaNs
	// stay NaN.
	for b := range 1 << 16 {
		h := uint16(b)
		f := F16Float(h)
		if f != f {
			if g := F16Float(F16Bits(f)); g == g {
				t.Fatalf("F16 NaN %#04x came back as %v", h, g)
			}
			continue
		}
		if got := F16Bits(f); got != h {
			t.Fatalf("F16Bits(F16Float(%#04x) = %v) = %#04x", h, f, got)
		}
	}
	if F16Float(0x3c00) != 1 || F16Float(0x7bff) != 65504 || F16Float(0x0001) != float32(math.Ldexp(1, -24)) {
		t.Error("F16Float of 1, max, smallest subnormal")
	}
	// Random float32 values in range round to the nearest binary16, ties to even.
	vals, bits := f16Sorted()
	r := rand.New(rand.NewPCG(17, 17))
	for range 100000 {
		f := float32(math.Ldexp(r.Float64(), r.IntN(40)-26)) // subnormals … 2^14
		x := float64(f)
		i := sort.SearchFloat64s(vals, x)
		var want uint16
		switch {
		case i < len(vals) && vals[i] == x:
			want = bits[i]
		case i == len(vals):
			continue
		default:
			dl, dh := x-vals[i-1], vals[i]-x
			switch {
			case dl < dh:
				want = bits[i-1]
			case dh < dl:
				want = bits[i]
			case bits[i-1]&1 == 0:
				want = bits[i-1]
			default:
				want = bits[i]
			}
		}
		if got := F16Bits(f); got != want {
			t.Fatalf("F16Bits(%v) = %#04x, nearest-even %#04x", f, got, want)
		}
	}
	// Overflow goes to infinity, as IEEE rounding demands.
	if F16Bits(65520) != 0x7c00 || F16Bits(65519) != 0x7bff || F16Bits(-1e6) != 0xfc00 {
		t.Errorf("F16 overflow: %#04x %#04x %#04x", F16Bits(65520), F16Bits(65519), F16Bits(-1e6))
	}
}

func TestDTypeNamesAndSizes(t *testing.T) {
	for _, c := range []struct {
		d    DType
		name string
		size int
		alts []string
	}{
		{F32, "float32", 4, []string{"f32", "FP32", " float "}},
		{F16, "float16", 2, []string{"f16", "half", "fp16"}},
		{BF16, "bfloat16", 2, []string{"bf16", "BFloat16"}},
	} {
		if c.d.String() != c.name || c.d.Size() != c.size {
			t.Errorf("%d: %q size %d", c.d, c.d.String(), c.d.Size())
		}
		for _, a := range append(c.alts, c.name) {
			if d, err := ParseDType(a); err != nil || d != c.d {
				t.Errorf("ParseDType(%q) = %v, %v", a, d, err)
			}
		}
	}
	if DType(77).String() != "DType(77)" {
		t.Errorf("unknown dtype prints %q", DType(77).String())
	}
}

// TestHalfTensorsThroughViews runs F16 and BF16 tensors through the view
// ops and Contiguous: layouts are dtype-independent, bytes halve, and the
// elements read back are the float32 inputs rounded once.
func TestHalfTensorsThroughViews(t *testing.T) {
	for _, dt := range []DType{F16, BF16} {
		led := NewLedger()
		x := coreMust(t)(coreMust(t)(arange(led, dt, 24)).View(2, 3, 4))
		if x.Nbytes() != 48 || x.Storage().Bytes() != 48 || x.DType() != dt {
			t.Errorf("%v: nbytes %d", dt, x.Nbytes())
		}
		p := coreMust(t)(x.Permute(2, 0, 1))
		coreLayout(t, dt.String()+" permute", p, []int{4, 2, 3}, []int{1, 12, 4}, 0, false)
		v := coreMust(t)(p.View(4, 6))
		before := led.Stats()
		c := coreMust(t)(p.Contiguous())
		if d := led.Stats().Sub(before); d.BytesCopied != 48 || d.CopyOps != 1 {
			t.Errorf("%v: contiguous copied %v, want 48 bytes", dt, d)
		}
		want := make([]float32, 0, 24)
		for i := range 4 {
			for j := range 2 {
				for k := range 3 {
					want = append(want, float32(12*j+4*k+i))
				}
			}
		}
		coreValues(t, dt.String()+" contiguous", c, want)
		coreValues(t, dt.String()+" view", v, want)
		// Writes round once into the storage dtype and show through every view.
		if err := p.Set(0.1, 1, 0, 0); err != nil {
			t.Fatal(err)
		}
		got, _ := x.At(0, 0, 1)
		if got != roundTo(dt, 0.1) || got == 0.1 {
			t.Errorf("%v: stored 0.1 reads %v, want %v", dt, got, roundTo(dt, 0.1))
		}
		raw := x.Storage().Uint16s()[1]
		if raw != dt.toBits(0.1) || x.Storage().Load(1) != got {
			t.Errorf("%v: storage bits %#04x", dt, raw)
		}
		x.Storage().Store(2, 3.5)
		if g, _ := p.At(2, 0, 0); g != 3.5 {
			t.Errorf("%v: Store(2, 3.5) reads %v through the permute", dt, g)
		}
		// Conversions: F32 → half rounds each element once; half → F32 is exact.
		f := coreMust(t)(Randn(led, F32, 9, 5, 7))
		h := coreMust(t)(coreMust(t)(f.T()).To(dt))
		back := coreMust(t)(h.To(F32))
		fv, _ := coreMust(t)(f.T()).Float32s()
		bv, _ := back.Float32s()
		for i := range fv {
			if bv[i] != roundTo(dt, fv[i]) {
				t.Fatalf("%v: element %d %v -> %v, want %v", dt, i, fv[i], bv[i], roundTo(dt, fv[i]))
			}
		}
		if slices.Equal(fv, bv) {
			t.Errorf("%v: no element changed in a half round trip of random normals", dt)
		}
	}
}

// TestInt32TokenHistory: an I32 token history holds exact ids, and
// unfold(0, n, 1) is a zero-copy view of its n-grams (what speculative
// decoding's n-gram lookup reads); Contiguous copies them exactly.
func TestInt32TokenHistory(t *testing.T) {
	led := NewLedger()
	ids := []int32{1, 16777217, 3, -4, 5, 2147483647}
	h := fromInt32(t, led, ids, 6)
	if h.DType() != I32 || h.Nbytes() != 24 || led.Stats().BytesAllocated != 24 {
		t.Fatalf("history %v, %d bytes, ledger %d", h, h.Nbytes(), led.Stats().BytesAllocated)
	}
	w := Must(h.Unfold(0, 3, 1))
	if !SharesStorage(w, h) || FormatInts(w.Shape()) != "[4, 3]" || FormatInts(w.Strides()) != "[1, 1]" {
		t.Fatalf("windows %v", w)
	}
	got, err := w.Int32s()
	want := []int32{1, 16777217, 3, 16777217, 3, -4, 3, -4, 5, -4, 5, 2147483647}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("windows = %v, %v", got, err)
	}
	c := Must(w.Contiguous())
	if SharesStorage(c, h) || !slices.Equal(c.Storage().Int32s(), want) {
		t.Fatalf("contiguous copy %v", c.Storage().Int32s())
	}
	wrapped := Must(WrapInt32(nil, ids, 2, 3))
	if v, _ := wrapped.At(1, 2); v != 2147483648 { // float32 rounding of 2^31-1
		t.Fatalf("At = %v", v)
	}
	if _, err := Empty(nil, I64, 2); err == nil || !strings.Contains(err.Error(), "meta tensors only") {
		t.Fatalf("int64 with data: %v", err)
	}
	if m, err := Meta(I64, 2, 3); err != nil || m.Nbytes() != 48 {
		t.Fatalf("int64 meta: %v %v", m, err)
	}
	if _, err := h.Float32s(); err != nil {
		t.Fatal(err)
	}
}
