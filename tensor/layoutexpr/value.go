package layoutexpr

import (
	"fmt"

	"github.com/stride-lm/stride/tensor"
)

// value is what an expression evaluates to: *tval (a tensor), int,
// float64, bool, noneVal, ellipsisVal, *tupleVal (tuples and lists),
// tensor.DType, memFormat, sliceVal or torchNS.
type value any

// tval is a tensor with the row that produced it (0 for a tuple element
// not yet shown: pending holds its op text).
type tval struct {
	t       *tensor.Tensor
	row     int
	pending string
}

// tupleVal is a tuple or list. op is the source text of the call that
// made a tuple of tensors (split, chunk, unbind), for its rows' op text.
type tupleVal struct {
	items []value
	list  bool
	op    string
}

type noneVal struct{}
type ellipsisVal struct{}
type torchNS struct{}

// memFormat is a torch.memory_format.
type memFormat string

const (
	contiguousFormat memFormat = "contiguous_format"
	channelsLast     memFormat = "channels_last"
	preserveFormat   memFormat = "preserve_format"
)

type sliceVal struct {
	lo, hi, step *int
}

func typeName(v value) string {
	switch x := v.(type) {
	case *tval:
		return "Tensor"
	case int:
		return "int"
	case float64:
		return "float"
	case bool:
		return "bool"
	case noneVal:
		return "NoneType"
	case ellipsisVal:
		return "ellipsis"
	case *tupleVal:
		if x.list {
			return "list"
		}
		return "tuple"
	case tensor.DType:
		return "torch.dtype"
	case memFormat:
		return "torch.memory_format"
	case sliceVal:
		return "slice"
	case torchNS:
		return "module"
	}
	return fmt.Sprintf("%T", v)
}

// torchDTypes are the dtype names torch.X and the bare short forms.
func lookupDType(name string) (tensor.DType, bool) {
	switch name {
	case "float", "int", "bool": // bare float/int/bool are Python types, not dtypes
		return 0, false
	}
	dt, err := tensor.ParseDType(name)
	return dt, err == nil
}

func torchAttr(name string) (value, bool) {
	switch name {
	case "channels_last", "contiguous_format", "preserve_format":
		return memFormat(name), true
	case "float", "int", "bool", "long", "half", "double", "short":
		dt, _ := tensor.ParseDType(name)
		return dt, true
	}
	if dt, ok := lookupDType(name); ok {
		return dt, true
	}
	return nil, false
}
