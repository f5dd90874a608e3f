package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/x448/float16"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/tensor"
	"github.com/stride-lm/stride/tensor/kernels"
)

// Model builds a runnable model from the file: F32, F16 and BF16 matrices
// are zero-copy views of the mapping; ggml Q8_0 matrices become the
// kernels' Q8_0 form (group 32, each fp16 scale widened exactly to
// float32); the fused WQKV of each layer is the one copy, as in
// model.Load. The model's weights are views of the Source's mapping: close
// the Source only after the model is done.
//
// This is the interim builder of this package; model.FromSource, which
// builds any Source, replaces it.
func (s *Source) Model() (*model.Model, error) {
	c := s.cfg
	m := &model.Model{Config: c, Quantized: map[*tensor.Tensor]*kernels.Matrix{}}
	w := &m.Weights
	fail := func(err error) (*model.Model, error) { return nil, fmt.Errorf("gguf: %s: %w", s.f.name, err) }
	var err error
	if w.TokenEmbedding, err = s.matrix(m, model.TensorTokenEmbd); err != nil {
		return fail(err)
	}
	if c.SharedClassifier {
		w.Classifier = w.TokenEmbedding
	} else if w.Classifier, err = s.matrix(m, model.TensorOutput); err != nil {
		return fail(err)
	}
	if w.FinalNorm, err = s.vector(model.TensorOutputNorm); err != nil {
		return fail(err)
	}
	if _, ok := s.f.Tensor(model.TensorRopeFreqs); ok {
		rf, err := s.vector(model.TensorRopeFreqs)
		if err != nil {
			return fail(err)
		}
		w.RopeFreqs = rf.Storage().Float32s()
	}
	w.Layers = make([]model.Layer, c.NLayers)
	for l := range w.Layers {
		L := &w.Layers[l]
		name := func(f string) string { return fmt.Sprintf(f, l) }
		for _, p := range []struct {
			dst  **tensor.Tensor
			name string
		}{{&L.WO, model.TensorAttnOutput}, {&L.W1, model.TensorFFNGate}, {&L.W2, model.TensorFFNDown}, {&L.W3, model.TensorFFNUp}} {
			if *p.dst, err = s.matrix(m, name(p.name)); err != nil {
				return fail(err)
			}
		}
		if L.AttnNorm, err = s.vector(name(model.TensorAttnNorm)); err != nil {
			return fail(err)
		}
		if L.FFNNorm, err = s.vector(name(model.TensorFFNNorm)); err != nil {
			return fail(err)
		}
		if L.WQKV, err = s.fusedQKV(m, l); err != nil {
			return fail(err)
		}
		if c.QKVBias {
			var b []float32
			for _, n := range []string{model.TensorAttnQBias, model.TensorAttnKBias, model.TensorAttnVBias} {
				v, err := s.vector(name(n))
				if err != nil {
					return fail(err)
				}
				b = append(b, v.Storage().Float32s()...)
			}
			if L.BQKV, err = tensor.WrapFloat32(nil, b, len(b)); err != nil {
				return fail(err)
			}
		}
	}
	return m, nil
}

// f32View reinterprets little-endian float32 bytes in place (the mapping
// is page-aligned and tensor offsets are multiples of the alignment), or
// copies them when the host or the slice does not allow a view.
func f32View(b []byte) []float32 {
	n := len(b) / 4
	if n == 0 {
		return []float32{}
	}
	if hostLittleEndian && uintptr(unsafe.Pointer(&b[0]))%4 == 0 {
		return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n)
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// u16View is f32View for 16-bit values.
func u16View(b []byte) []uint16 {
	n := len(b) / 2
	if n == 0 {
		return []uint16{}
	}
	if hostLittleEndian && uintptr(unsafe.Pointer(&b[0]))%2 == 0 {
		return unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), n)
	}
	out := make([]uint16, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return out
}

var hostLittleEndian = func() bool { x := uint16(1); return *(*byte)(unsafe.Pointer(&x)) == 1 }()

func (s *Source) vector(name string) (*tensor.Tensor, error) {
	rt, err := s.Tensor(name)
	if err != nil {
		return nil, err
	}
	if rt.Type != model.StorageF32 || len(rt.Shape) != 1 {
		return nil, fmt.Errorf("tensor %q is %s %v, want a F32 vector", name, rt.Type, rt.Shape)
	}
	return tensor.WrapFloat32(nil, f32View(rt.Data), rt.Shape[0])
}

// q8Blocks splits ggml Q8_0 blocks (an fp16 scale, then 32 int8) into the
// kernels' int8 values and float32 scales.
func q8Blocks(data []byte, q []int8, sc []float32) {
	for b := range sc {
		blk := data[b*34 : (b+1)*34]
		sc[b] = float16.Frombits(binary.LittleEndian.Uint16(blk)).Float32()
		for i, v := range blk[2:] {
			q[b*32+i] = int8(v)
		}
	}
}

func (s *Source) matrix(m *model.Model, name string) (*tensor.Tensor, error) {
	rt, err := s.Tensor(name)
	if err != nil {
		return nil, err
	}
	if len(rt.Shape) != 2 {
		return nil, fmt.Errorf("tensor %q has shape %v, want a matrix", name, rt.Shape)
	}
	rows, cols := rt.Shape[0], rt.Shape[1]
	switch rt.Type {
	case model.StorageF32:
		return tensor.WrapFloat32(nil, f32View(rt.Data), rows, cols)
	case model.StorageF16:
		return tensor.WrapUint16(nil, tensor.F16, u16View(rt.Data), rows, cols)
	case model.StorageBF16:
		return tensor.WrapUint16(nil, tensor.BF16, u16View(rt.Data), rows, cols)
	case model.StorageQ8_0:
		q, sc := make([]int8, rows*cols), make([]float32, rows*cols/32)
		q8Blocks(rt.Data, q, sc)
		return placeholder(m, rows, cols, q, sc)
	}
	return nil, fmt.Errorf("tensor %q: type %s does not run yet (F32, F16, BF16 and Q8_0 do)", name, rt.Type)
}

func placeholder(m *model.Model, rows, cols int, q []int8, sc []float32) (*tensor.Tensor, error) {
	mat, err := kernels.NewQ8_0(rows, cols, q, sc, 32)
	if err != nil {
		return nil, err
	}
	t, err := tensor.Meta(tensor.F32, rows, cols)
	if err != nil {
		return nil, err
	}
	m.Quantized[t] = mat
	return t, nil
}

// fusedQKV concatenates layer l's attn_q, attn_k and attn_v rows into one
// ((H+2·KVH)·D, dim) matrix. The three must share a type.
func (s *Source) fusedQKV(m *model.Model, l int) (*tensor.Tensor, error) {
	c := s.cfg
	var parts []model.RawTensor
	for _, n := range []string{model.TensorAttnQ, model.TensorAttnK, model.TensorAttnV} {
		rt, err := s.Tensor(fmt.Sprintf(n, l))
		if err != nil {
			return nil, err
		}
		if len(parts) > 0 && rt.Type != parts[0].Type {
			return nil, fmt.Errorf("layer %d: attn_q is %s but %s is %s; mixed q/k/v types do not run yet", l, parts[0].Type, rt.Name, rt.Type)
		}
		parts = append(parts, rt)
	}
	rows, cols := c.QKVRows(), c.Dim
	switch parts[0].Type {
	case model.StorageF32:
		out := make([]float32, 0, rows*cols)
		for _, p := range parts {
			out = append(out, f32View(p.Data)...)
		}
		return tensor.WrapFloat32(nil, out, rows, cols)
	case model.StorageF16, model.StorageBF16:
		out := make([]uint16, 0, rows*cols)
		for _, p := range parts {
			out = append(out, u16View(p.Data)...)
		}
		dt := tensor.F16
		if parts[0].Type == model.StorageBF16 {
			dt = tensor.BF16
		}
		return tensor.WrapUint16(nil, dt, out, rows, cols)
	case model.StorageQ8_0:
		q, sc := make([]int8, rows*cols), make([]float32, rows*cols/32)
		off := 0
		for _, p := range parts {
			n := p.Shape[0] * p.Shape[1]
			q8Blocks(p.Data, q[off:off+n], sc[off/32:(off+n)/32])
			off += n
		}
		return placeholder(m, rows, cols, q, sc)
	}
	return nil, fmt.Errorf("layer %d: attn_q type %s does not run yet (F32, F16, BF16 and Q8_0 do)", l, parts[0].Type)
}
