package model

import (
	"errors"
	"fmt"

	"github.com/stride-lm/stride/tensor"
)

// This file fuses each layer's attn_q, attn_k and attn_v, stored apart,
// into the one WQKV matrix (and the one q|k|v bias) that lets a single
// matmul yield [q | k | v].

// fusedMatrix returns the (Σ rows, cols) matrix whose rows are those of
// the named matrices in turn (attn_q, attn_k, attn_v). The file keeps
// them apart, so this is a copy even when the file is mapped.
func (b *builder) fusedMatrix(cols int, names []string, rows []int) (*tensor.Tensor, error) {
	parts := make([]RawTensor, len(names))
	total := 0
	for i, name := range names {
		var err error
		if parts[i], err = b.raw(name, rows[i], cols); err != nil {
			return nil, err
		}
		total += rows[i]
		if parts[i].Type != parts[0].Type || parts[i].GroupSize != parts[0].GroupSize {
			if b.ggml {
				return nil, errMixedQKV
			}
			return nil, fmt.Errorf("tensors %s (%s) and %s (%s) have different storage types: the fused QKV projection needs one",
				names[0], parts[0].Type, name, parts[i].Type)
		}
	}
	if isFloat(parts[0].Type) && b.ggmlHalf(parts[0].Type) {
		fused, err := fuseBlocks(parts, total, cols)
		if err != nil {
			return nil, err
		}
		// The fused bytes are new memory: ggmlFloats keeps them as the
		// weight's storage, and records them as allocated (kept) when the
		// source reads instead of mapping; a mapped source's copy is
		// recorded here.
		if b.mapped > 0 {
			b.led.RecordAlloc(int64(len(fused.Data)))
		}
		b.copiedOut(int64(len(fused.Data)))
		fused.Name = names[0]
		return b.ggmlFloats(fused, total, cols)
	}
	if isFloat(parts[0].Type) {
		t, err := tensor.Empty(b.led, b.floatDType(parts[0].Type), total, cols)
		if err != nil {
			return nil, err
		}
		off := 0
		for i, p := range parts {
			convert(t.Storage(), off, p)
			off += rows[i] * cols
		}
		b.copiedOut(int64(t.Storage().Bytes()))
		return t, nil
	}
	fused, err := fuseBlocks(parts, total, cols)
	if err != nil {
		return nil, err
	}
	mat, err := b.blockMatrix(fused, total, cols)
	if err != nil {
		return nil, err
	}
	if b.dt == tensor.F32 {
		b.led.RecordAlloc(int64(len(fused.Data)))
		b.copiedOut(int64(len(fused.Data)))
	}
	return b.quantized(mat, fused.Name)
}

// errMixedQKV is fusedMatrix's signal that a GGMLSource stores q, k and v
// in different types, which then stay three matrices.
var errMixedQKV = errors.New("q, k, v in different storage types")

// fuseBlocks concatenates the rows of block-quantized tensors of one type
// into new memory. Every block type stores whole rows one after another
// (a row is a whole number of blocks), so the fusion is the bytes of each
// part in turn; a llama2.c Q8 tensor keeps its values and its scales in
// two runs, so each run is concatenated on its own.
func fuseBlocks(parts []RawTensor, rows, cols int) (RawTensor, error) {
	n := 0
	for _, p := range parts {
		n += len(p.Data)
	}
	out := RawTensor{Name: parts[0].Name + "+…", Type: parts[0].Type, Shape: []int{rows, cols},
		GroupSize: parts[0].GroupSize, Data: make([]byte, 0, n)}
	if out.Type != StorageLlama2cQ8 {
		for _, p := range parts {
			out.Data = append(out.Data, p.Data...)
		}
		return out, nil
	}
	for _, p := range parts {
		out.Data = append(out.Data, p.Data[:p.Shape[0]*p.Shape[1]]...)
	}
	for _, p := range parts {
		out.Data = append(out.Data, p.Data[p.Shape[0]*p.Shape[1]:]...)
	}
	return out, nil
}

// fusedBias returns the q, k and v biases (Qwen2) as one float32 vector
// [q | k | v], or nil when the file has none. A file with some but not
// all of them is damaged.
func (b *builder) fusedBias(names []string, n []int) (*tensor.Tensor, error) {
	total := 0
	for _, k := range n {
		total += k
	}
	var t *tensor.Tensor
	off, missing := 0, 0
	for i, name := range names {
		rt, err := b.raw(name, n[i])
		if errors.Is(err, ErrTensorNotFound) {
			missing++
			continue
		}
		if err != nil {
			return nil, err
		}
		if !isFloat(rt.Type) {
			return nil, unsupported(rt)
		}
		if t == nil {
			if t, err = tensor.Empty(b.led, tensor.F32, total); err != nil {
				return nil, err
			}
		}
		convert(t.Storage(), off, rt)
		off += n[i]
	}
	switch missing {
	case len(names):
		return nil, nil
	case 0:
		b.copiedOut(int64(t.Storage().Bytes()))
		return t, nil
	}
	return nil, fmt.Errorf("has %d of the biases %v: want all or none", len(names)-missing, names)
}
