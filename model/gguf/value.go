package gguf

import (
	"errors"
	"fmt"
	"math"
)

// Value is one metadata value: a scalar, a string or an array.
//
// Scalars are held widened (unsigned integers as uint64, signed as int64,
// floats as float64) with Type recording what the file stored, so a
// writer can store them back unchanged. Arrays hold a typed Go slice
// ([]uint8 ... []float64, []bool, []string, or []Value for arrays of
// arrays) and record the element type in Elem.
type Value struct {
	Type ValueType // the stored type; TypeArray for arrays
	Elem ValueType // arrays only: the element type
	v    any
}

// ErrNotFound is wrapped by the accessors' errors when the key is absent,
// so callers can tell an optional key's absence from a malformed value:
// errors.Is(err, gguf.ErrNotFound).
var ErrNotFound = errors.New("key not found")

// NewValue wraps a Go value for the writer. It accepts the scalar types
// uint8 ... uint64, int8 ... int64, float32, float64, bool and string, and
// slices of each (a []Value for an array of arrays, all of one element
// type); anything else is an error.
func NewValue(x any) (Value, error) {
	switch x := x.(type) {
	case uint8:
		return Value{Type: TypeUint8, v: uint64(x)}, nil
	case int8:
		return Value{Type: TypeInt8, v: int64(x)}, nil
	case uint16:
		return Value{Type: TypeUint16, v: uint64(x)}, nil
	case int16:
		return Value{Type: TypeInt16, v: int64(x)}, nil
	case uint32:
		return Value{Type: TypeUint32, v: uint64(x)}, nil
	case int32:
		return Value{Type: TypeInt32, v: int64(x)}, nil
	case uint64:
		return Value{Type: TypeUint64, v: x}, nil
	case int64:
		return Value{Type: TypeInt64, v: x}, nil
	case float32:
		return Value{Type: TypeFloat32, v: float64(x)}, nil
	case float64:
		return Value{Type: TypeFloat64, v: x}, nil
	case bool:
		return Value{Type: TypeBool, v: x}, nil
	case string:
		return Value{Type: TypeString, v: x}, nil
	case []uint8:
		return Value{Type: TypeArray, Elem: TypeUint8, v: x}, nil
	case []int8:
		return Value{Type: TypeArray, Elem: TypeInt8, v: x}, nil
	case []uint16:
		return Value{Type: TypeArray, Elem: TypeUint16, v: x}, nil
	case []int16:
		return Value{Type: TypeArray, Elem: TypeInt16, v: x}, nil
	case []uint32:
		return Value{Type: TypeArray, Elem: TypeUint32, v: x}, nil
	case []int32:
		return Value{Type: TypeArray, Elem: TypeInt32, v: x}, nil
	case []uint64:
		return Value{Type: TypeArray, Elem: TypeUint64, v: x}, nil
	case []int64:
		return Value{Type: TypeArray, Elem: TypeInt64, v: x}, nil
	case []float32:
		return Value{Type: TypeArray, Elem: TypeFloat32, v: x}, nil
	case []float64:
		return Value{Type: TypeArray, Elem: TypeFloat64, v: x}, nil
	case []bool:
		return Value{Type: TypeArray, Elem: TypeBool, v: x}, nil
	case []string:
		return Value{Type: TypeArray, Elem: TypeString, v: x}, nil
	case []Value:
		for i := 1; i < len(x); i++ {
			if x[i].Type != x[0].Type || x[i].Elem != x[0].Elem {
				return Value{}, fmt.Errorf("gguf: array of arrays mixes element types (%s and %s)", x[0].typeName(), x[i].typeName())
			}
		}
		for _, e := range x {
			if e.Type != TypeArray {
				return Value{}, fmt.Errorf("gguf: a []Value must hold arrays, not %s", e.Type)
			}
		}
		return Value{Type: TypeArray, Elem: TypeArray, v: x}, nil
	}
	return Value{}, fmt.Errorf("gguf: cannot store a %T as metadata", x)
}

// MustValue is NewValue for values known to be storable; it panics
// otherwise (for literals in writers and tests).
func MustValue(x any) Value {
	v, err := NewValue(x)
	if err != nil {
		panic(err)
	}
	return v
}

// Any returns the value as Go holds it: uint64, int64, float64, bool or
// string for scalars, the typed slice for arrays.
func (v Value) Any() any { return v.v }

// Len is the element count of an array, 0 for a scalar.
func (v Value) Len() int {
	switch a := v.v.(type) {
	case []uint8:
		return len(a)
	case []int8:
		return len(a)
	case []uint16:
		return len(a)
	case []int16:
		return len(a)
	case []uint32:
		return len(a)
	case []int32:
		return len(a)
	case []uint64:
		return len(a)
	case []int64:
		return len(a)
	case []float32:
		return len(a)
	case []float64:
		return len(a)
	case []bool:
		return len(a)
	case []string:
		return len(a)
	case []Value:
		return len(a)
	}
	return 0
}

// typeName reads "uint32" for scalars and "array[string]" for arrays.
func (v Value) typeName() string {
	if v.Type == TypeArray {
		return "array[" + v.Elem.String() + "]"
	}
	return v.Type.String()
}

// String renders the value briefly, for listings and errors (arrays show
// their type and length, not their elements).
func (v Value) String() string {
	if v.Type == TypeArray {
		return fmt.Sprintf("%s(%d)", v.typeName(), v.Len())
	}
	if s, ok := v.v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprint(v.v)
}

// KV is one metadata entry.
type KV struct {
	Key   string
	Value Value
}

// Lookup returns the value stored under key.
func (f *File) Lookup(key string) (Value, bool) {
	i, ok := f.index[key]
	if !ok {
		return Value{}, false
	}
	return f.Metadata[i].Value, true
}

// Has reports whether key is present.
func (f *File) Has(key string) bool { _, ok := f.index[key]; return ok }

// get returns key's value or an ErrNotFound error naming it.
func (f *File) get(key string) (Value, error) {
	v, ok := f.Lookup(key)
	if !ok {
		return Value{}, fmt.Errorf("gguf: %s: metadata key %q: %w", f.name, key, ErrNotFound)
	}
	return v, nil
}

// lookupAs returns key's value when Go holds it as a T (see Value), and
// otherwise an error naming the type found and want. It is the body of
// every accessor that takes one stored type as it is.
func lookupAs[T any](f *File, key, want string) (T, error) {
	var zero T
	v, err := f.get(key)
	if err != nil {
		return zero, err
	}
	x, ok := v.v.(T)
	if !ok {
		return zero, f.typeErr(key, v, want)
	}
	return x, nil
}

func (f *File) typeErr(key string, v Value, want string) error {
	return fmt.Errorf("gguf: %s: metadata key %q is %s, not %s", f.name, key, v.typeName(), want)
}

// String returns a string value.
func (f *File) String(key string) (string, error) { return lookupAs[string](f, key, "string") }

// Uint returns an integer value of any integer type as a uint64; a
// negative signed value is an error. (Writers disagree on the width of
// counts such as block_count: uint32 is usual, but int32 and uint64
// occur.)
func (f *File) Uint(key string) (uint64, error) {
	v, err := f.get(key)
	if err != nil {
		return 0, err
	}
	switch x := v.v.(type) {
	case uint64:
		return x, nil
	case int64:
		if x < 0 {
			return 0, fmt.Errorf("gguf: %s: metadata key %q is %d, must not be negative", f.name, key, x)
		}
		return uint64(x), nil
	}
	return 0, f.typeErr(key, v, "an integer")
}

// Int returns an integer value of any integer type as an int64; an
// unsigned value beyond int64's range is an error.
func (f *File) Int(key string) (int64, error) {
	v, err := f.get(key)
	if err != nil {
		return 0, err
	}
	switch x := v.v.(type) {
	case int64:
		return x, nil
	case uint64:
		if x > math.MaxInt64 {
			return 0, fmt.Errorf("gguf: %s: metadata key %q is %d, beyond int64", f.name, key, x)
		}
		return int64(x), nil
	}
	return 0, f.typeErr(key, v, "an integer")
}

// Float returns a float32 or float64 value as a float64 (a float32 is
// widened exactly).
func (f *File) Float(key string) (float64, error) { return lookupAs[float64](f, key, "a float") }

// Bool returns a bool value.
func (f *File) Bool(key string) (bool, error) { return lookupAs[bool](f, key, "bool") }

// Strings returns an array of strings (tokenizer.ggml.tokens,
// tokenizer.ggml.merges). The slice is the File's: do not modify it.
func (f *File) Strings(key string) ([]string, error) {
	return lookupAs[[]string](f, key, "array[string]")
}

// Float32s returns an array of float32 (tokenizer.ggml.scores). The slice
// is the File's: do not modify it.
func (f *File) Float32s(key string) ([]float32, error) {
	return lookupAs[[]float32](f, key, "array[float32]")
}

// Int32s returns an array of int32 (tokenizer.ggml.token_type). The slice
// is the File's: do not modify it.
func (f *File) Int32s(key string) ([]int32, error) { return lookupAs[[]int32](f, key, "array[int32]") }

// Ints returns an array of any integer element type as int64s (a fresh
// slice), for keys whose writers disagree on the width; an unsigned value
// beyond int64's range is an error.
func (f *File) Ints(key string) ([]int64, error) {
	v, err := f.get(key)
	if err != nil {
		return nil, err
	}
	var out []int64
	switch a := v.v.(type) {
	case []uint8:
		out = widen(a)
	case []int8:
		out = widen(a)
	case []uint16:
		out = widen(a)
	case []int16:
		out = widen(a)
	case []uint32:
		out = widen(a)
	case []int32:
		out = widen(a)
	case []int64:
		out = append([]int64(nil), a...)
	case []uint64:
		out = make([]int64, len(a))
		for i, x := range a {
			if x > math.MaxInt64 {
				return nil, fmt.Errorf("gguf: %s: metadata key %q element %d is %d, beyond int64", f.name, key, i, x)
			}
			out[i] = int64(x)
		}
	default:
		return nil, f.typeErr(key, v, "an array of integers")
	}
	return out, nil
}

func widen[T uint8 | int8 | uint16 | int16 | uint32 | int32](a []T) []int64 {
	out := make([]int64, len(a))
	for i, x := range a {
		out[i] = int64(x)
	}
	return out
}
