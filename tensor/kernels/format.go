package kernels

import (
	"errors"
	"fmt"
	"math"

	"github.com/x448/float16"
)

// Format is the element encoding of a weight Matrix. Activations are always
// float32; only weights change format, because at decode time the weights
// are what streams from memory for every token (bytes per token = Σ
// Matrix.Bytes), so halving their size halves the time at the bandwidth wall.
type Format uint8

const (
	// F32 stores IEEE binary32 weights in Matrix.F32: 4 bytes per weight.
	F32 Format = iota
	// F16 stores IEEE binary16 bit patterns in Matrix.U16: 2 bytes per weight.
	F16
	// BF16 stores bfloat16 bit patterns (the top 16 bits of a binary32) in
	// Matrix.U16: 2 bytes per weight.
	BF16
	// Q8_0 stores int8 weights in Matrix.Q with one float32 scale per
	// GroupSize consecutive weights in Matrix.Scales: 1 + 4/GroupSize bytes
	// per weight (1.125 for GroupSize 32).
	Q8_0
	// GGMLQ8_0 is ggml's Q8_0, the file's blocks in Matrix.Blocks: 34
	// bytes per 32 weights (an fp16 scale, then 32 int8). See ggml.go.
	GGMLQ8_0
	// Q4_0 is ggml's Q4_0 in Matrix.Blocks: 18 bytes per 32 weights.
	Q4_0
	// Q4_K is ggml's Q4_K in Matrix.Blocks: 144 bytes per 256 weights.
	Q4_K
	// Q6_K is ggml's Q6_K in Matrix.Blocks: 210 bytes per 256 weights.
	Q6_K
	// Q4_1 is ggml's Q4_1 in Matrix.Blocks: 20 bytes per 32 weights.
	Q4_1
	// Q5_0 is ggml's Q5_0 in Matrix.Blocks: 22 bytes per 32 weights.
	Q5_0
	// Q5_1 is ggml's Q5_1 in Matrix.Blocks: 24 bytes per 32 weights.
	Q5_1
	// Q5_K is ggml's Q5_K in Matrix.Blocks: 176 bytes per 256 weights.
	Q5_K
)

var formatNames = [...]string{F32: "f32", F16: "f16", BF16: "bf16", Q8_0: "q8_0",
	GGMLQ8_0: "ggml_q8_0", Q4_0: "q4_0", Q4_K: "q4_k", Q6_K: "q6_k",
	Q4_1: "q4_1", Q5_0: "q5_0", Q5_1: "q5_1", Q5_K: "q5_k"}

// String returns the lower-case name used on command lines ("f32", "f16",
// "bf16", "q8_0"); the ggml block formats print as "ggml_q8_0" and as
// ggml's type names in lower case ("q4_0", "q5_k", ...).
func (f Format) String() string {
	if int(f) < len(formatNames) {
		return formatNames[f]
	}
	return fmt.Sprintf("Format(%d)", uint8(f))
}

// elemBits is the storage cost of one weight, excluding Q8_0 scales.
func (f Format) elemBytes() int {
	switch f {
	case F32:
		return 4
	case F16, BF16:
		return 2
	case Q8_0:
		return 1
	}
	return 0
}

// Matrix is a row-major (Rows, Cols) weight matrix in one of the Formats,
// following llama2.c's (out, in) convention: row i holds the Cols weights
// that produce output i, so element (i, j) is at flat index i·Cols + j and
// the row stride is Cols elements.
//
// Exactly one storage slice is used, chosen by Format: F32 for F32, U16 for
// F16 and BF16, Q plus Scales for Q8_0, Blocks for the ggml block formats. The slices may be longer than
// Rows·Cols (they may be windows into a larger mmap-like buffer); only the
// first Rows·Cols elements are read.
type Matrix struct {
	Format     Format
	Rows, Cols int
	F32        []float32
	U16        []uint16 // F16 or BF16 bit patterns
	Q          []int8
	// Scales holds one float32 per GroupSize consecutive values of the
	// row-major flattening (llama2.c export version 2): weight k (flat index)
	// dequantizes to Q[k]·Scales[k/GroupSize]. Cols % GroupSize == 0, so a
	// group never straddles two rows and row i's scales start at
	// i·Cols/GroupSize.
	Scales    []float32
	GroupSize int
	// Blocks holds the raw ggml blocks of the GGMLQ8_0, Q4_0, Q4_1, Q5_0,
	// Q5_1, Q4_K, Q5_K and Q6_K formats, row after row: row i is bytes [i·R, (i+1)·R) with R
	// the type's RowBytes(Cols). See NewGGMLMatrix.
	Blocks []byte
	// GGML makes MatMul compute as ggml does for this weight type: F16
	// and BF16 weights see activations rounded to F16 or BF16 first
	// (ggml's vec_dot_type). NewGGMLMatrix sets it; the block formats
	// always compute as ggml does, and F32 is the same either way.
	GGML bool
}

// NewF32 wraps data (row-major, at least rows·cols values) as an F32 matrix
// without copying.
func NewF32(rows, cols int, data []float32) (*Matrix, error) {
	m := &Matrix{Format: F32, Rows: rows, Cols: cols, F32: data}
	return m, m.Validate()
}

// NewBF16 wraps bfloat16 bit patterns (row-major) without copying.
func NewBF16(rows, cols int, bits []uint16) (*Matrix, error) {
	m := &Matrix{Format: BF16, Rows: rows, Cols: cols, U16: bits}
	return m, m.Validate()
}

// NewF16 wraps IEEE binary16 bit patterns (row-major) without copying.
func NewF16(rows, cols int, bits []uint16) (*Matrix, error) {
	m := &Matrix{Format: F16, Rows: rows, Cols: cols, U16: bits}
	return m, m.Validate()
}

// NewQ8_0 wraps already-quantized int8 weights and their per-group scales
// (llama2.c export version 2 layout) without copying.
func NewQ8_0(rows, cols int, q []int8, scales []float32, groupSize int) (*Matrix, error) {
	m := &Matrix{Format: Q8_0, Rows: rows, Cols: cols, Q: q, Scales: scales, GroupSize: groupSize}
	return m, m.Validate()
}

// checkShape validates rows, cols and that data holds rows·cols values.
func checkShape(rows, cols, have int) error {
	if rows <= 0 || cols <= 0 {
		return fmt.Errorf("kernels: matrix shape (%d, %d) must be positive", rows, cols)
	}
	if rows > math.MaxInt32 || cols > math.MaxInt32 || int64(rows)*int64(cols) > math.MaxInt64/8 {
		return fmt.Errorf("kernels: matrix shape (%d, %d) is too large", rows, cols)
	}
	if have < rows*cols {
		return fmt.Errorf("kernels: data has %d values, shape (%d, %d) needs %d", have, rows, cols, rows*cols)
	}
	return nil
}

// QuantizeQ8_0 quantizes float32 data (row-major rows×cols) the way
// llama2.c's export.py version 2 does: the flattened tensor is cut into
// groups of groupSize consecutive values; each group gets scale =
// max|w|/127 and q = round(w/scale), computed in float32 and rounded half to
// even like torch.round, so the largest magnitude maps to ±127. An all-zero group gets scale 0 and q = 0.
// groupSize must be positive and divide cols, so groups never cross rows.
// Non-finite inputs are rejected because they would poison a whole group.
func QuantizeQ8_0(rows, cols int, data []float32, groupSize int) (*Matrix, error) {
	if err := checkShape(rows, cols, len(data)); err != nil {
		return nil, err
	}
	if groupSize <= 0 || cols%groupSize != 0 {
		return nil, fmt.Errorf("kernels: Q8_0 group size %d must be positive and divide cols %d", groupSize, cols)
	}
	n := rows * cols
	q := make([]int8, n)
	scales := make([]float32, n/groupSize)
	for g := range scales {
		group := data[g*groupSize : (g+1)*groupSize]
		var amax float32
		for k, v := range group {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return nil, fmt.Errorf("kernels: Q8_0 input value %d is %v", g*groupSize+k, v)
			}
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		scale := amax / 127
		scales[g] = scale
		if scale == 0 {
			continue
		}
		for k, v := range group {
			q[g*groupSize+k] = int8(math.RoundToEven(float64(v / scale)))
		}
	}
	return &Matrix{Format: Q8_0, Rows: rows, Cols: cols, Q: q, Scales: scales, GroupSize: groupSize}, nil
}

// BF16FromFloat32 rounds f to the nearest bfloat16 (ties to even) and returns
// its bits. NaNs map to a quiet NaN with the same sign.
func BF16FromFloat32(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 { // NaN: keep it a NaN after truncation
		return uint16(b>>16) | 0x0040
	}
	// Add 0x7fff plus the lowest kept bit: rounds to nearest, ties to even.
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

// BF16ToFloat32 widens bfloat16 bits to float32 exactly (a 16-bit shift).
func BF16ToFloat32(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// F16ToFloat32 widens IEEE binary16 bits to float32 exactly.
func F16ToFloat32(h uint16) float32 { return f16Table()[h] }

// F16FromFloat32 rounds f to the nearest binary16 (ties to even).
func F16FromFloat32(f float32) uint16 { return float16.Fromfloat32(f).Bits() }

// Validate checks that the format is known, the shape is positive and the
// storage slice for the format is long enough; for Q8_0 it also checks the
// group size and the number of scales. Kernels call it before touching
// memory, so a malformed Matrix yields an error, never an out-of-bounds read.
func (m *Matrix) Validate() error {
	if m == nil {
		return errors.New("kernels: nil matrix")
	}
	var have int
	switch m.Format {
	case F32:
		have = len(m.F32)
	case F16, BF16:
		have = len(m.U16)
	case Q8_0:
		have = len(m.Q)
	default:
		if t, ok := m.Format.ggmlBlocks(); ok {
			return m.validateBlocks(t)
		}
		return fmt.Errorf("kernels: unknown matrix format %v", m.Format)
	}
	if err := checkShape(m.Rows, m.Cols, have); err != nil {
		return fmt.Errorf("%w (format %v)", err, m.Format)
	}
	if m.Format == Q8_0 {
		if m.GroupSize <= 0 || m.Cols%m.GroupSize != 0 {
			return fmt.Errorf("kernels: Q8_0 group size %d must be positive and divide cols %d", m.GroupSize, m.Cols)
		}
		if need := m.Rows * m.Cols / m.GroupSize; len(m.Scales) < need {
			return fmt.Errorf("kernels: Q8_0 matrix (%d, %d) group %d needs %d scales, has %d",
				m.Rows, m.Cols, m.GroupSize, need, len(m.Scales))
		}
	}
	return nil
}

// Bytes is the storage the kernels read per full pass over the matrix:
// Rows·Cols·(bytes per weight), plus the scales for Q8_0; for the ggml
// block formats, the blocks (the file's tensor bytes). At decode time
// this is the memory traffic of one matvec.
func (m *Matrix) Bytes() int64 {
	if m == nil {
		return 0
	}
	if t, ok := m.Format.ggmlBlocks(); ok {
		if m.Cols%t.BlockSize() != 0 {
			return 0
		}
		return int64(m.Rows) * int64(m.Cols/t.BlockSize()*t.BlockBytes())
	}
	n := int64(m.Rows) * int64(m.Cols)
	b := n * int64(m.Format.elemBytes())
	if m.Format == Q8_0 && m.GroupSize > 0 {
		b += n / int64(m.GroupSize) * 4
	}
	return b
}

// Row writes the dequantized float32 values of row i into dst[:Cols]
// (for the ggml block formats, exactly as ggml's dequantize_row_* does).
func (m *Matrix) Row(i int, dst []float32) error {
	if err := m.Validate(); err != nil {
		return err
	}
	if i < 0 || i >= m.Rows {
		return fmt.Errorf("kernels: row %d out of range [0, %d)", i, m.Rows)
	}
	if len(dst) < m.Cols {
		return fmt.Errorf("kernels: row destination has %d values, need %d", len(dst), m.Cols)
	}
	off := i * m.Cols
	dst = dst[:m.Cols]
	switch m.Format {
	case F32:
		copy(dst, m.F32[off:off+m.Cols])
	case BF16:
		for j := range dst {
			dst[j] = BF16ToFloat32(m.U16[off+j])
		}
	case F16:
		t := f16Table()
		for j := range dst {
			dst[j] = t[m.U16[off+j]]
		}
	case Q8_0:
		for j := range dst {
			dst[j] = float32(m.Q[off+j]) * m.Scales[(off+j)/m.GroupSize]
		}
	default:
		m.dequantRowBlocks(i, dst)
	}
	return nil
}

// Float32s returns the whole matrix dequantized to a new row-major slice.
func (m *Matrix) Float32s() ([]float32, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	out := make([]float32, m.Rows*m.Cols)
	for i := 0; i < m.Rows; i++ {
		if err := m.Row(i, out[i*m.Cols:]); err != nil {
			return nil, err
		}
	}
	return out, nil
}
