package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
)

// maxNesting bounds arrays of arrays (each level costs stack).
const maxNesting = 8

// value reads one value of type t. Arrays are checked against the bytes
// left before their slice is allocated: each element takes at least its
// scalar size (8 bytes for a string's length, 12 for a nested array's
// header).
func (c *cursor) value(t ValueType, depth int) (Value, error) {
	switch t {
	case TypeUint8, TypeUint16, TypeUint32, TypeUint64:
		s, err := c.take(t.size())
		if err != nil {
			return Value{}, err
		}
		return Value{Type: t, v: readUint(s)}, nil
	case TypeInt8, TypeInt16, TypeInt32, TypeInt64:
		s, err := c.take(t.size())
		if err != nil {
			return Value{}, err
		}
		return Value{Type: t, v: signExtend(readUint(s), t.size())}, nil
	case TypeFloat32:
		s, err := c.take(4)
		if err != nil {
			return Value{}, err
		}
		return Value{Type: t, v: float64(math.Float32frombits(binary.LittleEndian.Uint32(s)))}, nil
	case TypeFloat64:
		s, err := c.take(8)
		if err != nil {
			return Value{}, err
		}
		return Value{Type: t, v: math.Float64frombits(binary.LittleEndian.Uint64(s))}, nil
	case TypeBool:
		s, err := c.take(1)
		if err != nil {
			return Value{}, err
		}
		if s[0] > 1 {
			return Value{}, fmt.Errorf("bool byte is %d, not 0 or 1", s[0])
		}
		return Value{Type: t, v: s[0] == 1}, nil
	case TypeString:
		s, err := c.str("string")
		if err != nil {
			return Value{}, err
		}
		return Value{Type: t, v: s}, nil
	case TypeArray:
		if depth >= maxNesting {
			return Value{}, fmt.Errorf("arrays nested deeper than %d", maxNesting)
		}
		et, err := c.u32()
		if err != nil {
			return Value{}, err
		}
		return c.array(ValueType(et), depth)
	}
	return Value{}, fmt.Errorf("unknown value type %d", uint32(t))
}

func (c *cursor) array(et ValueType, depth int) (Value, error) {
	minSize := et.size()
	switch et {
	case TypeString:
		minSize = 8
	case TypeArray:
		minSize = 4 + 8
	}
	if minSize == 0 {
		return Value{}, fmt.Errorf("array of unknown value type %d", uint32(et))
	}
	n, err := c.count("array length", minSize)
	if err != nil {
		return Value{}, err
	}
	v := Value{Type: TypeArray, Elem: et}
	if sz := et.size(); sz > 0 {
		raw, _ := c.take(n * sz) // fits: count checked n·sz ≤ left
		v.v, err = decodeScalars(et, raw, n)
		return v, err
	}
	switch et {
	case TypeString:
		a := make([]string, n)
		for i := range a {
			if a[i], err = c.str(fmt.Sprintf("array element %d", i)); err != nil {
				return Value{}, err
			}
		}
		v.v = a
	case TypeArray:
		a := make([]Value, n)
		for i := range a {
			if a[i], err = c.value(TypeArray, depth+1); err != nil {
				return Value{}, fmt.Errorf("array element %d: %w", i, err)
			}
			if i > 0 && a[i].Elem != a[0].Elem {
				return Value{}, fmt.Errorf("array element %d holds %s, element 0 %s", i, a[i].Elem, a[0].Elem)
			}
		}
		v.v = a
	}
	return v, nil
}

func readUint(s []byte) uint64 {
	switch len(s) {
	case 1:
		return uint64(s[0])
	case 2:
		return uint64(binary.LittleEndian.Uint16(s))
	case 4:
		return uint64(binary.LittleEndian.Uint32(s))
	}
	return binary.LittleEndian.Uint64(s)
}

func signExtend(u uint64, size int) int64 {
	shift := 64 - 8*uint(size)
	return int64(u<<shift) >> shift
}

// decodeScalars converts n packed scalars of type et into a typed slice.
func decodeScalars(et ValueType, raw []byte, n int) (any, error) {
	le := binary.LittleEndian
	switch et {
	case TypeUint8:
		return append([]uint8(nil), raw...), nil
	case TypeInt8:
		a := make([]int8, n)
		for i := range a {
			a[i] = int8(raw[i])
		}
		return a, nil
	case TypeBool:
		a := make([]bool, n)
		for i := range a {
			if raw[i] > 1 {
				return nil, fmt.Errorf("array element %d: bool byte is %d, not 0 or 1", i, raw[i])
			}
			a[i] = raw[i] == 1
		}
		return a, nil
	case TypeUint16:
		a := make([]uint16, n)
		for i := range a {
			a[i] = le.Uint16(raw[2*i:])
		}
		return a, nil
	case TypeInt16:
		a := make([]int16, n)
		for i := range a {
			a[i] = int16(le.Uint16(raw[2*i:]))
		}
		return a, nil
	case TypeUint32:
		a := make([]uint32, n)
		for i := range a {
			a[i] = le.Uint32(raw[4*i:])
		}
		return a, nil
	case TypeInt32:
		a := make([]int32, n)
		for i := range a {
			a[i] = int32(le.Uint32(raw[4*i:]))
		}
		return a, nil
	case TypeFloat32:
		a := make([]float32, n)
		for i := range a {
			a[i] = math.Float32frombits(le.Uint32(raw[4*i:]))
		}
		return a, nil
	case TypeUint64:
		a := make([]uint64, n)
		for i := range a {
			a[i] = le.Uint64(raw[8*i:])
		}
		return a, nil
	case TypeInt64:
		a := make([]int64, n)
		for i := range a {
			a[i] = int64(le.Uint64(raw[8*i:]))
		}
		return a, nil
	case TypeFloat64:
		a := make([]float64, n)
		for i := range a {
			a[i] = math.Float64frombits(le.Uint64(raw[8*i:]))
		}
		return a, nil
	}
	return nil, fmt.Errorf("array of unknown value type %d", uint32(et))
}
