package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"unsafe"
)

// ggml tensor types. A GGUF file stores each weight in one of ggml's
// types; NewGGMLMatrix wraps the file's bytes as a Matrix without copying
// or widening them, so a decode token streams exactly the file's tensor
// bytes. The block layouts (ggml-common.h) are, little-endian:
//
//	Q8_0  34 bytes / 32 weights:  d fp16, qs[32] int8             w = d·q
//	Q4_0  18 bytes / 32 weights:  d fp16, qs[16] nibbles          w = d·(q−8)
//	      (byte j holds weight j in its low nibble, weight j+16 in its high one)
//	Q4_K 144 bytes / 256 weights: d fp16, dmin fp16, scales[12], qs[128]
//	      8 sub-blocks of 32, each with a 6-bit scale sc and min m:
//	      w = (d·sc)·q − (dmin·m), q a nibble; 64 weights per 32 bytes of
//	      qs (low nibbles first, then high nibbles)
//	Q6_K 210 bytes / 256 weights: ql[128], qh[64], scales[16] int8, d fp16
//	      16 sub-blocks of 16 with an int8 scale: w = (d·sc)·(q−32),
//	      q = 4 low bits from ql and 2 high bits from qh
//
// and the types llama-quantize falls back to, or older files use (their
// code is in ggml_q5.go):
//
//	Q4_1  20 bytes / 32 weights:  d fp16, m fp16, qs[16] nibbles  w = d·q + m
//	Q5_0  22 bytes / 32 weights:  d fp16, qh[4], qs[16]           w = d·(q−16)
//	Q5_1  24 bytes / 32 weights:  d fp16, m fp16, qh[4], qs[16]   w = d·q + m
//	      (nibbles as Q4_0's; bit j of the little-endian uint32 qh is
//	      the fifth bit of weight j)
//	Q5_K 176 bytes / 256 weights: d fp16, dmin fp16, scales[12], qh[32], qs[128]
//	      Q4_K's sub-blocks, scales and nibbles, plus a fifth bit per
//	      weight: bit s of qh[l] for weight l of sub-block s
//
// and F32, F16, BF16 one element per "block".

// GGMLType is a ggml tensor type, numbered as ggml's enum ggml_type (the
// number a GGUF tensor info stores). It is Stride's one weight-type enum:
// gguf reads and writes it and model.StorageType wraps it. Its String is
// ggml's type name, which is also model.StorageType's spelling.
type GGMLType uint32

// The ggml tensor types, numbered as in ggml.h. Gaps are types ggml has
// removed (Q4_2, Q4_3, and the Q4_0_4_4-style repacked types). Every one
// has a block layout in ggmlTraits; NewGGMLMatrix runs those whose traits
// name a Format (SupportedGGMLTypes).
const (
	TypeF32     GGMLType = 0
	TypeF16     GGMLType = 1
	TypeQ4_0    GGMLType = 2
	TypeQ4_1    GGMLType = 3
	TypeQ5_0    GGMLType = 6
	TypeQ5_1    GGMLType = 7
	TypeQ8_0    GGMLType = 8
	TypeQ8_1    GGMLType = 9
	TypeQ2_K    GGMLType = 10
	TypeQ3_K    GGMLType = 11
	TypeQ4_K    GGMLType = 12
	TypeQ5_K    GGMLType = 13
	TypeQ6_K    GGMLType = 14
	TypeQ8_K    GGMLType = 15
	TypeIQ2_XXS GGMLType = 16
	TypeIQ2_XS  GGMLType = 17
	TypeIQ3_XXS GGMLType = 18
	TypeIQ1_S   GGMLType = 19
	TypeIQ4_NL  GGMLType = 20
	TypeIQ3_S   GGMLType = 21
	TypeIQ2_S   GGMLType = 22
	TypeIQ4_XS  GGMLType = 23
	TypeI8      GGMLType = 24
	TypeI16     GGMLType = 25
	TypeI32     GGMLType = 26
	TypeI64     GGMLType = 27
	TypeF64     GGMLType = 28
	TypeIQ1_M   GGMLType = 29
	TypeBF16    GGMLType = 30
	TypeTQ1_0   GGMLType = 34
	TypeTQ2_0   GGMLType = 35
)

// ggmlTrait is one row of the traits table (ggml.c's type_traits): the
// type's name, its block geometry, and the Matrix format its kernels run
// (runs is false for a type Stride can size but not compute with).
type ggmlTrait struct {
	name       string
	blockSize  int // weights per block
	blockBytes int // bytes per block
	format     Format
	runs       bool
}

// ggmlTraits is the one table of ggml types. Adding a block type is a row
// here (with its Format) and its kernels; readers, writers and model size
// and name tensors through it.
var ggmlTraits = map[GGMLType]ggmlTrait{
	TypeF32:  {"F32", 1, 4, F32, true},
	TypeF16:  {"F16", 1, 2, F16, true},
	TypeBF16: {"BF16", 1, 2, BF16, true},
	TypeQ8_0: {"Q8_0", 32, 34, GGMLQ8_0, true},
	TypeQ4_0: {"Q4_0", 32, 18, Q4_0, true},
	TypeQ4_1: {"Q4_1", 32, 20, Q4_1, true},
	TypeQ5_0: {"Q5_0", 32, 22, Q5_0, true},
	TypeQ5_1: {"Q5_1", 32, 24, Q5_1, true},
	TypeQ4_K: {"Q4_K", 256, 144, Q4_K, true},
	TypeQ5_K: {"Q5_K", 256, 176, Q5_K, true},
	TypeQ6_K: {"Q6_K", 256, 210, Q6_K, true},

	TypeQ8_1: {name: "Q8_1", blockSize: 32, blockBytes: 36},
	TypeQ2_K: {name: "Q2_K", blockSize: 256, blockBytes: 84}, TypeQ3_K: {name: "Q3_K", blockSize: 256, blockBytes: 110},
	TypeQ8_K:    {name: "Q8_K", blockSize: 256, blockBytes: 292},
	TypeIQ2_XXS: {name: "IQ2_XXS", blockSize: 256, blockBytes: 66}, TypeIQ2_XS: {name: "IQ2_XS", blockSize: 256, blockBytes: 74},
	TypeIQ3_XXS: {name: "IQ3_XXS", blockSize: 256, blockBytes: 98}, TypeIQ1_S: {name: "IQ1_S", blockSize: 256, blockBytes: 50},
	TypeIQ4_NL: {name: "IQ4_NL", blockSize: 32, blockBytes: 18}, TypeIQ3_S: {name: "IQ3_S", blockSize: 256, blockBytes: 110},
	TypeIQ2_S: {name: "IQ2_S", blockSize: 256, blockBytes: 82}, TypeIQ4_XS: {name: "IQ4_XS", blockSize: 256, blockBytes: 136},
	TypeI8: {name: "I8", blockSize: 1, blockBytes: 1}, TypeI16: {name: "I16", blockSize: 1, blockBytes: 2},
	TypeI32: {name: "I32", blockSize: 1, blockBytes: 4}, TypeI64: {name: "I64", blockSize: 1, blockBytes: 8},
	TypeF64: {name: "F64", blockSize: 1, blockBytes: 8}, TypeIQ1_M: {name: "IQ1_M", blockSize: 256, blockBytes: 56},
	TypeTQ1_0: {name: "TQ1_0", blockSize: 256, blockBytes: 54}, TypeTQ2_0: {name: "TQ2_0", blockSize: 256, blockBytes: 66},
}

// String returns ggml's name of the type ("F16", "Q4_K", ...), or
// "GGMLType(n)" for a number ggml does not define.
func (t GGMLType) String() string {
	if tr, ok := ggmlTraits[t]; ok {
		return tr.name
	}
	return fmt.Sprintf("GGMLType(%d)", uint32(t))
}

// SupportedGGMLTypes are the ggml types Stride runs, in ggml's order.
var SupportedGGMLTypes = []GGMLType{TypeF32, TypeF16, TypeQ4_0, TypeQ4_1, TypeQ5_0, TypeQ5_1, TypeQ8_0,
	TypeQ4_K, TypeQ5_K, TypeQ6_K, TypeBF16}

// supportedList is SupportedGGMLTypes for error messages: "F32, F16, ... or BF16".
func supportedList() string {
	names := make([]string, len(SupportedGGMLTypes))
	for i, t := range SupportedGGMLTypes {
		names[i] = t.String()
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Known reports whether the type's block layout is known, so that a
// tensor of that type has a size, whether or not Stride runs it.
func (t GGMLType) Known() bool { _, ok := ggmlTraits[t]; return ok }

// Supported reports whether NewGGMLMatrix accepts the type.
func (t GGMLType) Supported() bool { return ggmlTraits[t].runs }

// BlockSize is the number of weights per block (1 for F32, F16 and BF16),
// or 0 for an unknown type. A row's length must be a multiple of it.
func (t GGMLType) BlockSize() int { return ggmlTraits[t].blockSize }

// BlockBytes is the size of one block in bytes, or 0 for an unknown type.
func (t GGMLType) BlockBytes() int { return ggmlTraits[t].blockBytes }

// RowBytes is the storage of one row of cols weights (ggml_row_size). It
// fails for an unsupported type or cols that is not a positive multiple of
// the block size.
func (t GGMLType) RowBytes(cols int) (int, error) {
	l := ggmlTraits[t]
	if !l.runs {
		return 0, fmt.Errorf("kernels: ggml type %v is not supported", t)
	}
	if cols <= 0 || cols%l.blockSize != 0 || cols > math.MaxInt32 {
		return 0, fmt.Errorf("kernels: ggml %v row of %d weights is not a positive multiple of its block size %d", t, cols, l.blockSize)
	}
	return cols / l.blockSize * l.blockBytes, nil
}

// blockFormats maps each Format that stores raw ggml blocks in
// Matrix.Blocks to its ggml type. It is derived from ggmlTraits (the rows
// that run with more than one weight per block), so a new block type is
// one table row.
var blockFormats = func() (m [256]struct {
	typ GGMLType
	ok  bool
}) {
	for t, tr := range ggmlTraits {
		if tr.runs && tr.blockSize > 1 {
			m[tr.format].typ, m[tr.format].ok = t, true
		}
	}
	return m
}()

// ggmlBlocks reports whether f stores raw ggml blocks in Matrix.Blocks,
// and returns their ggml type.
func (f Format) ggmlBlocks() (GGMLType, bool) {
	b := blockFormats[f]
	return b.typ, b.ok
}

// NewGGMLMatrix wraps the raw bytes of a ggml tensor of type typ, a
// row-major (rows, cols) weight matrix (GGUF ne = [cols, rows]), as a
// Matrix without copying: data must be exactly rows·RowBytes(cols) bytes.
// The Matrix reads data in place for as long as it is used, so data must
// stay valid (mapped) that long.
//
// The block types become the GGMLQ8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K
// and Q6_K formats; F32,
// F16 and BF16 become the plain formats over a view of the same bytes
// (copied only in the odd case that data is not aligned to the element
// size). Every matrix is marked GGML, so MatMul computes with it as ggml
// does: activations quantized to Q8_0 blocks for Q8_0, Q4_0 and Q5_0, to
// Q8_1 blocks for Q4_1 and Q5_1, to Q8_K blocks for Q4_K, Q5_K and Q6_K,
// and rounded to F16 or BF16 for those weights.
func NewGGMLMatrix(typ GGMLType, rows, cols int, data []byte) (*Matrix, error) {
	l := ggmlTraits[typ]
	if !l.runs {
		return nil, fmt.Errorf("kernels: ggml type %v is not supported (want %s)", typ, supportedList())
	}
	if rows <= 0 || cols <= 0 || rows > math.MaxInt32 || cols > math.MaxInt32 {
		return nil, fmt.Errorf("kernels: ggml %v matrix shape (%d, %d) must be positive and below 2^31", typ, rows, cols)
	}
	rb, err := typ.RowBytes(cols)
	if err != nil {
		return nil, err
	}
	if int64(rb)*int64(rows) != int64(len(data)) {
		return nil, fmt.Errorf("kernels: ggml %v matrix (%d, %d) needs %d bytes, data has %d", typ, rows, cols, int64(rb)*int64(rows), len(data))
	}
	m := &Matrix{Format: l.format, Rows: rows, Cols: cols, GGML: true}
	switch l.format {
	case F32:
		m.F32 = viewAs[float32](data)
	case F16, BF16:
		m.U16 = viewAs[uint16](data)
	default:
		m.Blocks = data
	}
	return m, m.Validate()
}

// viewAs reinterprets little-endian bytes as a slice of E without copying
// when data is aligned for E (always so for a mapped GGUF, whose tensors
// start on multiples of general.alignment), and decodes a copy otherwise.
func viewAs[E float32 | uint16](data []byte) []E {
	var zero E
	size := int(unsafe.Sizeof(zero))
	n := len(data) / size
	if uintptr(unsafe.Pointer(unsafe.SliceData(data)))%uintptr(size) == 0 {
		return unsafe.Slice((*E)(unsafe.Pointer(unsafe.SliceData(data))), n)
	}
	out := make([]E, n)
	for i := range out {
		switch p := any(&out[i]).(type) {
		case *float32:
			*p = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		case *uint16:
			*p = binary.LittleEndian.Uint16(data[2*i:])
		}
	}
	return out
}

// rowBytes is the byte length of one row of a block-format matrix.
func (m *Matrix) rowBytes() int {
	t, _ := m.Format.ggmlBlocks()
	l := ggmlTraits[t]
	return m.Cols / l.blockSize * l.blockBytes
}

// validateBlocks is Validate for the block formats.
func (m *Matrix) validateBlocks(t GGMLType) error {
	if m.Rows <= 0 || m.Cols <= 0 || m.Rows > math.MaxInt32 || m.Cols > math.MaxInt32 {
		return fmt.Errorf("kernels: matrix shape (%d, %d) must be positive and below 2^31 (format %v)", m.Rows, m.Cols, m.Format)
	}
	rb, err := t.RowBytes(m.Cols)
	if err != nil {
		return err
	}
	if need := int64(rb) * int64(m.Rows); int64(len(m.Blocks)) < need {
		return fmt.Errorf("kernels: %v matrix (%d, %d) needs %d bytes of blocks, has %d", m.Format, m.Rows, m.Cols, need, len(m.Blocks))
	}
	return nil
}

// RowBlock returns rows [start, start+n) of m as a Matrix over the same
// storage (nothing is copied), for every format: how one fused QKV matrix
// serves as the Q, K and V projections.
func (m *Matrix) RowBlock(start, n int) (*Matrix, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if start < 0 || n <= 0 || start > m.Rows-n {
		return nil, fmt.Errorf("kernels: row block [%d, %d+%d) outside the matrix's %d rows", start, start, n, m.Rows)
	}
	b := *m
	b.Rows = n
	lo, hi := start*m.Cols, (start+n)*m.Cols
	switch m.Format {
	case F32:
		b.F32 = m.F32[lo:hi]
	case F16, BF16:
		b.U16 = m.U16[lo:hi]
	case Q8_0:
		b.Q = m.Q[lo:hi]
		b.Scales = m.Scales[lo/m.GroupSize : hi/m.GroupSize]
	default:
		rb := m.rowBytes()
		b.Blocks = m.Blocks[start*rb : (start+n)*rb]
	}
	return &b, nil
}

// fp16 reads the binary16 at b[0:2] as float32 (ggml's GGML_FP16_TO_FP32).
func fp16(b []byte) float32 { return f16Table()[binary.LittleEndian.Uint16(b)] }

// dequantRowBlocks writes row i of a block-format matrix into dst[:Cols],
// exactly as ggml's dequantize_row_* (and gguf-py's quants.py) compute it:
// each product and difference rounded to float32 in the order below.
func (m *Matrix) dequantRowBlocks(i int, dst []float32) {
	rb := m.rowBytes()
	row := m.Blocks[i*rb : (i+1)*rb]
	switch m.Format {
	case GGMLQ8_0:
		for b := 0; b < m.Cols/32; b++ {
			blk := row[b*34 : b*34+34]
			d := fp16(blk)
			for j := 0; j < 32; j++ {
				dst[b*32+j] = float32(int8(blk[2+j])) * d
			}
		}
	case Q4_0:
		for b := 0; b < m.Cols/32; b++ {
			blk := row[b*18 : b*18+18]
			d := fp16(blk)
			y := dst[b*32 : b*32+32]
			for j := 0; j < 16; j++ {
				y[j] = d * float32(int(blk[2+j]&0x0f)-8)
				y[j+16] = d * float32(int(blk[2+j]>>4)-8)
			}
		}
	case Q4_K:
		for b := 0; b < m.Cols/256; b++ {
			dequantQ4K(dst[b*256:b*256+256], row[b*144:b*144+144])
		}
	case Q6_K:
		for b := 0; b < m.Cols/256; b++ {
			dequantQ6K(dst[b*256:b*256+256], row[b*210:b*210+210])
		}
	default:
		dequantRowQ5(m.Format, row, dst[:m.Cols])
	}
}

// q4KScales unpacks a Q4_K block's 12 scale bytes into the 8 sub-block
// scales and 8 mins (6 bits each; ggml's get_scale_min_k4).
func q4KScales(s []byte) (sc, mn [8]uint8) {
	for j := 0; j < 4; j++ {
		sc[j] = s[j] & 63
		mn[j] = s[j+4] & 63
		sc[j+4] = s[j+8]&0x0f | (s[j]>>6)<<4
		mn[j+4] = s[j+8]>>4 | (s[j+4]>>6)<<4
	}
	return sc, mn
}

// dequantQ4K is dequantize_row_q4_K for one 144-byte block.
func dequantQ4K(y []float32, blk []byte) {
	d, dmin := fp16(blk[0:]), fp16(blk[2:])
	sc, mn := q4KScales(blk[4:16])
	qs := blk[16:144]
	for j := 0; j < 4; j++ {
		q := qs[32*j : 32*j+32]
		d1, m1 := d*float32(sc[2*j]), dmin*float32(mn[2*j])
		d2, m2 := d*float32(sc[2*j+1]), dmin*float32(mn[2*j+1])
		for l := 0; l < 32; l++ {
			// float32(...) forbids fusing the product into the
			// subtraction: ggml and numpy round it first.
			y[64*j+l] = float32(d1*float32(q[l]&0x0f)) - m1
			y[64*j+32+l] = float32(d2*float32(q[l]>>4)) - m2
		}
	}
}

// q6KValue is weight k (0..255) of a Q6_K block as its 6-bit code minus 32.
func q6KValue(ql, qh []byte, k int) int {
	half, r := k/128, k%128
	l, quad := r%32, r/32
	lo := ql[64*half+l+32*(quad&1)]
	if quad >= 2 {
		lo >>= 4
	}
	hi := qh[32*half+l] >> (2 * quad) & 3
	return int(lo&0x0f|hi<<4) - 32
}

// dequantQ6K is dequantize_row_q6_K for one 210-byte block.
func dequantQ6K(y []float32, blk []byte) {
	ql, qh, sc := blk[0:128], blk[128:192], blk[192:208]
	d := fp16(blk[208:])
	for k := 0; k < 256; k++ {
		y[k] = float32(d*float32(int8(sc[k/16]))) * float32(q6KValue(ql, qh, k))
	}
}
