package gguf

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/stride-lm/stride/tensor/kernels"
	"github.com/x448/float16"
)

// ggml's reference quantizers for the 32-weight types with a fifth bit or
// an offset (ggml-quants.c's quantize_row_q4_1_ref, _q5_0_ref and
// _q5_1_ref), which llama-quantize runs when it has no importance
// matrix. Each appends whole blocks to dst, computing in float32 in the
// reference's order; a value is truncated toward zero after adding 0.5
// (16.5 for Q5_0's signed codes), as the C casts do. The fp16 scales are
// rounded to nearest even (the F16C conversion).

// QuantizeQ4_1 appends x (a multiple of 32 values) as Q4_1 blocks: per
// block d = (max−min)/15, m = min, q = trunc((x−min)/d + 0.5) capped at 15.
func QuantizeQ4_1(dst []byte, x []float32) []byte {
	for b := 0; b+32 <= len(x); b += 32 {
		blk := x[b : b+32]
		lo, hi := minMax(blk)
		d := (hi - lo) / 15
		id := inverse(d)
		dst = appendF16(appendF16(dst, d), lo)
		for j := 0; j < 16; j++ {
			q0 := min(15, truncInt8(float32((blk[j]-lo)*id)+0.5))
			q1 := min(15, truncInt8(float32((blk[j+16]-lo)*id)+0.5))
			dst = append(dst, byte(q0)|byte(q1)<<4)
		}
	}
	return dst
}

// QuantizeQ5_0 appends x (a multiple of 32 values) as Q5_0 blocks: per
// block, with mx the value of largest magnitude (the first, on ties),
// d = mx/−16 and q = trunc(x/d + 16.5) capped at 31, stored as its low
// nibble and, in qh, its fifth bit.
func QuantizeQ5_0(dst []byte, x []float32) []byte {
	for b := 0; b+32 <= len(x); b += 32 {
		blk := x[b : b+32]
		var amax, mx float32
		for _, v := range blk {
			if a := float32(math.Abs(float64(v))); amax < a {
				amax, mx = a, v
			}
		}
		d := mx / -16
		id := inverse(d)
		var q [32]uint8
		for j, v := range blk {
			q[j] = uint8(min(31, truncInt8(float32(v*id)+16.5)))
		}
		dst = appendQ5(appendF16(dst, d), &q)
	}
	return dst
}

// QuantizeQ5_1 appends x (a multiple of 32 values) as Q5_1 blocks: per
// block d = (max−min)/31, m = min, q = trunc((x−min)/d + 0.5).
func QuantizeQ5_1(dst []byte, x []float32) []byte {
	for b := 0; b+32 <= len(x); b += 32 {
		blk := x[b : b+32]
		lo, hi := minMax(blk)
		d := (hi - lo) / 31
		id := inverse(d)
		var q [32]uint8
		for j, v := range blk {
			q[j] = uint8(float32((v-lo)*id) + 0.5) // the reference's (uint8_t) cast
		}
		dst = appendQ5(appendF16(appendF16(dst, d), lo), &q)
	}
	return dst
}

// QuantizeBlocks appends x quantized to typ by the reference quantizer
// (Q8_0, Q4_1, Q5_0 or Q5_1); x must be a whole number of blocks.
func QuantizeBlocks(dst []byte, typ kernels.GGMLType, x []float32) ([]byte, error) {
	if len(x)%32 != 0 {
		return nil, fmt.Errorf("gguf: %d values are not a whole number of %s blocks", len(x), typ)
	}
	switch typ {
	case kernels.TypeQ8_0:
		return QuantizeQ8_0(dst, x), nil
	case kernels.TypeQ4_1:
		return QuantizeQ4_1(dst, x), nil
	case kernels.TypeQ5_0:
		return QuantizeQ5_0(dst, x), nil
	case kernels.TypeQ5_1:
		return QuantizeQ5_1(dst, x), nil
	}
	return nil, fmt.Errorf("gguf: no quantizer for %s (Q8_0, Q4_1, Q5_0 and Q5_1 have one)", typ)
}

// appendQ5 appends 32 five-bit codes as Q5_0/Q5_1 store them: qh (bit j
// is code j's fifth bit, a little-endian uint32), then 16 bytes holding
// code j in the low nibble and code j+16 in the high one.
func appendQ5(dst []byte, q *[32]uint8) []byte {
	var qh uint32
	for j, v := range q {
		qh |= uint32(v>>4&1) << j
	}
	dst = binary.LittleEndian.AppendUint32(dst, qh)
	for j := 0; j < 16; j++ {
		dst = append(dst, q[j]&0x0f|(q[j+16]&0x0f)<<4)
	}
	return dst
}

// minMax is the smallest and largest of x, compared as the reference's
// loop does (from FLT_MAX and −FLT_MAX, so a NaN is skipped).
func minMax(x []float32) (lo, hi float32) {
	lo, hi = math.MaxFloat32, -math.MaxFloat32
	for _, v := range x {
		if v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	return lo, hi
}

// inverse is 1/d, or 0 for d = 0 (a constant block).
func inverse(d float32) float32 {
	if d == 0 {
		return 0
	}
	return 1 / d
}

// truncInt8 is C's (int8_t) cast of a float in the int8 range: toward zero.
func truncInt8(f float32) int8 { return int8(f) }

func appendF16(dst []byte, v float32) []byte {
	return binary.LittleEndian.AppendUint16(dst, float16.Fromfloat32(v).Bits())
}
