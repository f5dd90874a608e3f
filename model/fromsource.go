package model

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/stride-lm/stride/model/mapfile"
	"github.com/stride-lm/stride/tensor"
	"github.com/stride-lm/stride/tensor/kernels"
)

// LoadOptions tunes FromSource, and how a format package opens a file.
type LoadOptions struct {
	// WeightDType is the storage dtype of the weight matrices (token
	// embedding, WQKV, WO, W1, W2, W3, classifier) when the file stores
	// them as floats (F32, F16, BF16): each value is converted once, at
	// load; F16 and BF16 halve the bytes the matmuls stream. Vectors
	// (RMSNorm gains, biases, RoPE frequency factors) always become
	// float32: they are Dim floats each and their precision matters more
	// than their size.
	//
	// A block-quantized matrix (a llama2.c version-2 file's Q8) is kept
	// as stored (Model.Quantized) when WeightDType is F32, the default; F16
	// or BF16 dequantize it (q·scale in float32, as the kernels compute
	// it) and round it once.
	WeightDType tensor.DType
	// AsStored keeps every matrix in the type the file stores it in:
	// F16 and BF16 are not widened and block-quantized types are not
	// dequantized, so the bytes streamed per token are the file's
	// (what a GGUF load wants by default). WeightDType is then ignored and
	// Config.WeightDType reports the token embedding's dtype (F32 for a
	// block type).
	AsStored bool
	// NoMmap makes a format read the file into Go memory instead of
	// mapping it. By default (false) formats map the checkpoint where the
	// platform has mmap and the host is little-endian, and the weights
	// that need no conversion are views of the mapping.
	NoMmap bool
	// Ledger receives the allocations of the weights (may be nil). With a
	// mapped file only the memory the loader allocates is counted (the
	// fused WQKV, converted dtypes), and the bytes it copies out of the
	// mapping are recorded as copies.
	Ledger *tensor.Ledger
}

// hostLittleEndian reports whether the host stores numbers as the
// checkpoint files do; only then can stored bytes be used in place as
// float32 or uint16 weights.
var hostLittleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// FromSource builds the runnable Model of an opened checkpoint, whatever
// its format. It takes ownership of src: when src is a MappedSource with
// a mapping, the Model keeps it (its weights view the mapping) and
// Model.Close closes it; otherwise (the weights are Go memory) FromSource
// closes it once the model is built, and on any error. So a Source whose
// Data views memory that Close releases must implement MappedSource.
// Errors read "checkpoint <src.Name()>: <problem>".
//
// What it does, tensor by tensor (names are the Tensor* constants):
//   - Every weight matrix that needs no conversion is a zero-copy view of
//     its RawTensor.Data (a mapped file's bytes, where aligned); other
//     matrices are converted to opts.WeightDType, or kept block-quantized
//     (see LoadOptions.WeightDType).
//   - Each layer's attn_q, attn_k and attn_v are copied, as rows, into one
//     fused WQKV ((n_heads+2·n_kv_heads)·head_dim, dim), so that one
//     matmul yields [q | k | v]; the optional q/k/v biases (Qwen2) are
//     fused the same way into Layer.BQKV.
//   - output.weight absent means the classifier is tied to the token
//     embedding (Config.SharedClassifier).
//   - rope_freqs.weight, when present, becomes Weights.RopeFreqs.
//
// The whole build runs inside mapfile.CatchFault: a file truncated under
// its mapping gives an error here, not SIGBUS.
func FromSource(src Source, opts LoadOptions) (*Model, error) {
	name := src.Name()
	if opts.WeightDType > tensor.BF16 {
		src.Close()
		return nil, fmt.Errorf("checkpoint %s: unknown weight dtype %d", name, opts.WeightDType)
	}
	b := &builder{src: src, dt: opts.WeightDType, asStored: opts.AsStored, led: opts.Ledger}
	if b.asStored {
		b.dt = tensor.F32 // block types stay quantized; floats keep their own dtype
	}
	if gs, ok := src.(GGMLSource); ok && gs.GGML() {
		b.ggml = true
	}
	if ms, ok := src.(MappedSource); ok {
		b.mapped = ms.MappedBytes()
	}
	var m *Model
	err := mapfile.CatchFault(func() (err error) {
		m, err = b.build()
		return err
	})
	if err != nil {
		src.Close()
		return nil, fmt.Errorf("checkpoint %s: %w", name, err)
	}
	if b.mapped == 0 {
		// The weights are Go memory (RawTensor.Data of a source that
		// reads is new memory): the file is not needed any more.
		if err := src.Close(); err != nil {
			return nil, fmt.Errorf("checkpoint %s: close: %w", name, err)
		}
		return m, nil
	}
	m.source, m.mapped, m.copied = src, b.mapped, b.copied
	return m, nil
}

// builder is the state of one FromSource.
type builder struct {
	src      Source
	cfg      Config
	dt       tensor.DType // the dtype of float matrices (unless asStored)
	asStored bool
	ggml     bool // src is a GGMLSource: matrices run as ggml runs them
	led      *tensor.Ledger
	mapped   int64 // bytes src has mapped; 0 when its Data is Go memory
	copied   int64 // bytes copied out of the mapping so far
	m        *Model
}

func (b *builder) build() (*Model, error) {
	c := b.src.Config()
	c.WeightDType, c.KVDType = b.dt, tensor.F32
	if err := c.Validate(); err != nil {
		return nil, err
	}
	b.cfg = c
	b.m = &Model{}
	w := &b.m.Weights
	var err error
	if w.TokenEmbedding, err = b.matrix(TensorTokenEmbd, c.VocabSize, c.Dim); err != nil {
		return nil, err
	}
	w.Layers = make([]Layer, c.NLayers)
	for l := range w.Layers {
		if err := b.layer(l, &w.Layers[l]); err != nil {
			return nil, err
		}
	}
	if w.FinalNorm, err = b.vector(TensorOutputNorm, c.Dim); err != nil {
		return nil, err
	}
	// No output.weight: the classifier is tied to the embedding.
	w.Classifier, err = b.matrix(TensorOutput, c.VocabSize, c.Dim)
	c.SharedClassifier = errors.Is(err, ErrTensorNotFound)
	if c.SharedClassifier {
		w.Classifier = w.TokenEmbedding
	} else if err != nil {
		return nil, err
	}
	if w.RopeFreqs, err = b.vector(TensorRopeFreqs, c.RopeDims()/2); errors.Is(err, ErrTensorNotFound) {
		w.RopeFreqs = nil
	} else if err != nil {
		return nil, err
	}
	// The biases come with the file (Qwen2), whatever its Config said.
	c.QKVBias = w.Layers[0].BQKV != nil
	b.m.Config = c
	if b.asStored {
		b.m.Config.WeightDType = tensor.F32
		if _, quantized := b.m.Quantized[w.TokenEmbedding]; !quantized {
			b.m.Config.WeightDType = w.TokenEmbedding.DType()
		}
	} else if b.m.Quantized == nil {
		// Dequantized (or never quantized): the matrices are real tensors.
		b.m.Config.WeightDType = b.dt
	} else if b.dt != tensor.F32 {
		return nil, fmt.Errorf("internal: quantized weights kept with weight dtype %v", b.dt)
	}
	return b.m, nil
}

// layer builds block l's weights.
func (b *builder) layer(l int, L *Layer) error {
	c := b.cfg
	hs := c.HeadDim()
	q, kv := c.NHeads*hs, c.NKVHeads*hs
	var err error
	at := func(format string) string { return fmt.Sprintf(format, l) }
	if L.AttnNorm, err = b.vector(at(TensorAttnNorm), c.Dim); err != nil {
		return err
	}
	qkv := []string{at(TensorAttnQ), at(TensorAttnK), at(TensorAttnV)}
	if L.WQKV, err = b.fusedMatrix(c.Dim, qkv, []int{q, kv, kv}); errors.Is(err, errMixedQKV) {
		// Different storage types (a Q4_K_M file's Q6_K attn_v): no one
		// matrix holds them, so they stay three (Layer.WQ, WK, WV).
		if L.WQ, err = b.matrix(qkv[0], q, c.Dim); err != nil {
			return err
		}
		if L.WK, err = b.matrix(qkv[1], kv, c.Dim); err != nil {
			return err
		}
		L.WV, err = b.matrix(qkv[2], kv, c.Dim)
	}
	if err != nil {
		return err
	}
	if L.BQKV, err = b.fusedBias([]string{at(TensorAttnQBias), at(TensorAttnKBias), at(TensorAttnVBias)}, []int{q, kv, kv}); err != nil {
		return err
	}
	if L.WO, err = b.matrix(at(TensorAttnOutput), c.Dim, q); err != nil {
		return err
	}
	if L.FFNNorm, err = b.vector(at(TensorFFNNorm), c.Dim); err != nil {
		return err
	}
	if L.W1, err = b.matrix(at(TensorFFNGate), c.HiddenDim, c.Dim); err != nil {
		return err
	}
	if L.W2, err = b.matrix(at(TensorFFNDown), c.Dim, c.HiddenDim); err != nil {
		return err
	}
	L.W3, err = b.matrix(at(TensorFFNUp), c.HiddenDim, c.Dim)
	return err
}

// raw fetches the named tensor and checks its shape and byte length.
func (b *builder) raw(name string, shape ...int) (RawTensor, error) {
	rt, err := b.src.Tensor(name)
	if err != nil {
		return RawTensor{}, err
	}
	if rt.Name == "" {
		rt.Name = name
	}
	if !sameShape(rt.Shape, shape) {
		return RawTensor{}, fmt.Errorf("tensor %s has shape %s, want %s", name, tensor.FormatInts(rt.Shape), tensor.FormatInts(shape))
	}
	n := int64(1)
	for _, d := range shape {
		n *= int64(d) // each ≤ 2^20 (Config.Validate), at most two of them
	}
	want, ok := rt.Type.Bytes(n, rt.GroupSize)
	if !ok {
		return RawTensor{}, unsupported(rt)
	}
	if int64(len(rt.Data)) != want {
		return RawTensor{}, fmt.Errorf("tensor %s (%s, shape %s) has %d bytes, want %d", name, rt.Type, tensor.FormatInts(shape), len(rt.Data), want)
	}
	return rt, nil
}

func sameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// unsupported is the error for a storage type FromSource cannot run.
func unsupported(rt RawTensor) error {
	return fmt.Errorf("unsupported storage type %s for tensor %s", rt.Type, rt.Name)
}

// isFloat reports whether t stores plain floats (converted element by
// element) rather than blocks.
func isFloat(t StorageType) bool {
	return t == StorageF32 || t == StorageF16 || t == StorageBF16
}

// dtypeOf is the tensor dtype of a float storage type.
func dtypeOf(t StorageType) tensor.DType {
	switch t {
	case StorageF16:
		return tensor.F16
	case StorageBF16:
		return tensor.BF16
	}
	return tensor.F32
}

// copiedOut records n bytes written into new memory from src's data.
func (b *builder) copiedOut(n int64) {
	if b.mapped > 0 {
		b.copied += n
		b.led.RecordCopy(n)
	}
}

// kept records that rt's Data becomes a weight's storage: new memory the
// source allocated when it is not a view of a mapping.
func (b *builder) kept(rt RawTensor) {
	if b.mapped == 0 {
		b.led.RecordAlloc(int64(len(rt.Data)))
	}
}

// floatDType is the dtype a float matrix stored as t becomes.
func (b *builder) floatDType(t StorageType) tensor.DType {
	if b.asStored {
		return dtypeOf(t)
	}
	return b.dt
}

// vector returns the named 1-D tensor of n elements as float32.
func (b *builder) vector(name string, n int) (*tensor.Tensor, error) {
	rt, err := b.raw(name, n)
	if err != nil {
		return nil, err
	}
	if !isFloat(rt.Type) {
		return nil, unsupported(rt)
	}
	return b.floats(rt, tensor.F32, n)
}

// floats returns the float tensor rt of dtype dt and shape: a view of
// rt.Data when it already is dt (and aligned), else a converted copy.
func (b *builder) floats(rt RawTensor, dt tensor.DType, shape ...int) (*tensor.Tensor, error) {
	if dtypeOf(rt.Type) == dt {
		if t := b.view(rt, dt, shape); t != nil {
			b.kept(rt)
			return t, nil
		}
	}
	t, err := tensor.Empty(b.led, dt, shape...)
	if err != nil {
		return nil, err
	}
	convert(t.Storage(), 0, rt)
	b.copiedOut(int64(t.Storage().Bytes()))
	return t, nil
}

// view wraps rt.Data as a tensor of dtype dt without copying, or returns
// nil when its alignment or the host's byte order forbid it.
func (b *builder) view(rt RawTensor, dt tensor.DType, shape []int) *tensor.Tensor {
	size := dt.Size()
	if !hostLittleEndian || len(rt.Data) == 0 || uintptr(unsafe.Pointer(&rt.Data[0]))%uintptr(size) != 0 {
		return nil
	}
	n := len(rt.Data) / size
	var t *tensor.Tensor
	var err error
	if dt == tensor.F32 {
		t, err = tensor.WrapFloat32(b.led, unsafe.Slice((*float32)(unsafe.Pointer(&rt.Data[0])), n), shape...)
	} else {
		t, err = tensor.WrapUint16(b.led, dt, unsafe.Slice((*uint16)(unsafe.Pointer(&rt.Data[0])), n), shape...)
	}
	if err != nil {
		return nil
	}
	return t
}

// convert writes the values of the float tensor rt into st from element
// off on, converting to st's dtype (a value already in st's dtype is
// copied bit for bit).
func convert(st *tensor.Storage, off int, rt RawTensor) {
	le := binary.LittleEndian
	d := rt.Data
	if hostLittleEndian && dtypeOf(rt.Type) == st.DType() {
		// Same dtype: the stored bytes are the host's, copy them as bytes
		// (whatever their alignment).
		var dst []byte
		if st.DType() == tensor.F32 {
			f := st.Float32s()[off:]
			dst = unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(f))), 4*len(f))
		} else {
			h := st.Uint16s()[off:]
			dst = unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(h))), 2*len(h))
		}
		copy(dst, d)
		return
	}
	switch {
	case rt.Type == StorageF32 && st.DType() == tensor.F32:
		dst := st.Float32s()[off:]
		for i := range len(d) / 4 {
			dst[i] = math.Float32frombits(le.Uint32(d[4*i:]))
		}
	case rt.Type == StorageF32:
		dst := st.Uint16s()[off:]
		round := tensor.F16Bits
		if st.DType() == tensor.BF16 {
			round = tensor.BF16Bits
		}
		for i := range len(d) / 4 {
			dst[i] = round(math.Float32frombits(le.Uint32(d[4*i:])))
		}
	case dtypeOf(rt.Type) == st.DType():
		dst := st.Uint16s()[off:]
		for i := range len(d) / 2 {
			dst[i] = le.Uint16(d[2*i:])
		}
	default:
		widen := tensor.F16Float
		if rt.Type == StorageBF16 {
			widen = tensor.BF16Float
		}
		for i := range len(d) / 2 {
			st.Store(off+i, widen(le.Uint16(d[2*i:])))
		}
	}
}

// matrix returns the named (rows, cols) weight matrix: floats in the
// weight dtype, or a block-quantized matrix kept as stored (a meta
// placeholder whose kernel form is in Model.Quantized) or dequantized.
func (b *builder) matrix(name string, rows, cols int) (*tensor.Tensor, error) {
	rt, err := b.raw(name, rows, cols)
	if err != nil {
		return nil, err
	}
	if isFloat(rt.Type) {
		if b.ggmlHalf(rt.Type) {
			return b.ggmlFloats(rt, rows, cols)
		}
		return b.floats(rt, b.floatDType(rt.Type), rows, cols)
	}
	mat, err := b.blockMatrix(rt, rows, cols)
	if err != nil {
		return nil, err
	}
	if b.dt == tensor.F32 {
		b.kept(rt) // the kernels run on rt.Data itself
	}
	return b.quantized(mat, rt.Name)
}

// blockMatrix wraps a block-quantized tensor as a kernel matrix, without
// copying where alignment allows. This is where a block type plugs in:
// one case per StorageType, each returning the kernels.Matrix that runs
// it (it must implement Row, for dequantization and export).
func (b *builder) blockMatrix(rt RawTensor, rows, cols int) (*kernels.Matrix, error) {
	switch rt.Type {
	case StorageLlama2cQ8:
		n := int64(rows) * int64(cols)
		q := unsafe.Slice((*int8)(unsafe.Pointer(&rt.Data[0])), n)
		sb := rt.Data[n:]
		var s []float32
		if hostLittleEndian && uintptr(unsafe.Pointer(&sb[0]))%4 == 0 {
			s = unsafe.Slice((*float32)(unsafe.Pointer(&sb[0])), len(sb)/4)
		} else {
			// The scales follow rows·cols int8s: unaligned when that is
			// not a multiple of 4, so they are copied.
			s = make([]float32, len(sb)/4)
			for i := range s {
				s[i] = math.Float32frombits(binary.LittleEndian.Uint32(sb[4*i:]))
			}
			if b.dt == tensor.F32 {
				b.led.RecordAlloc(int64(len(sb)))
				b.copiedOut(int64(len(sb)))
			}
		}
		return kernels.NewQ8_0(rows, cols, q, s, rt.GroupSize)
	case StorageQ8_0, StorageQ4_0, StorageQ4_1, StorageQ5_0, StorageQ5_1, StorageQ4_K, StorageQ5_K, StorageQ6_K:
		// ggml's blocks, run in place: a decode token streams exactly
		// the file's bytes.
		typ, err := kernels.ParseGGMLType(string(rt.Type))
		if err != nil {
			return nil, err
		}
		return kernels.NewGGMLMatrix(typ, rows, cols, rt.Data)
	}
	return nil, unsupported(rt)
}

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

// ggmlHalf reports whether a float matrix of type t runs as a ggml matrix:
// an F16 or BF16 matrix of a GGMLSource kept as stored (AsStored).
func (b *builder) ggmlHalf(t StorageType) bool {
	return b.ggml && b.asStored && (t == StorageF16 || t == StorageBF16)
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

// MappedBytes reports where m's weights live: mapped is the size of the
// memory-mapped checkpoint they view (0 when they were read into Go
// memory, synthesized, or m was closed) and copied is how many bytes the
// loader still had to copy out of the mapping (the QKV fusion, dtype
// conversions).
func (m *Model) MappedBytes() (mapped, copied int64) {
	if m == nil || m.source == nil {
		return 0, 0
	}
	return m.mapped, m.copied
}

// Close releases the checkpoint behind m's weights (FromSource's Source:
// it unmaps a mapped file). When the weights viewed a mapping, Close also
// drops them, so later use fails with an error instead of touching
// unmapped memory: Engines and Forwards built over m, and any weight
// tensor taken from it, must not be used after Close. A model whose
// weights were read into Go memory, or synthesized, keeps them. Close is
// idempotent but not safe for concurrent use.
func (m *Model) Close() error {
	if m == nil || m.source == nil {
		return nil
	}
	src := m.source
	if m.mapped > 0 {
		m.Weights = Weights{}
		m.Quantized = nil
	}
	m.source, m.mapped, m.copied = nil, 0, 0
	if err := src.Close(); err != nil {
		return fmt.Errorf("model: close checkpoint %s: %w", src.Name(), err)
	}
	return nil
}
