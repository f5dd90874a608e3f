package tensor

import "fmt"

// ShapeError is the error every shape op returns. Op names the operation
// (view, expand, …) and Msg carries PyTorch's wording with the shapes and
// strides involved, so a user can match our message with PyTorch's.
type ShapeError struct {
	Op  string
	Msg string
}

// Error implements error.
func (e *ShapeError) Error() string { return e.Op + ": " + e.Msg }

func errorf(op, format string, args ...any) error {
	return &ShapeError{Op: op, Msg: fmt.Sprintf(format, args...)}
}

// wrapDim turns a possibly negative dim into [0, ndim), with PyTorch's
// message when out of range. A 0-dim tensor accepts dims -1 and 0.
func wrapDim(op string, d, ndim int) (int, error) {
	n := max(ndim, 1)
	if d < -n || d >= n {
		return 0, errorf(op, "Dimension out of range (expected to be in range of [%d, %d], but got %d)", -n, n-1, d)
	}
	if d < 0 {
		d += n
	}
	return d, nil
}

// wrapDimOf is wrapDim for a tensor of the given shape: the error also
// names the shape, so a message read far from the call still says which
// tensor was meant.
func wrapDimOf(op string, d int, shape []int) (int, error) {
	w, err := wrapDim(op, d, len(shape))
	if err != nil {
		return 0, errorf(op, "%s for a tensor of shape %s", err.(*ShapeError).Msg, FormatInts(shape))
	}
	return w, nil
}
