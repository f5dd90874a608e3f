package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// FuzzGGMLMatrix feeds NewGGMLMatrix arbitrary types, shapes and byte
// lengths, and the matrices it accepts arbitrary block bytes (any scale
// bits, NaN and Inf included). Property: NewGGMLMatrix returns an error
// or a matrix whose Float32s and MatMul run without panicking, and whose
// finite MatMul outputs match the float64 oracle.
func FuzzGGMLMatrix(f *testing.F) {
	f.Add(uint8(0), 3, 256, 0, uint64(1))
	f.Add(uint8(1), 2, 64, 0, uint64(2))
	f.Add(uint8(2), 5, 512, -1, uint64(3))
	f.Add(uint8(3), 1, 256, 1, uint64(4))
	f.Add(uint8(4), 4, 5, 0, uint64(5))
	f.Add(uint8(7), 1, 32, 0, uint64(6))
	f.Fuzz(func(t *testing.T, ti uint8, rows, cols, delta int, seed uint64) {
		if rows > 12 || cols > 1024 || rows < -2 || cols < -2 || delta < -40 || delta > 40 {
			return
		}
		types := []GGMLType{TypeQ8_0, TypeQ4_0, TypeQ4_K, TypeQ6_K, TypeF16, TypeBF16, TypeF32, GGMLType(11), GGMLType(200),
			TypeQ4_1, TypeQ5_0, TypeQ5_1, TypeQ5_K}
		typ := types[int(ti)%len(types)]
		n := delta
		if rb, err := typ.RowBytes(cols); err == nil && rows > 0 {
			n += rows * rb
		}
		rng := rand.New(rand.NewPCG(seed, 7))
		data := make([]byte, max(n, 0))
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		m, err := NewGGMLMatrix(typ, rows, cols, data)
		if err != nil {
			return
		}
		if _, err := m.Float32s(); err != nil {
			t.Fatalf("Float32s of an accepted matrix: %v", err)
		}
		x := make([]float32, 2*cols)
		randF32(rng, x)
		out := make([]float32, 2*rows)
		if err := MatMul(nil, out, x, m, 2); err != nil {
			t.Fatalf("MatMul of an accepted matrix: %v", err)
		}
		if _, ok := m.Format.ggmlBlocks(); !ok {
			return
		}
		ref, mag := refGGMLMatMul(m, x, 2)
		for k, v := range out {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) || math.IsNaN(ref[k]) || math.IsInf(mag[k], 0) {
				continue
			}
			if d := math.Abs(float64(v) - ref[k]); d > tol(cols, mag[k]) {
				t.Fatalf("%v (%d, %d) out[%d] = %g, float64 %g", typ, rows, cols, k, v, ref[k])
			}
		}
	})
}
