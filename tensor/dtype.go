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
//
// The other dtypes are PyTorch's, so that layouts (`infer layout`) and
// byte counts match it: arange of integers is int64, view(dtype)
// reinterprets bytes. Of those, only I32 has storage with data (token ids
// and token histories, which speculative decoding views with
// unfold(0, n, 1)); F64, I64, I16, I8, U8 and Bool exist on meta tensors
// only, and allocating one with data is an error.
type DType uint8

const (
	// F32 is IEEE-754 binary32, 4 bytes per element.
	F32 DType = iota
	// F16 is IEEE-754 binary16, 2 bytes per element (via x448/float16).
	F16
	// BF16 is bfloat16: the top 16 bits of a binary32, 2 bytes per element.
	BF16
	// F64 is IEEE-754 binary64 (torch.float64), 8 bytes; meta only.
	F64
	// I64 is torch.int64 (torch.long), 8 bytes; meta only. It is the
	// dtype of arange over integers and of PyTorch's index tensors.
	I64
	// I32 is torch.int32 (torch.int), 4 bytes, with data: token ids.
	I32
	// I16 is torch.int16, 2 bytes; meta only.
	I16
	// I8 is torch.int8, 1 byte; meta only.
	I8
	// U8 is torch.uint8, 1 byte; meta only.
	U8
	// Bool is torch.bool, 1 byte; meta only.
	Bool
	numDTypes
)

// Size returns the number of bytes one element occupies.
func (d DType) Size() int {
	switch d {
	case F64, I64:
		return 8
	case F32, I32:
		return 4
	case F16, BF16, I16:
		return 2
	}
	return 1
}

// Valid reports whether d is one of the dtypes above.
func (d DType) Valid() bool { return d < numDTypes }

// HasData reports whether tensors of dtype d can hold data (F32, F16,
// BF16 and I32); the others exist on meta tensors only.
func (d DType) HasData() bool { return d <= BF16 || d == I32 }

// IsFloat reports whether d is a floating-point dtype.
func (d DType) IsFloat() bool { return d == F32 || d == F16 || d == BF16 || d == F64 }

// IsInt reports whether d is an integer dtype (Bool excluded).
func (d DType) IsInt() bool { return d == I64 || d == I32 || d == I16 || d == I8 || d == U8 }

var dtypeNames = [numDTypes]string{"float32", "float16", "bfloat16", "float64", "int64", "int32", "int16", "int8", "uint8", "bool"}

// String returns the PyTorch-style name of the dtype ("float32", ...).
func (d DType) String() string {
	if d < numDTypes {
		return dtypeNames[d]
	}
	return fmt.Sprintf("DType(%d)", uint8(d))
}

// ParseDType parses a dtype name as PyTorch spells it, with short forms:
// f32/float32/float, f16/float16/half, bf16/bfloat16, f64/float64/double,
// i64/int64/long, i32/int32/int, i16/int16/short, i8/int8, u8/uint8, bool.
func ParseDType(s string) (DType, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "f32", "float32", "fp32", "float":
		return F32, nil
	case "f16", "float16", "fp16", "half":
		return F16, nil
	case "bf16", "bfloat16":
		return BF16, nil
	case "f64", "float64", "fp64", "double":
		return F64, nil
	case "i64", "int64", "long":
		return I64, nil
	case "i32", "int32", "int":
		return I32, nil
	case "i16", "int16", "short":
		return I16, nil
	case "i8", "int8":
		return I8, nil
	case "u8", "uint8":
		return U8, nil
	case "bool":
		return Bool, nil
	}
	return 0, fmt.Errorf("unknown dtype %q (want f32, f16, bf16, f64, i64, i32, i16, i8, u8 or bool)", s)
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
