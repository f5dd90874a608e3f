package gguf

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/tensor/kernels"
)

// Architectures is the list of general.architecture values that load as a
// model. Any GGUF, whatever its architecture, still serves as a tokenizer.
var Architectures = []string{"llama", "qwen2"}

// Source is a GGUF file as a model.Source: the architecture its metadata
// declares and its tensors, as stored (no conversion), under llama.cpp's
// names, which are model's canonical names.
type Source struct {
	f    *File
	arch string
	cfg  model.Config
}

// OpenSource opens path as a model. Its errors name the file and what was
// wrong: an unsupported architecture, a missing hyperparameter, a missing
// or misshapen tensor, a tensor type Stride does not run.
func OpenSource(path string) (*Source, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	return sourceOf(f)
}

// OpenSourceFile is OpenSource on an opened file (model/checkpoint's
// dispatch by magic); opts.NoMmap reads the file instead of mapping it.
func OpenSourceFile(fd *os.File, name string, opts model.LoadOptions) (*Source, error) {
	f, err := OpenFile(fd, name, opts.NoMmap)
	if err != nil {
		return nil, err
	}
	return sourceOf(f)
}

func sourceOf(f *File) (*Source, error) {
	s, err := NewSource(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return s, nil
}

// MappedBytes is the size of the mapping the tensors view (0 when the
// file was read into memory): model.FromSource counts what it copies
// out of it.
func (s *Source) MappedBytes() int64 {
	if !s.f.Mapped() {
		return 0
	}
	return s.f.Size()
}

// NewSource reads f's model configuration and checks its tensors. The
// Source owns f from then on: Source.Close closes it.
func NewSource(f *File) (*Source, error) {
	cfg, arch, err := ConfigOf(f)
	if err != nil {
		return nil, err
	}
	s := &Source{f: f, arch: arch, cfg: cfg}
	if err := s.checkTensors(); err != nil {
		return nil, err
	}
	if err := s.checkStrict(); err != nil {
		return nil, err
	}
	return s, nil
}

// Name is the file's path.
func (s *Source) Name() string { return s.f.name }

// Config is the architecture the metadata declares.
func (s *Source) Config() model.Config { return s.cfg }

// Arch is general.architecture ("llama" or "qwen2").
func (s *Source) Arch() string { return s.arch }

// File is the underlying GGUF file (for its tokenizer metadata).
func (s *Source) File() *File { return s.f }

// GGML is true: a GGUF's weights are computed as ggml computes them (see
// model.GGMLSource), F16 matrices included.
func (s *Source) GGML() bool { return true }

// Close unmaps the file.
func (s *Source) Close() error { return s.f.Close() }

// StorageType returns model's storage type for a ggml type, or an error
// naming the type when Stride does not run it.
func StorageType(t kernels.GGMLType) (model.StorageType, error) {
	if !t.Supported() {
		names := make([]string, len(kernels.SupportedGGMLTypes))
		for i, s := range kernels.SupportedGGMLTypes {
			names[i] = s.String()
		}
		return 0, fmt.Errorf("ggml type %s is not supported (%s are)", t, strings.Join(names, ", "))
	}
	return model.StorageType(t), nil
}

// Tensor returns the named tensor as stored: its bytes are a view of the
// mapping, its shape in PyTorch order.
func (s *Source) Tensor(name string) (model.RawTensor, error) {
	ti, ok := s.f.Tensor(name)
	if !ok {
		return model.RawTensor{}, fmt.Errorf("gguf: %s: tensor %q: %w", s.f.name, name, model.ErrTensorNotFound)
	}
	st, err := StorageType(ti.Type)
	if err != nil {
		return model.RawTensor{}, fmt.Errorf("gguf: %s: tensor %q: %w", s.f.name, name, err)
	}
	data, err := s.f.Data(ti)
	if err != nil {
		return model.RawTensor{}, err
	}
	return model.RawTensor{Name: name, Type: st, Shape: slices.Clone(ti.Shape), Data: data}, nil
}

// ConfigOf maps f's metadata to a model configuration:
//
//	{arch}.embedding_length              Dim
//	{arch}.feed_forward_length           HiddenDim
//	{arch}.block_count                   NLayers
//	{arch}.attention.head_count          NHeads
//	{arch}.attention.head_count_kv       NKVHeads (default: NHeads)
//	{arch}.context_length                SeqLen
//	{arch}.attention.layer_norm_rms_epsilon  NormEps
//	{arch}.rope.freq_base                RopeTheta (default 10000)
//	{arch}.rope.dimension_count          RopeDim (default: head_dim)
//	{arch}.rope.scaling.type/.factor     RopeScale ("linear"; "none" is none)
//	rows of token_embd.weight            VocabSize
//	output.weight absent                 SharedClassifier
//	blk.0.attn_q.bias present            QKVBias
//
// RopeStyle follows the architecture as llama.cpp's llama_model_rope_type
// does: NORM for llama, NEOX for qwen2. Llama 3's frequency factors are
// the rope_freqs tensor, not metadata. It also returns the architecture.
func ConfigOf(f *File) (model.Config, string, error) {
	arch, err := f.String("general.architecture")
	if err != nil {
		return model.Config{}, "", err
	}
	k := &archKeys{f: f, arch: arch}
	if !slices.Contains(Architectures, arch) {
		return model.Config{}, "", k.fail("architecture %q is not supported as a model (%s are; the file can still serve as a tokenizer)", arch, strings.Join(Architectures, " and "))
	}
	c, err := k.shape()
	if err != nil {
		return model.Config{}, "", err
	}
	if arch == "qwen2" {
		c.RopeStyle = model.RopeNeox
	}
	if c.RopeScale, err = k.ropeScale(); err != nil {
		return model.Config{}, "", err
	}
	if err := k.tensorShape(&c); err != nil {
		return model.Config{}, "", err
	}
	if err := c.Validate(); err != nil {
		return model.Config{}, "", k.fail("%w", err)
	}
	return c, arch, nil
}

// archKeys reads the {arch}.* hyperparameters of f, keeping the first
// error so that a Config literal can read its fields in one go.
type archKeys struct {
	f    *File
	arch string
	err  error
}

// fail is an error about f, prefixed with its name.
func (k *archKeys) fail(format string, a ...any) error {
	return fmt.Errorf("gguf: %s: "+format, append([]any{k.f.name}, a...)...)
}

// uint reads {arch}.key as an int within int32, def when an optional key
// is absent.
func (k *archKeys) uint(key string, def int, required bool) int {
	v, err := k.f.Uint(k.arch + "." + key)
	if errors.Is(err, ErrNotFound) && !required {
		return def
	}
	if err == nil && v > math.MaxInt32 {
		err = k.fail("%s.%s = %d is beyond any model", k.arch, key, v)
	}
	if err != nil && k.err == nil {
		k.err = err
	}
	return int(v)
}

// float reads {arch}.key as a finite float64, def when an optional key is
// absent.
func (k *archKeys) float(key string, def float64, required bool) float64 {
	v, err := k.f.Float(k.arch + "." + key)
	if errors.Is(err, ErrNotFound) && !required {
		return def
	}
	if err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
		err = k.fail("%s.%s is %g", k.arch, key, v)
	}
	if err != nil && k.err == nil {
		k.err = err
	}
	return v
}

// shape reads the model's dimensions, heads and RoPE base, refusing a
// mixture of experts and per-head key/value lengths other than
// embedding_length/head_count.
func (k *archKeys) shape() (model.Config, error) {
	c := model.Config{
		Dim:       k.uint("embedding_length", 0, true),
		HiddenDim: k.uint("feed_forward_length", 0, true),
		NLayers:   k.uint("block_count", 0, true),
		NHeads:    k.uint("attention.head_count", 0, true),
		SeqLen:    k.uint("context_length", 0, true),
		NormEps:   k.float("attention.layer_norm_rms_epsilon", 0, true),
		RopeTheta: k.float("rope.freq_base", 10000, false),
	}
	c.NKVHeads = k.uint("attention.head_count_kv", c.NHeads, false)
	c.RopeDim = k.uint("rope.dimension_count", 0, false)
	if experts := k.uint("expert_count", 0, false); experts > 0 {
		return model.Config{}, k.fail("%s.expert_count = %d: mixture-of-experts models are not supported", k.arch, experts)
	}
	if k.err != nil {
		return model.Config{}, k.err
	}
	if c.NHeads > 0 && c.Dim%c.NHeads == 0 {
		hs := c.Dim / c.NHeads
		if c.RopeDim == hs {
			c.RopeDim = 0 // the whole head: the Config default
		}
		for _, key := range []string{"attention.key_length", "attention.value_length"} {
			if v := k.uint(key, hs, false); k.err != nil {
				return model.Config{}, k.err
			} else if v != hs {
				return model.Config{}, k.fail("%s.%s = %d differs from embedding_length/head_count = %d, which is not supported", k.arch, key, v, hs)
			}
		}
	}
	return c, nil
}

// ropeScale is the linear RoPE scale factor, 0 for none. It reads
// rope.scaling.type ("none", "linear", "yarn", "longrope") with
// rope.scaling.factor, or the older rope.scale_linear.
func (k *archKeys) ropeScale() (float64, error) {
	scale := 0.0
	typ, err := k.f.String(k.arch + ".rope.scaling.type")
	switch {
	case errors.Is(err, ErrNotFound):
		typ = "none"
		if v := k.float("rope.scale_linear", 1, false); k.err != nil {
			return 0, k.err
		} else if v != 1 {
			typ, scale = "linear", v
		}
	case err != nil:
		return 0, err
	}
	switch typ {
	case "none":
	case "linear":
		if scale == 0 {
			scale = k.float("rope.scaling.factor", 1, true)
			if k.err != nil {
				return 0, k.err
			}
		}
		if !(scale > 0) {
			return 0, k.fail("%s.rope.scaling.factor = %g must be positive", k.arch, scale)
		}
	default:
		return 0, k.fail("RoPE scaling type %q is not supported (none and linear are; Llama 3's is the rope_freqs tensor)", typ)
	}
	return scale, nil
}

// tensorShape sets what the tensors rather than the metadata say: the
// vocabulary size (rows of token_embd), a classifier shared with the
// embedding (no output tensor) and q/k/v biases.
func (k *archKeys) tensorShape(c *model.Config) error {
	f := k.f
	emb, ok := f.Tensor(model.TensorTokenEmbd)
	if !ok {
		if len(f.Tensors) == 0 {
			return k.fail("no tensors: a vocab-only file serves as a tokenizer, not a model")
		}
		return k.fail("no tensor %q", model.TensorTokenEmbd)
	}
	if len(emb.Shape) != 2 {
		return k.fail("tensor %q has shape %v, want [vocab, %d]", model.TensorTokenEmbd, emb.Shape, c.Dim)
	}
	c.VocabSize = emb.Shape[0]
	_, hasOutput := f.Tensor(model.TensorOutput)
	c.SharedClassifier = !hasOutput
	_, c.QKVBias = f.Tensor(fmt.Sprintf(model.TensorAttnQBias, 0))
	return nil
}

// checkTensors verifies that every tensor the configuration implies is
// present with its shape and a type Stride runs, so a bad file fails at
// open with the tensor's name rather than at the first matmul.
func (s *Source) checkTensors() error {
	for _, w := range s.wantedTensors() {
		ti, ok := s.f.Tensor(w.name)
		if !ok {
			return fmt.Errorf("gguf: %s: no tensor %q", s.f.name, w.name)
		}
		if !slices.Equal(ti.Shape, w.shape) {
			return fmt.Errorf("gguf: %s: tensor %q has shape %v, want %v", s.f.name, w.name, ti.Shape, w.shape)
		}
		if _, err := StorageType(ti.Type); err != nil {
			return fmt.Errorf("gguf: %s: tensor %q: %w", s.f.name, w.name, err)
		}
		if len(w.shape) == 1 && ti.Type != kernels.TypeF32 {
			return fmt.Errorf("gguf: %s: tensor %q is %s; norms, biases and rope_freqs must be F32", s.f.name, w.name, ti.Type)
		}
	}
	return nil
}

// want is a tensor the model reads, with the shape it must have.
type want struct {
	name  string
	shape []int
}

// wantedTensors lists every tensor the configured model reads.
func (s *Source) wantedTensors() []want {
	c := s.cfg
	hs := c.HeadDim()
	qDim, kvDim := c.NHeads*hs, c.KVDim()
	ws := []want{{model.TensorTokenEmbd, []int{c.VocabSize, c.Dim}}, {model.TensorOutputNorm, []int{c.Dim}}}
	if !c.SharedClassifier {
		ws = append(ws, want{model.TensorOutput, []int{c.VocabSize, c.Dim}})
	}
	for l := 0; l < c.NLayers; l++ {
		for _, w := range []want{
			{model.TensorAttnNorm, []int{c.Dim}}, {model.TensorAttnQ, []int{qDim, c.Dim}},
			{model.TensorAttnK, []int{kvDim, c.Dim}}, {model.TensorAttnV, []int{kvDim, c.Dim}},
			{model.TensorAttnOutput, []int{c.Dim, qDim}}, {model.TensorFFNNorm, []int{c.Dim}},
			{model.TensorFFNGate, []int{c.HiddenDim, c.Dim}}, {model.TensorFFNUp, []int{c.HiddenDim, c.Dim}},
			{model.TensorFFNDown, []int{c.Dim, c.HiddenDim}},
		} {
			ws = append(ws, want{fmt.Sprintf(w.name, l), w.shape})
		}
		if c.QKVBias {
			ws = append(ws, want{fmt.Sprintf(model.TensorAttnQBias, l), []int{qDim}},
				want{fmt.Sprintf(model.TensorAttnKBias, l), []int{kvDim}},
				want{fmt.Sprintf(model.TensorAttnVBias, l), []int{kvDim}})
		}
	}
	if _, ok := s.f.Tensor(model.TensorRopeFreqs); ok {
		ws = append(ws, want{model.TensorRopeFreqs, []int{c.RopeDims() / 2}})
	}
	return ws
}

// StoredTypes names the storage types of the weight matrices (the 2-D
// tensors), most frequent first, joined by "+": "Q8_0+F16" for a Q8_0
// file whose ffn_down fell back to F16, "Q4_K+Q6_K" for a Q4_K_M one.
// infer bench reports it as the weights column.
func (s *Source) StoredTypes() string {
	count := map[kernels.GGMLType]int{}
	var order []kernels.GGMLType
	for _, t := range s.f.Tensors {
		if len(t.Shape) != 2 {
			continue
		}
		if count[t.Type] == 0 {
			order = append(order, t.Type)
		}
		count[t.Type]++
	}
	slices.SortStableFunc(order, func(a, b kernels.GGMLType) int { return count[b] - count[a] })
	names := make([]string, len(order))
	for i, t := range order {
		names[i] = t.String()
	}
	return strings.Join(names, "+")
}

// StopTokens returns the ids generation stops at: the end-of-sequence and
// end-of-turn ids the metadata names (tokenizer.ggml.eos_token_id,
// eot_token_id, eom_token_id) and the beginning-of-sequence id, since a
// model that emits BOS has started a new document. Ids outside the
// vocabulary (writers use 0xFFFFFFFF for "none") are left out.
func (s *Source) StopTokens() []int {
	return StopTokens(s.f, s.cfg.VocabSize)
}

// StopTokens is Source.StopTokens for any file, with vocab the vocabulary
// size ids must be below.
func StopTokens(f *File, vocab int) []int {
	var ids []int
	for _, k := range []string{"eos", "eot", "eom", "bos"} {
		v, err := f.Uint("tokenizer.ggml." + k + "_token_id")
		if err != nil || v >= uint64(vocab) {
			continue
		}
		if !slices.Contains(ids, int(v)) {
			ids = append(ids, int(v))
		}
	}
	return ids
}
