package model

import (
	"errors"
	"fmt"

	"github.com/stride-lm/stride/model/mapfile"
	"github.com/stride-lm/stride/tensor"
)

// This file assembles a Model from a Source: which stored tensor becomes
// which weight, and the accounting of what the load maps, copies and
// allocates. How each tensor's bytes become a weight is in
// fromsource_floats.go (F32, F16, BF16), fromsource_quantized.go (matrices
// the kernels run as stored) and fromsource_fuse.go (the fused QKV); the
// storage types themselves are in storage.go.

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
