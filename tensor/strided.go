package tensor

// This file holds the explicit layouts: AsStrided and MetaStrided take
// (shape, strides, offset) as given, so they are checked against the
// storage they address (storageSpan, checkStrided) instead of derived from
// a valid layout as the view ops are.

// AsStrided views t's storage with explicit sizes, strides and offset. The
// layout must fit inside the storage, and strides must be non-negative.
func (t *Tensor) AsStrided(shape, strides []int, offset int) (*Tensor, error) {
	if err := checkStrided("as_strided", shape, strides, offset, t.st.n, t.st.dtype); err != nil {
		return nil, err
	}
	return t.with(append([]int(nil), shape...), append([]int(nil), strides...), offset), nil
}

// MetaStrided returns a meta tensor with an explicit layout over a meta
// storage just large enough to hold it: the as_strided((sizes),(strides),
// offset) constructor of `infer layout`.
func MetaStrided(dt DType, shape, strides []int, offset int) (*Tensor, error) {
	need, err := storageSpan("as_strided", shape, strides, offset)
	if err != nil {
		return nil, err
	}
	st := &Storage{dtype: dt, n: need, meta: true}
	if err := checkStrided("as_strided", shape, strides, offset, need, dt); err != nil {
		return nil, err
	}
	return &Tensor{st: st, shape: append([]int(nil), shape...), strides: append([]int(nil), strides...), offset: offset}, nil
}

// storageSpan returns the number of storage elements a layout touches from
// index 0: offset + Σ (size_k − 1)·stride_k + 1, or 0 for an empty tensor.
func storageSpan(op string, shape, strides []int, offset int) (int, error) {
	if len(shape) != len(strides) {
		return 0, errorf(op, "mismatch in length of strides and shape (%d vs %d): sizes %s, strides %s", len(strides), len(shape), FormatInts(shape), FormatInts(strides))
	}
	if offset < 0 {
		return 0, errorf(op, "Tensor: invalid storage offset %d (sizes %s, strides %s)", offset, FormatInts(shape), FormatInts(strides))
	}
	if offset >= maxNumel {
		// offset+1 below must not overflow, and no storage is this large.
		return 0, errorf(op, "storage offset %d is beyond 2^53 elements (sizes %s, strides %s)", offset, FormatInts(shape), FormatInts(strides))
	}
	n, err := numelOf(op, shape)
	if err != nil {
		return 0, err
	}
	for _, s := range strides {
		if s < 0 {
			return 0, errorf(op, "Negative strides are not supported at the moment, got strides: %s (sizes %s)", FormatInts(strides), FormatInts(shape))
		}
	}
	if n == 0 {
		return 0, nil
	}
	span := offset + 1
	for i, s := range shape {
		if strides[i] != 0 && s-1 > (maxNumel-span)/strides[i] {
			return 0, errorf(op, "sizes %s with strides %s overflow the address space", FormatInts(shape), FormatInts(strides))
		}
		span += (s - 1) * strides[i]
	}
	return span, nil
}

func checkStrided(op string, shape, strides []int, offset, storageLen int, dt DType) error {
	need, err := storageSpan(op, shape, strides, offset)
	if err != nil {
		return err
	}
	if need > storageLen {
		return errorf(op, "setStorage: sizes %s, strides %s, storage offset %d, and itemsize %d requiring a storage size of %d are out of bounds for storage of size %d",
			FormatInts(shape), FormatInts(strides), offset, dt.Size(), need*dt.Size(), storageLen*dt.Size())
	}
	return nil
}
