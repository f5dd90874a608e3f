package tensor

import (
	"fmt"
	"math"
	"strings"

	"github.com/x448/float16"
)

// DType is the element type of a Storage. Computation in Stride always
// happens in float32; F16 and BF16 exist to halve the bytes a tensor
// occupies and streams through memory.
type DType uint8

const (
	// F32 is IEEE-754 binary32, 4 bytes per element.
	F32 DType = iota
	// F16 is IEEE-754 binary16, 2 bytes per element (via x448/float16).
	F16
	// BF16 is bfloat16: the top 16 bits of a binary32, 2 bytes per element.
	BF16
)

// Size returns the number of bytes one element occupies.
func (d DType) Size() int {
	if d == F32 {
		return 4
	}
	return 2
}

// String returns the PyTorch-style name of the dtype ("float32", ...).
func (d DType) String() string {
	switch d {
	case F32:
		return "float32"
	case F16:
		return "float16"
	case BF16:
		return "bfloat16"
	}
	return fmt.Sprintf("DType(%d)", uint8(d))
}

// ParseDType parses a dtype name: f32/float32, f16/float16/half,
// bf16/bfloat16.
func ParseDType(s string) (DType, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "f32", "float32", "fp32", "float":
		return F32, nil
	case "f16", "float16", "fp16", "half":
		return F16, nil
	case "bf16", "bfloat16":
		return BF16, nil
	}
	return 0, fmt.Errorf("unknown dtype %q (want f32, f16 or bf16)", s)
}

// F16Bits converts a float32 to binary16 bits, rounding to nearest even.
func F16Bits(f float32) uint16 { return float16.Fromfloat32(f).Bits() }

// F16Float converts binary16 bits to float32 (exact).
func F16Float(b uint16) float32 { return float16.Frombits(b).Float32() }

// BF16Bits converts a float32 to bfloat16 bits by truncating the mantissa
// with round-to-nearest-even; NaNs stay NaN (quiet bit forced).
func BF16Bits(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 { // NaN: keep sign, force a quiet mantissa bit
		return uint16(u>>16) | 0x0040
	}
	// Add 0x7fff plus the lowest kept bit: ties go to the even result.
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// BF16Float converts bfloat16 bits to float32 (exact).
func BF16Float(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// toBits encodes a float32 as the 16-bit pattern of a half dtype.
func (d DType) toBits(f float32) uint16 {
	if d == BF16 {
		return BF16Bits(f)
	}
	return F16Bits(f)
}

// fromBits decodes a 16-bit pattern of a half dtype.
func (d DType) fromBits(b uint16) float32 {
	if d == BF16 {
		return BF16Float(b)
	}
	return F16Float(b)
}
