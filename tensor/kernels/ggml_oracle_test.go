package kernels

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"testing"
)

// ggml_oracle.json is written by scripts/ggml-oracle/record.py: gguf-py's
// quants.py (llama.cpp c392e50, bit-exact with ggml's reference code) on
// whole rows of real tensors from the shared GGUF fixtures, with the raw
// block bytes, so these tests need neither the fixtures nor a GGUF reader.
type ggmlOracle struct {
	Dequant []struct {
		File, Tensor, Type string
		Rows, Cols         int
		Raw, Values        string
	}
	QuantizeQ8_0 []struct{ X, Blocks string } `json:"quantize_q8_0"`
	Halves       struct {
		X, BF16, F16 string
		BF16Values   string `json:"bf16_values"`
	}
}

func loadGGMLOracle(t *testing.T) *ggmlOracle {
	t.Helper()
	b, err := os.ReadFile("testdata/ggml_oracle.json")
	if err != nil {
		t.Fatal(err)
	}
	var o ggmlOracle
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatal(err)
	}
	if len(o.Dequant) == 0 || len(o.QuantizeQ8_0) == 0 {
		t.Fatal("oracle file has no records")
	}
	return &o
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func f32le(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// TestGGMLDequantMatchesGGUFPy: Row and Float32s reproduce gguf-py's
// dequantization bit for bit, for every type.
func TestGGMLDequantMatchesGGUFPy(t *testing.T) {
	o := loadGGMLOracle(t)
	seen := map[string]bool{}
	for _, r := range o.Dequant {
		typ, err := parseGGMLType(r.Type)
		if err != nil {
			t.Fatal(err)
		}
		raw := unhex(t, r.Raw)
		// Copy into a fresh buffer: the decoded slice is aligned, which
		// is what NewGGMLMatrix's zero-copy view of a mapped file sees.
		m, err := NewGGMLMatrix(typ, r.Rows, r.Cols, raw)
		if err != nil {
			t.Fatalf("%s %s: %v", r.File, r.Tensor, err)
		}
		if m.Bytes() != int64(len(raw)) {
			t.Errorf("%s: Bytes = %d, file holds %d", r.Type, m.Bytes(), len(raw))
		}
		got, err := m.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		want := f32le(unhex(t, r.Values))
		if len(got) != len(want) {
			t.Fatalf("%s: %d values, oracle %d", r.Type, len(got), len(want))
		}
		bad := 0
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				if bad < 5 {
					t.Errorf("%s %s %s value %d: got %g (%08x), gguf-py %g (%08x)", r.File, r.Tensor, r.Type, i,
						got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
				}
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d of %d values differ", r.Type, bad, len(want))
		}
		seen[r.Type] = true
	}
	for _, typ := range []string{"Q8_0", "Q4_0", "Q4_K", "Q6_K", "F16", "Q4_1", "Q5_0", "Q5_1", "Q5_K"} {
		if !seen[typ] {
			t.Errorf("oracle has no %s record", typ)
		}
	}
}

// TestQuantizeQ8_0MatchesGGUFPy compares the activation quantizer with
// gguf-py's Q8_0 quantize (the portable reference). The scales must match
// bit for bit. The quants may differ only where the reference rounds a
// tie away from zero and ggml's x86 path (which MatMul follows) rounds it
// to even, or where 127/amax and 1/(amax/127) round apart and x·id lands
// within that rounding of a half.
func TestQuantizeQ8_0MatchesGGUFPy(t *testing.T) {
	o := loadGGMLOracle(t)
	ties := 0
	for n, r := range o.QuantizeQ8_0 {
		x := f32le(unhex(t, r.X))
		blocks := unhex(t, r.Blocks)
		nb := len(x) / 32
		if len(blocks) != nb*34 {
			t.Fatalf("record %d: %d block bytes for %d values", n, len(blocks), len(x))
		}
		q := make([]int8, len(x))
		d := make([]float32, nb)
		quantizeQ8_0Blocks(q, d, x)
		for b := 0; b < nb; b++ {
			blk := blocks[b*34:]
			if want := fp16(blk); math.Float32bits(d[b]) != math.Float32bits(want) {
				t.Errorf("record %d block %d: scale %g, gguf-py %g", n, b, d[b], want)
			}
			amax := float32(0)
			for _, v := range x[b*32 : b*32+32] {
				amax = max(amax, abs32(v))
			}
			for j := 0; j < 32; j++ {
				want := int8(blk[2+j])
				got := q[b*32+j]
				if got == want {
					continue
				}
				v := float64(x[b*32+j]) * 127 / float64(amax)
				frac := math.Abs(v - math.Trunc(v))
				if got-want != 1 && want-got != 1 || math.Abs(frac-0.5) > 1e-5 {
					t.Errorf("record %d value %d (x=%g): q %d, gguf-py %d (x·127/amax = %.9f is no tie)", n, b*32+j, x[b*32+j], got, want, v)
				}
				ties++
			}
		}
	}
	// The tie record holds 0.5, 1.5, -2.5, -0.5, 3.5, 126.5 at id = 1:
	// ties to even moves 0.5, -2.5, -0.5 and 126.5 by one (1.5 and 3.5
	// round the same both ways), so the difference is really exercised.
	if ties < 4 {
		t.Errorf("only %d tie differences seen; the tie record should give at least 4", ties)
	}
}

// TestHalfRoundingMatchesGGUFPy: the F16 and BF16 roundings MatMul applies
// to activations for ggml F16 and BF16 weights give numpy's float16 cast
// and gguf-py's BF16 (ggml_compute_fp32_to_bf16) bit for bit, ties,
// subnormals, overflow, NaN and Inf included; and a BF16 tensor of those
// bytes dequantizes as gguf-py does.
func TestHalfRoundingMatchesGGUFPy(t *testing.T) {
	h := loadGGMLOracle(t).Halves
	x := f32le(unhex(t, h.X))
	bf, f16 := unhex(t, h.BF16), unhex(t, h.F16)
	if len(x) < 200 || len(bf) != 2*len(x) || len(f16) != 2*len(x) {
		t.Fatalf("oracle halves: %d values, %d bf16 bytes, %d f16 bytes", len(x), len(bf), len(f16))
	}
	for i, v := range x {
		if got, want := BF16FromFloat32(v), binary.LittleEndian.Uint16(bf[2*i:]); got != want {
			t.Errorf("BF16(%g) = %#04x, gguf-py %#04x", v, got, want)
		}
		if got, want := F16FromFloat32(v), binary.LittleEndian.Uint16(f16[2*i:]); got != want {
			t.Errorf("F16(%g) = %#04x, numpy %#04x", v, got, want)
		}
	}
	m, err := NewGGMLMatrix(TypeBF16, 1, len(x), bf)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := m.Float32s()
	for i, want := range f32le(unhex(t, h.BF16Values)) {
		if math.Float32bits(got[i]) != math.Float32bits(want) {
			t.Errorf("BF16 value %d: %g, gguf-py %g", i, got[i], want)
		}
	}
}
