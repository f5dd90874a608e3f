package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// FuzzMatMul feeds MatMul arbitrary shapes, group sizes, slice lengths
// (including too-short ones) and offsets. The assembly kernels read raw
// memory, so the property is: MatMul either returns an error or matches the
// float64 reference, and never panics or reads out of bounds (the slices
// are exact-length windows, so an over-read would hit the race/bounds
// checks in the Go tail or corrupt the canary).
func FuzzMatMul(f *testing.F) {
	f.Add(uint8(0), 5, 17, 3, 0, 0, 0, 0, uint64(1))
	f.Add(uint8(1), 9, 33, 5, 0, 0, 0, 0, uint64(2))
	f.Add(uint8(2), 8, 16, 4, 0, 1, -1, 0, uint64(3))
	f.Add(uint8(3), 13, 64, 4, 32, 0, 0, -1, uint64(4))
	f.Add(uint8(3), 3, 24, 2, 8, 0, 0, 0, uint64(5))
	f.Add(uint8(7), 3, 24, 2, 8, 0, 0, 0, uint64(6))
	f.Add(uint8(0), 0, 24, 2, 8, 0, 0, 0, uint64(7))
	f.Fuzz(func(t *testing.T, format uint8, rows, cols, T, group, dw, dx, dout int, seed uint64) {
		if rows > 40 || cols > 200 || T > 9 || rows < -2 || cols < -2 || T < -2 || group > 300 || group < -2 {
			return
		}
		dw, dx, dout = clampDelta(dw), clampDelta(dx), clampDelta(dout)
		rng := rand.New(rand.NewPCG(seed, 99))
		fmtv := Format(format % 5) // 4 is GGMLQ8_0, invalid without Blocks
		nw := max(rows*cols+dw, 0)
		m := &Matrix{Format: fmtv, Rows: rows, Cols: cols, GroupSize: group}
		switch fmtv {
		case F32:
			m.F32 = make([]float32, nw)
			randF32(rng, m.F32)
		case BF16, F16:
			m.U16 = make([]uint16, nw)
			for i := range m.U16 {
				v := float32(rng.NormFloat64())
				if fmtv == BF16 {
					m.U16[i] = BF16FromFloat32(v)
				} else {
					m.U16[i] = F16FromFloat32(v)
				}
			}
		case Q8_0:
			m.Q = make([]int8, nw)
			for i := range m.Q {
				m.Q[i] = int8(rng.IntN(255) - 127)
			}
			ns := 0
			if group > 0 {
				ns = max(rows*cols/group+dw, 0)
			}
			m.Scales = make([]float32, ns)
			for i := range m.Scales {
				m.Scales[i] = float32(rng.Float64()) / 64
			}
		}
		x := make([]float32, max(T*cols+dx, 0))
		randF32(rng, x)
		out := make([]float32, max(T*rows+dout, 0)+1)
		out = out[:len(out)-1] // one hidden canary slot past the end
		canary := out[:cap(out)]
		canary[len(canary)-1] = 777
		err := MatMul(nil, out, x, m, T)
		if canary[len(canary)-1] != 777 {
			t.Fatal("MatMul wrote past len(out)")
		}
		if err != nil {
			return
		}
		if T <= 0 {
			return
		}
		ref, mag := refMatMul(m, x, T)
		for k := range ref {
			if d := math.Abs(float64(out[k]) - ref[k]); !(d <= tol(cols, mag[k])) {
				t.Fatalf("out[%d] = %v, want %v", k, out[k], ref[k])
			}
		}
	})
}

func clampDelta(d int) int {
	if d > 2 || d < -2 {
		return 0
	}
	return d
}
