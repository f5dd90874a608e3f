package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGGMLQ5DotOnRecordedBlocks: MatMul on the recorded rows of real
// llama-quantize output (ggml_oracle.json) agrees with the float64 dot
// product of gguf-py's dequantized weights and the quantized activations,
// for every implementation. For Q4_1 and Q5_1 ggml takes the offsets'
// share as m·s with s the activation block's d·Σq rounded to fp16, which
// the bound allows for.
func TestGGMLQ5DotOnRecordedBlocks(t *testing.T) {
	o := loadGGMLOracle(t)
	seen := map[string]bool{}
	withImpl(t, func(t *testing.T, impl Impl) {
		rng := rand.New(rand.NewPCG(31, 32))
		for _, r := range o.Dequant {
			typ, err := parseGGMLType(r.Type)
			if err != nil {
				t.Fatal(err)
			}
			if typ != TypeQ4_1 && typ != TypeQ5_0 && typ != TypeQ5_1 && typ != TypeQ5_K {
				continue
			}
			seen[r.Type] = true
			m, err := NewGGMLMatrix(typ, r.Rows, r.Cols, unhex(t, r.Raw))
			if err != nil {
				t.Fatal(err)
			}
			w := f32le(unhex(t, r.Values))
			const T = 3
			x := make([]float32, T*r.Cols)
			randF32(rng, x)
			out := make([]float32, T*r.Rows)
			if err := MatMul(nil, out, x, m, T); err != nil {
				t.Fatal(err)
			}
			var a ggmlActs
			a.prepare(nil, actKindFor(m), x, T, r.Cols)
			sd := 32 // values per activation scale
			if a.kind == actQ8_K {
				sd = 256
			}
			for tok := 0; tok < T; tok++ {
				for i := 0; i < r.Rows; i++ {
					var ref, mag, sErr float64
					for j := 0; j < r.Cols; j++ {
						k := tok*r.Cols + j
						xv := float64(a.q[k]) * float64(a.d[k/sd])
						ref += float64(w[i*r.Cols+j]) * xv
						mag += math.Abs(float64(w[i*r.Cols+j]) * xv)
					}
					if a.kind == actQ8_1 {
						// The offset m (= w − d·q) times s instead of times Σ x.
						for b := 0; b < r.Cols/32; b++ {
							k := tok*r.Cols/32 + b
							sErr += math.Abs(float64(a.s[k])) * 0x1p-11 * maxAbs64(w[i*r.Cols+32*b:i*r.Cols+32*b+32])
						}
					}
					got := float64(out[tok*r.Rows+i])
					if d := math.Abs(got - ref); d > tol(r.Cols, mag)+sErr+1e-6*mag {
						t.Errorf("%v %s row %d token %d: %g, float64 %g (|diff| %g)", impl, r.Type, i, tok, got, ref, d)
					}
				}
			}
		}
	})
	for _, typ := range []string{"Q4_1", "Q5_0", "Q5_1", "Q5_K"} {
		if !seen[typ] {
			t.Errorf("oracle has no %s record", typ)
		}
	}
}

func maxAbs64(x []float32) float64 {
	var m float64
	for _, v := range x {
		m = max(m, math.Abs(float64(v)))
	}
	return m
}

// TestQuantizeQ8_1Blocks: Q8_1 blocks are Q8_0's values and scales, and s
// is d·Σq within its fp16 rounding, with d the unrounded amax/127 (what
// ggml's x86 code multiplies by); NaN poisons s.
func TestQuantizeQ8_1Blocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	x := make([]float32, 256)
	randF32(rng, x)
	for j := range x[32:64] {
		x[32+j] = float32(j) // Σq far from 0
	}
	x[200] = float32(math.NaN())
	q, d, s := make([]int8, 256), make([]float32, 8), make([]float32, 8)
	quantizeQ8_1Blocks(q, d, s, x)
	q0, d0 := make([]int8, 256), make([]float32, 8)
	quantizeQ8_0Blocks(q0, d0, x)
	for b := 0; b < 8; b++ {
		if b == 6 {
			if !math.IsNaN(float64(s[b])) {
				t.Errorf("block with NaN: s = %g", s[b])
			}
			continue
		}
		var sum, amax float64
		for j := 32 * b; j < 32*b+32; j++ {
			if q[j] != q0[j] {
				t.Fatalf("q[%d] = %d, Q8_0 %d", j, q[j], q0[j])
			}
			sum += float64(q[j])
			amax = max(amax, math.Abs(float64(x[j])))
		}
		if d[b] != d0[b] {
			t.Errorf("block %d: d %g, Q8_0 %g", b, d[b], d0[b])
		}
		want := amax / 127 * sum
		if diff := math.Abs(float64(s[b]) - want); diff > math.Abs(want)*0x1p-11*1.001 {
			t.Errorf("block %d: s = %g, d·Σq = %g", b, s[b], want)
		}
	}
}
