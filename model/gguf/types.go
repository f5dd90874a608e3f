package gguf

import "fmt"

// ValueType is the type tag of a metadata value (gguf_type in ggml).
type ValueType uint32

// The metadata value types. Their numbers are the file's.
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

var valueTypeNames = [...]string{"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string", "array", "uint64", "int64", "float64"}

// String is the type's name as gguf-py prints it, in lower case.
func (t ValueType) String() string {
	if int(t) < len(valueTypeNames) {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// size is the encoded size of one scalar of type t; 0 for strings and
// arrays (variable) and for unknown types.
func (t ValueType) size() int {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	}
	return 0
}

// GGMLType is a tensor's storage type (ggml_type in ggml).
type GGMLType uint32

// The ggml tensor types, numbered as in ggml.h. Gaps are types ggml has
// removed (Q4_2, Q4_3, and the Q4_0_4_4-style repacked types).
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

// ggmlTraits is, per type, its name, the elements per block and the bytes
// per block (ggml's type_traits blck_size and type_size).
var ggmlTraits = map[GGMLType]struct {
	name        string
	block, size int
}{
	TypeF32: {"F32", 1, 4}, TypeF16: {"F16", 1, 2},
	TypeQ4_0: {"Q4_0", 32, 18}, TypeQ4_1: {"Q4_1", 32, 20},
	TypeQ5_0: {"Q5_0", 32, 22}, TypeQ5_1: {"Q5_1", 32, 24},
	TypeQ8_0: {"Q8_0", 32, 34}, TypeQ8_1: {"Q8_1", 32, 36},
	TypeQ2_K: {"Q2_K", 256, 84}, TypeQ3_K: {"Q3_K", 256, 110},
	TypeQ4_K: {"Q4_K", 256, 144}, TypeQ5_K: {"Q5_K", 256, 176},
	TypeQ6_K: {"Q6_K", 256, 210}, TypeQ8_K: {"Q8_K", 256, 292},
	TypeIQ2_XXS: {"IQ2_XXS", 256, 66}, TypeIQ2_XS: {"IQ2_XS", 256, 74},
	TypeIQ3_XXS: {"IQ3_XXS", 256, 98}, TypeIQ1_S: {"IQ1_S", 256, 50},
	TypeIQ4_NL: {"IQ4_NL", 32, 18}, TypeIQ3_S: {"IQ3_S", 256, 110},
	TypeIQ2_S: {"IQ2_S", 256, 82}, TypeIQ4_XS: {"IQ4_XS", 256, 136},
	TypeI8: {"I8", 1, 1}, TypeI16: {"I16", 1, 2}, TypeI32: {"I32", 1, 4},
	TypeI64: {"I64", 1, 8}, TypeF64: {"F64", 1, 8},
	TypeIQ1_M: {"IQ1_M", 256, 56}, TypeBF16: {"BF16", 1, 2},
	TypeTQ1_0: {"TQ1_0", 256, 54}, TypeTQ2_0: {"TQ2_0", 256, 66},
}

// String is ggml's name for the type ("Q8_0"), or "type(N)" when unknown.
func (t GGMLType) String() string {
	if tr, ok := ggmlTraits[t]; ok {
		return tr.name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// Known reports whether the reader knows the type's block layout, so that
// tensors of that type have a size and a data view.
func (t GGMLType) Known() bool { _, ok := ggmlTraits[t]; return ok }

// BlockSize is the number of elements one block of the type holds (1 for
// plain types, 32 or 256 for the quantized ones); 0 when unknown.
func (t GGMLType) BlockSize() int { return ggmlTraits[t].block }

// BlockBytes is the encoded size of one block; 0 when unknown.
func (t GGMLType) BlockBytes() int { return ggmlTraits[t].size }
