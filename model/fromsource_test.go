package model

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"unsafe"

	"github.com/stride-lm/stride/tensor"
	"github.com/stride-lm/stride/tensor/kernels"
)

// memSource is a Source over tensors held in memory, as a format package
// would hand them to FromSource.
type memSource struct {
	cfg     Config
	tensors map[string]RawTensor
	closed  int
}

func (s *memSource) Name() string   { return "mem.bin" }
func (s *memSource) Config() Config { return s.cfg }
func (s *memSource) Close() error   { s.closed++; return nil }
func (s *memSource) Tensor(name string) (RawTensor, error) {
	rt, ok := s.tensors[name]
	if !ok {
		return RawTensor{}, fmt.Errorf("%w: %s", ErrTensorNotFound, name)
	}
	return rt, nil
}

// encode stores v as typ (F32, F16 or BF16), little-endian.
func encode(v []float32, typ StorageType) []byte {
	le := binary.LittleEndian
	switch typ {
	case StorageF16, StorageBF16:
		out := make([]byte, 2*len(v))
		for i, x := range v {
			b := tensor.F16Bits(x)
			if typ == StorageBF16 {
				b = tensor.BF16Bits(x)
			}
			le.PutUint16(out[2*i:], b)
		}
		return out
	}
	out := make([]byte, 4*len(v))
	for i, x := range v {
		le.PutUint32(out[4*i:], math.Float32bits(x))
	}
	return out
}

// unsafePointer is the address of b's first byte, to tell a view of b
// from a copy.
func unsafePointer(b []byte) unsafe.Pointer { return unsafe.Pointer(&b[0]) }

// sourceOf splits m back into the canonical tensors of a file that stores
// matrices as typ: WQKV into attn_q, attn_k and attn_v rows, output.weight
// only when the classifier is not shared.
func sourceOf(t *testing.T, m *Model, typ StorageType) *memSource {
	t.Helper()
	c := m.Config
	src := &memSource{cfg: c, tensors: map[string]RawTensor{}}
	cfg := src.cfg
	cfg.SharedClassifier = false // FromSource must infer it from output.weight
	src.cfg = cfg
	put := func(name string, x *tensor.Tensor, typ StorageType, r0, r1 int) {
		v, err := x.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		shape := x.Shape()
		if len(shape) == 2 {
			v = v[r0*shape[1] : r1*shape[1]]
			shape = []int{r1 - r0, shape[1]}
		}
		src.tensors[name] = RawTensor{Name: name, Type: typ, Shape: shape, Data: encode(v, typ)}
	}
	w := m.Weights
	put(TensorTokenEmbd, w.TokenEmbedding, typ, 0, c.VocabSize)
	put(TensorOutputNorm, w.FinalNorm, StorageF32, 0, 0)
	if w.Classifier != w.TokenEmbedding {
		put(TensorOutput, w.Classifier, typ, 0, c.VocabSize)
	}
	q, kv := c.NHeads*c.HeadDim(), c.KVDim()
	for l, L := range w.Layers {
		at := func(f string) string { return fmt.Sprintf(f, l) }
		put(at(TensorAttnNorm), L.AttnNorm, StorageF32, 0, 0)
		put(at(TensorAttnQ), L.WQKV, typ, 0, q)
		put(at(TensorAttnK), L.WQKV, typ, q, q+kv)
		put(at(TensorAttnV), L.WQKV, typ, q+kv, q+2*kv)
		put(at(TensorAttnOutput), L.WO, typ, 0, c.Dim)
		put(at(TensorFFNNorm), L.FFNNorm, StorageF32, 0, 0)
		put(at(TensorFFNGate), L.W1, typ, 0, c.HiddenDim)
		put(at(TensorFFNDown), L.W2, typ, 0, c.Dim)
		put(at(TensorFFNUp), L.W3, typ, 0, c.HiddenDim)
	}
	return src
}

// TestFromSource: a model split into canonical tensors and rebuilt is the
// same model, bit for bit, tied or not, and the weights that need no
// conversion are the source's own bytes.
func TestFromSource(t *testing.T) {
	for _, shared := range []bool{true, false} {
		m := mustSynth(t, tinyConfig(shared), 5)
		src := sourceOf(t, m, StorageF32)
		got, err := FromSource(src, LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sameModel(t, m, got)
		if shared != (got.Weights.Classifier == got.Weights.TokenEmbedding) {
			t.Fatalf("shared=%v: classifier tied = %v", shared, !shared)
		}
		emb := src.tensors[TensorTokenEmbd].Data
		if &got.Weights.TokenEmbedding.Storage().Float32s()[0] != (*float32)(unsafePointer(emb)) {
			t.Fatal("an F32 embedding should be a view of the source's bytes")
		}
		if got.Weights.Layers[0].BQKV != nil || got.Weights.RopeFreqs != nil {
			t.Fatal("biases or rope_freqs appeared from nowhere")
		}
		// The weights are Go memory (memSource maps nothing): the source
		// is closed once the model is built, and the model keeps them.
		if src.closed != 1 {
			t.Fatalf("source closed %d times after FromSource, want 1", src.closed)
		}
		if err := got.Close(); err != nil || src.closed != 1 || got.Weights.TokenEmbedding == nil {
			t.Fatalf("Close: %v, source closed %d times", err, src.closed)
		}
	}
}

// TestFromSourceOptional: q/k/v biases fuse into BQKV in q|k|v order,
// rope_freqs becomes RopeFreqs, Config.QKVBias says so, and the forward
// pass takes them (rope_test.go checks what it computes with them).
func TestFromSourceOptional(t *testing.T) {
	m := mustSynth(t, tinyConfig(true), 3)
	src := sourceOf(t, m, StorageF32)
	c := m.Config
	q, kv := c.NHeads*c.HeadDim(), c.KVDim()
	vals := func(n int, base float32) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = base + float32(i)
		}
		return v
	}
	for l := 0; l < c.NLayers; l++ {
		for i, nb := range []struct {
			name string
			n    int
		}{{TensorAttnQBias, q}, {TensorAttnKBias, kv}, {TensorAttnVBias, kv}} {
			name := fmt.Sprintf(nb.name, l)
			src.tensors[name] = RawTensor{Name: name, Type: StorageF32, Shape: []int{nb.n}, Data: encode(vals(nb.n, float32(1000*i)), StorageF32)}
		}
	}
	src.tensors[TensorRopeFreqs] = RawTensor{Name: TensorRopeFreqs, Type: StorageF16, Shape: []int{c.HeadDim() / 2},
		Data: encode(vals(c.HeadDim()/2, 1), StorageF16)}
	got, err := FromSource(src, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := got.Weights.Layers[1].BQKV.Float32s()
	if len(b) != c.QKVRows() || b[0] != 0 || b[q] != 1000 || b[q+kv] != 2000 || b[q+kv-1] != float32(1000+kv-1) {
		t.Fatalf("fused bias %v", b)
	}
	if r, _ := got.Weights.RopeFreqs.Float32s(); len(r) != c.HeadDim()/2 || r[1] != 2 || got.Weights.RopeFreqs.DType() != tensor.F32 {
		t.Fatalf("rope freqs %v", r)
	}
	if err := got.Validate(); err != nil {
		t.Fatal(err)
	}
	if !got.Config.QKVBias {
		t.Error("Config.QKVBias is false on a model with biases")
	}
	if err := newForwardErr(got); err != nil {
		t.Fatalf("NewForward on a model with biases and rope_freqs: %v", err)
	}
	delete(src.tensors, fmt.Sprintf(TensorAttnVBias, 1))
	if _, err := FromSource(src, LoadOptions{}); err == nil || !strings.Contains(err.Error(), "has 2 of the biases") {
		t.Fatalf("two of three biases: got %v", err)
	}
}

// TestFromSourceErrors: each problem is one line naming the checkpoint
// and the tensor.
func TestFromSourceErrors(t *testing.T) {
	m := mustSynth(t, tinyConfig(true), 1)
	cases := []struct {
		name string
		edit func(s *memSource)
		want string
	}{
		{"missing", func(s *memSource) { delete(s.tensors, "blk.1.ffn_up.weight") }, "no such tensor: blk.1.ffn_up.weight"},
		{"shape", func(s *memSource) {
			rt := s.tensors["blk.0.ffn_down.weight"]
			rt.Shape = []int{rt.Shape[1], rt.Shape[0]}
			s.tensors["blk.0.ffn_down.weight"] = rt
		}, "tensor blk.0.ffn_down.weight has shape [24, 16], want [16, 24]"},
		{"length", func(s *memSource) {
			rt := s.tensors["blk.0.attn_k.weight"]
			rt.Data = rt.Data[:len(rt.Data)-4]
			s.tensors["blk.0.attn_k.weight"] = rt
		}, "has 508 bytes, want 512"},
		{"mixed qkv", func(s *memSource) {
			rt := s.tensors["blk.0.attn_v.weight"]
			rt.Type, rt.Data = StorageBF16, rt.Data[:len(rt.Data)/2]
			s.tensors["blk.0.attn_v.weight"] = rt
		}, "tensors blk.0.attn_q.weight (F32) and blk.0.attn_v.weight (BF16) have different storage types"},
		{"unknown type", func(s *memSource) {
			rt := s.tensors["token_embd.weight"]
			rt.Type = StorageType(kernels.TypeIQ2_XXS)
			s.tensors["token_embd.weight"] = rt
		}, "unsupported storage type IQ2_XXS for tensor token_embd.weight"},
		{"bad config", func(s *memSource) { s.cfg.NKVHeads = 3 }, "divisible by n_kv_heads"},
	}
	for _, tc := range cases {
		src := sourceOf(t, m, StorageF32)
		tc.edit(src)
		_, err := FromSource(src, LoadOptions{})
		if err == nil || !strings.HasPrefix(err.Error(), "checkpoint mem.bin: ") || !strings.Contains(err.Error(), tc.want) ||
			strings.Contains(err.Error(), "\n") {
			t.Fatalf("%s: got %v, want %q", tc.name, err, tc.want)
		}
		if src.closed != 1 {
			t.Fatalf("%s: a failed FromSource closed its source %d times", tc.name, src.closed)
		}
		if tc.name == "missing" && !errors.Is(err, ErrTensorNotFound) {
			t.Fatalf("missing: %v does not wrap ErrTensorNotFound", err)
		}
	}
	// The ggml block types run as stored (a meta placeholder with its
	// ggml kernel matrix); a type without a kernel is named, with the
	// tensor.
	c := Config{Dim: 256, HiddenDim: 256, NLayers: 1, NHeads: 4, NKVHeads: 4, VocabSize: 8, SeqLen: 4,
		RopeTheta: 10000, NormEps: 1e-5, SharedClassifier: true}
	src := sourceOf(t, mustSynth(t, c, 1), StorageF32)
	for _, typ := range []StorageType{StorageQ8_0, StorageQ4_0, StorageQ4_1, StorageQ5_0, StorageQ5_1, StorageQ4_K, StorageQ5_K, StorageQ6_K} {
		n, _ := typ.Bytes(256*256, 0)
		src.tensors["blk.0.ffn_up.weight"] = RawTensor{Name: "blk.0.ffn_up.weight", Type: typ, Shape: []int{256, 256}, Data: make([]byte, n)}
		got, err := FromSource(src, LoadOptions{})
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		if q := got.Quantized[got.Weights.Layers[0].W3]; q == nil || !q.GGML || !got.Weights.Layers[0].W3.IsMeta() {
			t.Fatalf("%s: ffn_up is not kept as a ggml matrix", typ)
		}
	}
	src.tensors["blk.0.ffn_up.weight"] = RawTensor{Name: "blk.0.ffn_up.weight", Type: StorageType(kernels.TypeQ3_K), Shape: []int{256, 256}, Data: make([]byte, 110*256)}
	if _, err := FromSource(src, LoadOptions{}); err == nil || !strings.Contains(err.Error(), "unsupported storage type Q3_K for tensor blk.0.ffn_up.weight") {
		t.Fatalf("Q3_K: got %v", err)
	}
	if _, err := FromSource(sourceOf(t, m, StorageF32), LoadOptions{WeightDType: 9}); err == nil || !strings.Contains(err.Error(), "dtype") {
		t.Fatalf("bad dtype: got %v", err)
	}
}
