package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/x448/float16"
)

func TestBF16Rounding(t *testing.T) {
	cases := []struct {
		in   uint32
		want uint16
	}{
		{0x3f800000, 0x3f80}, // 1.0 exact
		{0x3f808000, 0x3f80}, // tie, kept bit 0: round down to even
		{0x3f818000, 0x3f82}, // tie, kept bit 1: round up to even
		{0x3f808001, 0x3f81}, // above the tie: up
		{0x3f807fff, 0x3f80}, // below the tie: down
		{0xbf808001, 0xbf81}, // sign is kept
		{0x7f800000, 0x7f80}, // +Inf
		{0xff800000, 0xff80}, // -Inf
		{0x7f7fffff, 0x7f80}, // max float32 rounds past max bf16 to +Inf
		{0x00000001, 0x0000}, // tiny subnormal rounds to zero
	}
	for _, c := range cases {
		if got := BF16FromFloat32(math.Float32frombits(c.in)); got != c.want {
			t.Errorf("BF16FromFloat32(%#08x) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
	for _, nan := range []uint32{0x7fc00000, 0x7f800001, 0xff800001, 0x7f80ffff} {
		got := BF16ToFloat32(BF16FromFloat32(math.Float32frombits(nan)))
		if !math.IsNaN(float64(got)) {
			t.Errorf("NaN %#08x became %v", nan, got)
		}
	}
	// Every bf16 value survives the round trip through float32 exactly.
	for b := 0; b < 1<<16; b++ {
		f := BF16ToFloat32(uint16(b))
		if math.IsNaN(float64(f)) {
			continue
		}
		if got := BF16FromFloat32(f); got != uint16(b) {
			t.Fatalf("bf16 %#04x -> %v -> %#04x", b, f, got)
		}
	}
}

// TestF16DecodeTable checks the package's binary16 decoder for all 65536
// patterns against github.com/x448/float16.
func TestF16DecodeTable(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		got := F16ToFloat32(uint16(h))
		want := float16.Frombits(uint16(h)).Float32()
		if math.IsNaN(float64(want)) {
			if !math.IsNaN(float64(got)) {
				t.Fatalf("%#04x: got %v, want NaN", h, got)
			}
			continue
		}
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("%#04x: got %v, want %v", h, got, want)
		}
	}
	if F16FromFloat32(1) != 0x3c00 || F16FromFloat32(-2) != 0xc000 || F16FromFloat32(1e6) != 0x7c00 {
		t.Fatal("F16FromFloat32 basic values")
	}
}

func TestQuantizeQ8_0(t *testing.T) {
	// Hand-computed: the group max 1.27 gives scale 0.01, so q = w/0.01.
	m, err := QuantizeQ8_0(1, 8, []float32{1.27, -0.64, 0.10, 0, 0, 0, 0, 0}, 4)
	if err != nil {
		t.Fatal(err)
	}
	wantQ := []int8{127, -64, 10, 0, 0, 0, 0, 0}
	for i, q := range wantQ {
		if m.Q[i] != q {
			t.Fatalf("Q = %v, want %v", m.Q, wantQ)
		}
	}
	if math.Abs(float64(m.Scales[0])-0.01) > 1e-9 || m.Scales[1] != 0 {
		t.Fatalf("scales %v, want [0.01 0]", m.Scales)
	}
	if m.Bytes() != 8+2*4 {
		t.Fatalf("Bytes = %d, want 16", m.Bytes())
	}

	// Random data: every non-zero group reaches ±127 and the reconstruction
	// error is at most half a step (plus float32 rounding).
	rng := rand.New(rand.NewPCG(11, 12))
	rows, cols, gs := 7, 96, 32
	data := make([]float32, rows*cols)
	randF32(rng, data)
	m, err = QuantizeQ8_0(rows, cols, data, gs)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	deq, err := m.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	for g := 0; g < rows*cols/gs; g++ {
		var amax float64
		var qmax int
		for k := g * gs; k < (g+1)*gs; k++ {
			amax = math.Max(amax, math.Abs(float64(data[k])))
			qmax = max(qmax, int(math.Abs(float64(m.Q[k]))))
		}
		if qmax != 127 {
			t.Fatalf("group %d: max |q| = %d, want 127", g, qmax)
		}
		step := amax / 127
		for k := g * gs; k < (g+1)*gs; k++ {
			if d := math.Abs(float64(deq[k]) - float64(data[k])); d > step/2*(1+1e-5)+1e-7 {
				t.Fatalf("value %d: %v dequantized to %v (step %v)", k, data[k], deq[k], step)
			}
		}
	}
	for _, bad := range []struct{ rows, cols, gs int }{{2, 10, 4}, {2, 8, 0}, {0, 8, 4}, {2, 8, -4}} {
		if _, err := QuantizeQ8_0(bad.rows, bad.cols, make([]float32, 100), bad.gs); err == nil {
			t.Errorf("QuantizeQ8_0%v accepted", bad)
		}
	}
	if _, err := QuantizeQ8_0(1, 4, []float32{1, float32(math.NaN()), 0, 0}, 4); err == nil {
		t.Error("NaN input accepted")
	}
	if _, err := QuantizeQ8_0(1, 4, []float32{1, 2}, 4); err == nil {
		t.Error("short input accepted")
	}
}

func TestMatrixBytesRowAndValidate(t *testing.T) {
	data := []float32{1, 2, 3, 4, 5, 6}
	f32, _ := NewF32(2, 3, data)
	bf, _ := ToBF16(2, 3, data)
	f16, _ := ToF16(2, 3, data)
	q, _ := QuantizeQ8_0(2, 3, data, 3)
	for _, c := range []struct {
		m     *Matrix
		bytes int64
	}{{f32, 24}, {bf, 12}, {f16, 12}, {q, 6 + 2*4}} {
		if got := c.m.Bytes(); got != c.bytes {
			t.Errorf("%v Bytes = %d, want %d", c.m.Format, got, c.bytes)
		}
		row := make([]float32, 3)
		if err := c.m.Row(1, row); err != nil {
			t.Fatal(err)
		}
		for j, v := range row {
			// 4, 5, 6 are exact in bf16/f16; Q8_0 is within half a step.
			if math.Abs(float64(v-data[3+j])) > 6.0/127/2+1e-6 {
				t.Errorf("%v row 1 = %v", c.m.Format, row)
			}
		}
		if err := c.m.Row(2, row); err == nil {
			t.Errorf("%v Row(2) accepted", c.m.Format)
		}
		if err := c.m.Row(0, row[:2]); err == nil {
			t.Errorf("%v short Row destination accepted", c.m.Format)
		}
	}
	if _, err := NewF32(2, 3, data[:5]); err == nil {
		t.Error("NewF32 with 5 values for 2x3 accepted")
	}
	if _, err := NewBF16(2, 3, make([]uint16, 5)); err == nil {
		t.Error("NewBF16 short accepted")
	}
	if _, err := NewF16(-1, 3, nil); err == nil {
		t.Error("NewF16 negative rows accepted")
	}
	if _, err := NewQ8_0(2, 4, make([]int8, 8), make([]float32, 1), 4); err == nil {
		t.Error("NewQ8_0 with too few scales accepted")
	}
	if m, err := NewQ8_0(2, 4, make([]int8, 8), make([]float32, 2), 4); err != nil || m.Bytes() != 16 {
		t.Errorf("NewQ8_0: %v, %v", m, err)
	}
	var nilM *Matrix
	if nilM.Validate() == nil || nilM.Bytes() != 0 {
		t.Error("nil matrix")
	}
}

func TestFormatString(t *testing.T) {
	if Format(99).String() != "Format(99)" {
		t.Error(Format(99).String())
	}
}
