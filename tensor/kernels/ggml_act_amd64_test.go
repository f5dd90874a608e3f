//go:build amd64

package kernels

import (
	"math"
	"math/rand"
	"testing"
)

// The AVX2 Q8_0 activation quantization has the Go reference's bits
// (quants, scales, lane corrections) on random blocks of many
// magnitudes, and on the edge cases: x·id exactly half-way between
// integers (ties to even), blocks of zeros, of tiny values whose 127/amax
// overflows, of subnormals, of values near the fp16 limits, and blocks
// holding NaN or ±Inf.
func TestQuantizeQ8_0ActsAVX2MatchesGo(t *testing.T) {
	if !available[ImplAVX2] {
		t.Skip("no AVX2 here")
	}
	rng := rand.New(rand.NewSource(7))
	blocks := [][]float32{}
	for _, scale := range []float32{1e-30, 1e-6, 0.01, 1, 3.3, 1000, 1e6, 1e20} {
		for i := 0; i < 20; i++ {
			b := make([]float32, 32)
			for j := range b {
				b[j] = float32(rng.NormFloat64()) * scale
			}
			blocks = append(blocks, b)
		}
	}
	// x·id = k + 0.5 exactly: amax 127 makes id 1.
	ties := make([]float32, 32)
	for j := range ties {
		ties[j] = float32(j) - 15.5
	}
	ties[31] = 127
	blocks = append(blocks, ties)
	special := []float32{0, float32(math.Copysign(0, -1)), 1e-38, 1e-45, 3e-37, 4e-37, 65504 * 127, 1e38,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	for _, v := range special {
		b := make([]float32, 32)
		for j := range b {
			b[j] = v
			if j%3 == 1 {
				b[j] = v / 2
			}
		}
		blocks = append(blocks, b)
		mixed := append([]float32(nil), blocks[rng.Intn(160)]...)
		mixed[rng.Intn(32)] = v
		blocks = append(blocks, mixed)
	}
	var x []float32
	for _, b := range blocks {
		x = append(x, b...)
	}
	nb := len(blocks)
	for _, lanes := range []bool{false, true} {
		wantQ, gotQ := make([]int8, 32*nb), make([]int8, 32*nb)
		wantD, gotD := make([]float32, nb), make([]float32, nb)
		var wantC, wantC8, gotC, gotC8 []int32
		if lanes {
			wantC, wantC8 = make([]int32, 8*nb), make([]int32, 8*nb)
			gotC, gotC8 = make([]int32, 8*nb), make([]int32, 8*nb)
		}
		quantizeQ8_0ActsGo(wantQ, wantD, x, wantC, wantC8)
		quantizeQ8_0ActsAVX2(gotQ, gotD, x, gotC, gotC8)
		for b := 0; b < nb; b++ {
			if math.Float32bits(gotD[b]) != math.Float32bits(wantD[b]) {
				t.Fatalf("lanes=%v block %d (%v…): d = %v, want %v", lanes, b, x[32*b:32*b+4], gotD[b], wantD[b])
			}
		}
		for i := range wantQ {
			if gotQ[i] != wantQ[i] {
				t.Fatalf("lanes=%v q[%d] (x = %v, block d = %v) = %d, want %d", lanes, i, x[i], wantD[i/32], gotQ[i], wantQ[i])
			}
		}
		for i := range wantC {
			if gotC[i] != wantC[i] || gotC8[i] != wantC8[i] {
				t.Fatalf("lane correction %d = %d, %d, want %d, %d", i, gotC[i], gotC8[i], wantC[i], wantC8[i])
			}
		}
	}
}
