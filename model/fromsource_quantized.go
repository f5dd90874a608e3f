package model

import (
	"fmt"
	"unsafe"

	"github.com/stride-lm/stride/tensor"
	"github.com/stride-lm/stride/tensor/kernels"
)

// This file builds the matrices the kernels run in their stored form
// (Model.Quantized): block-quantized matrices, kept as stored or
// dequantized to the weight dtype, and a GGMLSource's F16 and BF16
// matrices, which run as ggml runs them.

// quantized returns the tensor for a block-quantized matrix: with weight
// dtype F32, a meta placeholder of its shape whose kernel form is recorded
// in Model.Quantized (a meta tensor holds no data, so nothing float32 is
// allocated); otherwise a real tensor of the weight dtype holding q·scale
// computed in float32, as the kernels compute it, rounded once.
func (b *builder) quantized(mat *kernels.Matrix, name string) (*tensor.Tensor, error) {
	if b.dt == tensor.F32 {
		t, err := tensor.Meta(tensor.F32, mat.Rows, mat.Cols)
		if err != nil {
			return nil, err
		}
		if b.m.Quantized == nil {
			b.m.Quantized = map[*tensor.Tensor]*kernels.Matrix{}
		}
		b.m.Quantized[t] = mat
		return t, nil
	}
	t, err := tensor.Empty(b.led, b.dt, mat.Rows, mat.Cols)
	if err != nil {
		return nil, err
	}
	row := make([]float32, mat.Cols)
	st := t.Storage()
	for i := 0; i < mat.Rows; i++ {
		if err := mat.Row(i, row); err != nil {
			return nil, fmt.Errorf("tensor %s: %w", name, err)
		}
		for j, v := range row {
			st.Store(i*mat.Cols+j, v)
		}
	}
	b.copiedOut(int64(st.Bytes()))
	return t, nil
}

// ggmlFloats keeps an F16 or BF16 matrix as stored, as a ggml matrix
// (Model.Quantized) over the tensor's bytes, so that its matmuls round the
// activations to the weight's type as ggml does. The tensor itself views
// the same bytes, for Row-free readers (export, Float32s).
func (b *builder) ggmlFloats(rt RawTensor, rows, cols int) (*tensor.Tensor, error) {
	dt := dtypeOf(rt.Type)
	t, err := b.floats(rt, dt, rows, cols)
	if err != nil {
		return nil, err
	}
	typ := kernels.TypeF16
	if dt == tensor.BF16 {
		typ = kernels.TypeBF16
	}
	u := t.Storage().Uint16s()[t.Offset() : t.Offset()+rows*cols]
	mat, err := kernels.NewGGMLMatrix(typ, rows, cols, unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(u))), 2*len(u)))
	if err != nil {
		return nil, fmt.Errorf("tensor %s: %w", rt.Name, err)
	}
	if b.m.Quantized == nil {
		b.m.Quantized = map[*tensor.Tensor]*kernels.Matrix{}
	}
	b.m.Quantized[t] = mat
	return t, nil
}
