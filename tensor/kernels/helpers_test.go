package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/x448/float16"
)

// withImpl runs f once per implementation this CPU supports, restoring the
// previous choice afterwards.
func withImpl(t *testing.T, f func(t *testing.T, impl Impl)) {
	t.Helper()
	prev := CurrentImpl()
	defer func() { _ = SetImpl(prev) }()
	for _, impl := range Available() {
		if err := SetImpl(impl); err != nil {
			t.Fatal(err)
		}
		t.Run(impl.String(), func(t *testing.T) { f(t, impl) })
	}
}

// offsetF32 returns a zeroed slice of n values that starts off elements into
// a larger allocation, so SIMD loads see unaligned addresses.
func offsetF32(n, off int) []float32 { return make([]float32, n+off+3)[off : off+n] }

// randF32 fills s with standard normal values and returns it.
func randF32(rng *rand.Rand, s []float32) []float32 {
	for i := range s {
		s[i] = float32(rng.NormFloat64())
	}
	return s
}

// makeMatrix builds a rows×cols matrix of format f from random normal
// values, with its storage starting off elements into a larger slice.
func makeMatrix(t testing.TB, rng *rand.Rand, f Format, rows, cols, group, off int) *Matrix {
	t.Helper()
	data := make([]float32, rows*cols)
	randF32(rng, data)
	var m *Matrix
	var err error
	switch f {
	case F32:
		d := offsetF32(rows*cols, off)
		copy(d, data)
		m, err = NewF32(rows, cols, d)
	case BF16:
		m, err = ToBF16(rows, cols, data)
		if err == nil {
			u := make([]uint16, rows*cols+off)[off:]
			copy(u, m.U16)
			m.U16 = u
		}
	case F16:
		m, err = ToF16(rows, cols, data)
		if err == nil {
			u := make([]uint16, rows*cols+off)[off:]
			copy(u, m.U16)
			m.U16 = u
		}
	case Q8_0:
		m, err = QuantizeQ8_0(rows, cols, data, group)
		if err == nil {
			q := make([]int8, rows*cols+off)[off:]
			copy(q, m.Q)
			m.Q = q
			s := make([]float32, len(m.Scales)+off)[off:]
			copy(s, m.Scales)
			m.Scales = s
		}
	}
	if err != nil {
		t.Fatalf("make %v %dx%d: %v", f, rows, cols, err)
	}
	return m
}

// deq64 is weight (i, j) decoded independently of the package's decoders:
// float64 arithmetic on the raw bits.
func deq64(m *Matrix, i, j int) float64 {
	k := i*m.Cols + j
	switch m.Format {
	case F32:
		return float64(m.F32[k])
	case BF16:
		return float64(math.Float32frombits(uint32(m.U16[k]) << 16))
	case F16:
		h := m.U16[k]
		sign := 1.0
		if h&0x8000 != 0 {
			sign = -1
		}
		e := int(h>>10) & 0x1f
		f := float64(h & 0x3ff)
		if e == 0 {
			return sign * f * math.Pow(2, -24)
		}
		return sign * (1 + f/1024) * math.Pow(2, float64(e-15))
	case Q8_0:
		return float64(m.Q[k]) * float64(m.Scales[k/m.GroupSize])
	}
	panic("format")
}

// refMatMul is the float64 oracle: ref[t*Rows+i] = Σ_j w[i,j]·x[t,j], plus
// the magnitude Σ|w||x| that bounds float32 rounding error.
//
// A Q8_0 matmul multiplies by x quantized per group like runq.c does (see
// q8act.go); quantizeRow is checked on its own by TestQuantizeRow, and here
// the quantized x is widened in float64, so the oracle checks the integer
// dot products, the scales and the summation.
func refMatMul(m *Matrix, x []float32, T int) (ref, mag []float64) {
	ref = make([]float64, T*m.Rows)
	mag = make([]float64, T*m.Rows)
	xv := make([]float64, m.Cols)
	for t := 0; t < T; t++ {
		xt := x[t*m.Cols : (t+1)*m.Cols]
		for j, v := range xt {
			xv[j] = float64(v)
		}
		if m.Format == Q8_0 && m.GroupSize > 0 && m.Cols%m.GroupSize == 0 {
			q := make([]int8, m.Cols)
			s := make([]float32, m.Cols/m.GroupSize)
			quantizeRow(q, s, xt, m.GroupSize)
			for j := range xv {
				xv[j] = float64(q[j]) * float64(s[j/m.GroupSize])
			}
		}
		for i := 0; i < m.Rows; i++ {
			var s, a float64
			for j := 0; j < m.Cols; j++ {
				p := deq64(m, i, j) * xv[j]
				s += p
				a += math.Abs(p)
			}
			ref[t*m.Rows+i] = s
			mag[t*m.Rows+i] = a
		}
	}
	return ref, mag
}

// tol bounds |float32 result − exact| for a dot product of n terms computed
// as blocked partial sums: each product and each of at most n/4 + 24
// sequential additions on one partial sum rounds once (unit roundoff 2^-24),
// plus the Q8_0 dequantization rounding (one more per term).
func tol(n int, mag float64) float64 {
	return float64(n/4+26) * 0x1p-24 * mag * 1.01
}

// parseGGMLType maps (for the oracle tables, which name types by string) a ggml type name (any letter case; model.StorageType
// values such as "Q4_K") to its GGMLType. Only the types Stride runs are
// accepted.
func parseGGMLType(name string) (GGMLType, error) {
	for _, t := range SupportedGGMLTypes {
		if strings.EqualFold(strings.TrimSpace(name), t.String()) {
			return t, nil
		}
	}
	return 0, fmt.Errorf("kernels: ggml type %q is not supported (want %s)", name, supportedList())
}

// ToBF16 converts float32 data (row-major rows×cols) to a new BF16 matrix,
// rounding each value to nearest-even (NaN stays NaN).
func ToBF16(rows, cols int, data []float32) (*Matrix, error) {
	if err := checkShape(rows, cols, len(data)); err != nil {
		return nil, err
	}
	bits := make([]uint16, rows*cols)
	for i := range bits {
		bits[i] = BF16FromFloat32(data[i])
	}
	return &Matrix{Format: BF16, Rows: rows, Cols: cols, U16: bits}, nil
}

// ToF16 converts float32 data (row-major rows×cols) to a new F16 matrix,
// rounding to nearest-even; values beyond ±65504 become ±Inf.
func ToF16(rows, cols int, data []float32) (*Matrix, error) {
	if err := checkShape(rows, cols, len(data)); err != nil {
		return nil, err
	}
	bits := make([]uint16, rows*cols)
	for i := range bits {
		bits[i] = float16.Fromfloat32(data[i]).Bits()
	}
	return &Matrix{Format: F16, Rows: rows, Cols: cols, U16: bits}, nil
}
