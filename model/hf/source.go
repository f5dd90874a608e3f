package hf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/safetensors"
	"github.com/stride-lm/stride/tensor"
)

// Rotary is how a Source runs the rotary embedding of a Hugging Face
// checkpoint (see the package documentation).
type Rotary int

const (
	// RotaryAuto is what llama.cpp's converter does: RotaryUnpermute for
	// LlamaForCausalLM (whose llama.cpp and llama2.c forms rotate pairs),
	// RotaryNeox for Qwen2ForCausalLM (which llama.cpp runs as stored).
	// The model then exports to GGUF and llama2.c files in their own
	// layouts, and a Llama directory computes exactly what its llama2.c
	// or GGUF conversion computes.
	RotaryAuto Rotary = iota
	// RotaryNeox keeps q_proj and k_proj as stored and rotates halves.
	RotaryNeox
	// RotaryUnpermute reorders q_proj's and k_proj's rows (and biases)
	// back to Meta's interleaved layout at load and rotates pairs.
	RotaryUnpermute
)

// Options are the Hugging Face specific choices of Open.
type Options struct {
	Rotary Rotary
}

// The file names of a checkpoint directory.
const (
	ConfigFile           = "config.json"
	GenerationConfigFile = "generation_config.json"
	WeightsFile          = "model.safetensors"
	IndexFile            = "model.safetensors.index.json"
)

// Source is a Hugging Face checkpoint directory as a model.Source.
type Source struct {
	dir    string
	cfg    Config
	mcfg   model.Config
	opts   Options
	files  []*safetensors.File
	where  map[string]tensorRef // canonical name → stored tensor
	stops  []int
	mapped int64
	led    *tensor.Ledger
	// permuted counts the bytes RotaryUnpermute copied.
	permuted int64
	// sampling is generation_config.json's sampling defaults.
	sampling Sampling
}

// tensorRef is where one canonical tensor is stored.
type tensorRef struct {
	file *safetensors.File
	info safetensors.TensorInfo
	// heads is the head count whose rows RotaryUnpermute reorders (q:
	// num_attention_heads, k: num_key_value_heads), 0 for other tensors.
	heads int
}

// Open opens the checkpoint directory dir: config.json (and
// generation_config.json when present), then model.safetensors or the
// shards model.safetensors.index.json names, every header validated and
// every tensor Stride needs checked for presence, shape and dtype.
// lopts.NoMmap reads the files instead of mapping them; lopts.Ledger
// receives RotaryUnpermute's copies.
func Open(dir string, lopts model.LoadOptions, opts Options) (*Source, error) {
	s, err := open(dir, lopts, opts)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", dir, err)
	}
	return s, nil
}

func open(dir string, lopts model.LoadOptions, opts Options) (*Source, error) {
	if opts.Rotary < RotaryAuto || opts.Rotary > RotaryUnpermute {
		return nil, fmt.Errorf("unknown rotary option %d", opts.Rotary)
	}
	if st, err := os.Stat(dir); err != nil {
		return nil, err
	} else if !st.IsDir() {
		return nil, errors.New("not a directory")
	}
	var raw rawConfig
	if err := readJSON(filepath.Join(dir, ConfigFile), &raw); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("is a directory without %s, so not a Hugging Face checkpoint", ConfigFile)
		}
		return nil, err
	}
	cfg, err := raw.config()
	if err != nil {
		return nil, err
	}
	gen, err := readGenerationConfig(filepath.Join(dir, GenerationConfigFile))
	if err != nil {
		return nil, err
	}
	if opts.Rotary == RotaryAuto {
		opts.Rotary = RotaryNeox
		if cfg.Architecture == "LlamaForCausalLM" {
			opts.Rotary = RotaryUnpermute
		}
	}
	s := &Source{dir: dir, cfg: cfg, mcfg: cfg.Model, opts: opts, where: map[string]tensorRef{}}
	s.led = lopts.Ledger
	if opts.Rotary == RotaryUnpermute {
		s.mcfg.RopeStyle = model.RopeNorm
	}
	s.stops = stopTokens(cfg, gen, cfg.Model.VocabSize)
	if gen != nil {
		s.sampling = gen.Sampling
	}
	if err := s.openWeights(lopts.NoMmap); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.checkTensors(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// shardName is what an index may name: a file in the directory itself.
var shardName = regexp.MustCompile(`^[A-Za-z0-9._-]+\.safetensors$`)

// openWeights opens model.safetensors, or the shards of the index, and
// maps every stored tensor to its canonical name.
func (s *Source) openWeights(noMmap bool) error {
	var shards []string
	weightMap := map[string]string{}
	var index struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	err := readJSON(filepath.Join(s.dir, IndexFile), &index)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		shards = []string{WeightsFile}
	case err != nil:
		return err
	default:
		if len(index.WeightMap) == 0 {
			return fmt.Errorf("%s has no weight_map", IndexFile)
		}
		for _, name := range slices.Sorted(maps.Keys(index.WeightMap)) {
			shard := index.WeightMap[name]
			if !shardName.MatchString(shard) || shard == "." || shard == ".." {
				return fmt.Errorf("%s: tensor %q is in %q, which is not a .safetensors file of the directory", IndexFile, name, shard)
			}
			if !slices.Contains(shards, shard) {
				shards = append(shards, shard)
			}
			weightMap[name] = shard
		}
		slices.Sort(shards)
	}
	byShard := map[string]*safetensors.File{}
	for _, shard := range shards {
		f, err := safetensors.Open(filepath.Join(s.dir, shard), noMmap)
		if err != nil {
			return err
		}
		s.files = append(s.files, f)
		byShard[shard] = f
		if f.Mapped() {
			s.mapped += f.Size()
		}
	}
	add := func(f *safetensors.File, ti safetensors.TensorInfo) error {
		canon, heads, err := s.canonical(ti.Name)
		if err != nil {
			return fmt.Errorf("%s: %w", f.Name(), err)
		}
		if canon == "" {
			return nil // stored but not used (rotary_emb.inv_freq, a tied lm_head)
		}
		if prev, ok := s.where[canon]; ok {
			return fmt.Errorf("tensor %q is stored twice (%s and %s)", ti.Name, prev.file.Name(), f.Name())
		}
		s.where[canon] = tensorRef{file: f, info: ti, heads: heads}
		return nil
	}
	if len(weightMap) == 0 {
		for _, ti := range s.files[0].Tensors {
			if err := add(s.files[0], ti); err != nil {
				return err
			}
		}
		return nil
	}
	// Only the shard the index names counts for each tensor; a tensor the
	// index names must be in that shard. (Sorted, so that of several
	// problems the same one is reported every time.)
	for _, name := range slices.Sorted(maps.Keys(weightMap)) {
		shard := weightMap[name]
		f := byShard[shard]
		ti, ok := f.Tensor(name)
		if !ok {
			return fmt.Errorf("%s names tensor %q in %s, which does not hold it", IndexFile, name, shard)
		}
		if err := add(f, ti); err != nil {
			return err
		}
	}
	return nil
}

// layerNames maps the per-layer Hugging Face suffixes to canonical names.
var layerNames = map[string]string{
	"input_layernorm.weight":          model.TensorAttnNorm,
	"self_attn.q_proj.weight":         model.TensorAttnQ,
	"self_attn.k_proj.weight":         model.TensorAttnK,
	"self_attn.v_proj.weight":         model.TensorAttnV,
	"self_attn.q_proj.bias":           model.TensorAttnQBias,
	"self_attn.k_proj.bias":           model.TensorAttnKBias,
	"self_attn.v_proj.bias":           model.TensorAttnVBias,
	"self_attn.o_proj.weight":         model.TensorAttnOutput,
	"post_attention_layernorm.weight": model.TensorFFNNorm,
	"mlp.gate_proj.weight":            model.TensorFFNGate,
	"mlp.up_proj.weight":              model.TensorFFNUp,
	"mlp.down_proj.weight":            model.TensorFFNDown,
}

// canonical maps a stored name to its canonical name ("" for a tensor
// that is stored but not used) and, for q and k, the head count of the
// rotary permutation. A tensor the architecture does not have is an
// error: running without it would compute something else.
func (s *Source) canonical(name string) (string, int, error) {
	c := s.cfg.Model
	switch name {
	case "model.embed_tokens.weight":
		return model.TensorTokenEmbd, 0, nil
	case "model.norm.weight":
		return model.TensorOutputNorm, 0, nil
	case "lm_head.weight":
		if s.cfg.Tied {
			return "", 0, nil // tie_word_embeddings: transformers ignores it
		}
		return model.TensorOutput, 0, nil
	}
	if rest, ok := strings.CutPrefix(name, "model.layers."); ok {
		if i := strings.IndexByte(rest, '.'); i > 0 {
			l, err := strconv.Atoi(rest[:i])
			suffix := rest[i+1:]
			if err == nil && l >= 0 && l < c.NLayers && strconv.Itoa(l) == rest[:i] {
				if suffix == "self_attn.rotary_emb.inv_freq" {
					return "", 0, nil // older checkpoints store the frequencies; config.json defines them
				}
				if f, ok := layerNames[suffix]; ok && (c.QKVBias || !strings.HasSuffix(suffix, ".bias")) {
					heads := 0
					switch f {
					case model.TensorAttnQ, model.TensorAttnQBias:
						heads = c.NHeads
					case model.TensorAttnK, model.TensorAttnKBias:
						heads = c.NKVHeads
					}
					return fmt.Sprintf(f, l), heads, nil
				}
			}
		}
	}
	return "", 0, fmt.Errorf("tensor %q is not part of %s as Stride runs it", name, s.cfg.Architecture)
}

// checkTensors verifies that every tensor the configuration implies is
// present with its shape and a float dtype.
func (s *Source) checkTensors() error {
	c := s.mcfg
	hs := c.HeadDim()
	qDim, kvDim := c.NHeads*hs, c.KVDim()
	type want struct {
		name, hfName string
		shape        []int
	}
	ws := []want{{model.TensorTokenEmbd, "model.embed_tokens.weight", []int{c.VocabSize, c.Dim}},
		{model.TensorOutputNorm, "model.norm.weight", []int{c.Dim}}}
	if !s.cfg.Tied {
		ws = append(ws, want{model.TensorOutput, "lm_head.weight (tie_word_embeddings is false)", []int{c.VocabSize, c.Dim}})
	}
	for l := 0; l < c.NLayers; l++ {
		p := fmt.Sprintf("model.layers.%d.", l)
		ls := []want{
			{model.TensorAttnNorm, "input_layernorm.weight", []int{c.Dim}},
			{model.TensorAttnQ, "self_attn.q_proj.weight", []int{qDim, c.Dim}},
			{model.TensorAttnK, "self_attn.k_proj.weight", []int{kvDim, c.Dim}},
			{model.TensorAttnV, "self_attn.v_proj.weight", []int{kvDim, c.Dim}},
			{model.TensorAttnOutput, "self_attn.o_proj.weight", []int{c.Dim, qDim}},
			{model.TensorFFNNorm, "post_attention_layernorm.weight", []int{c.Dim}},
			{model.TensorFFNGate, "mlp.gate_proj.weight", []int{c.HiddenDim, c.Dim}},
			{model.TensorFFNUp, "mlp.up_proj.weight", []int{c.HiddenDim, c.Dim}},
			{model.TensorFFNDown, "mlp.down_proj.weight", []int{c.Dim, c.HiddenDim}},
		}
		if c.QKVBias {
			ls = append(ls, want{model.TensorAttnQBias, "self_attn.q_proj.bias", []int{qDim}},
				want{model.TensorAttnKBias, "self_attn.k_proj.bias", []int{kvDim}},
				want{model.TensorAttnVBias, "self_attn.v_proj.bias", []int{kvDim}})
		}
		for _, w := range ls {
			ws = append(ws, want{fmt.Sprintf(w.name, l), p + w.hfName, w.shape})
		}
	}
	for _, w := range ws {
		ref, ok := s.where[w.name]
		if !ok {
			return fmt.Errorf("no tensor %s", w.hfName)
		}
		if !slices.Equal(ref.info.Shape, w.shape) {
			return fmt.Errorf("tensor %s has shape %v, want %v", ref.info.Name, ref.info.Shape, w.shape)
		}
		if _, err := storageType(ref.info); err != nil {
			return err
		}
	}
	return nil
}

// storageType is model's name for a stored dtype Stride runs.
func storageType(ti safetensors.TensorInfo) (model.StorageType, error) {
	switch ti.DType {
	case safetensors.F32:
		return model.StorageF32, nil
	case safetensors.F16:
		return model.StorageF16, nil
	case safetensors.BF16:
		return model.StorageBF16, nil
	}
	return 0, fmt.Errorf("tensor %s has dtype %s; F32, F16 and BF16 are supported", ti.Name, ti.DType)
}

// Name is the directory's path.
func (s *Source) Name() string { return s.dir }

// Config is the architecture config.json declares, with the RoPE style of
// the rotary option.
func (s *Source) Config() model.Config { return s.mcfg }

// Rotary is the rotary route the Source runs (never RotaryAuto).
func (s *Source) Rotary() Rotary { return s.opts.Rotary }

// HFConfig is config.json as read.
func (s *Source) HFConfig() Config { return s.cfg }

// StopTokens are the ids generation stops at: generation_config.json's
// eos_token_id (an int or a list; else config.json's) and the BOS id.
func (s *Source) StopTokens() []int { return slices.Clone(s.stops) }

// Sampling is generation_config.json's sampling defaults (all nil when
// the directory has none).
func (s *Source) Sampling() Sampling { return s.sampling }

// MappedBytes is the size of the mapped shards (0 when read).
func (s *Source) MappedBytes() int64 { return s.mapped }

// PermutedBytes is how many bytes RotaryUnpermute has reordered so far
// (its load-time work; 0 with RotaryNeox).
func (s *Source) PermutedBytes() int64 { return s.permuted }

// Tensor returns the named canonical tensor: a view of its shard, or for
// q and k under RotaryUnpermute a reordered copy. rope_freqs.weight is
// Llama 3's frequency factors, computed from config.json.
func (s *Source) Tensor(name string) (model.RawTensor, error) {
	if name == model.TensorRopeFreqs && s.cfg.RopeFreqs != nil {
		data := make([]byte, 4*len(s.cfg.RopeFreqs))
		for i, f := range s.cfg.RopeFreqs {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(f))
		}
		return model.RawTensor{Name: name, Type: model.StorageF32, Shape: []int{len(s.cfg.RopeFreqs)}, Data: data}, nil
	}
	ref, ok := s.where[name]
	if !ok {
		return model.RawTensor{}, fmt.Errorf("hf: %s: tensor %q: %w", s.dir, name, model.ErrTensorNotFound)
	}
	st, err := storageType(ref.info)
	if err != nil {
		return model.RawTensor{}, err
	}
	data, err := ref.file.Data(ref.info)
	if err != nil {
		return model.RawTensor{}, err
	}
	if ref.heads > 0 && s.opts.Rotary == RotaryUnpermute {
		data, err = unpermute(data, ref.info.Shape, ref.heads)
		if err != nil {
			return model.RawTensor{}, fmt.Errorf("hf: %s: tensor %s: %w", s.dir, ref.info.Name, err)
		}
		s.permuted += int64(len(data))
		s.led.RecordAlloc(int64(len(data)))
		s.led.RecordCopy(int64(len(data)))
	}
	return model.RawTensor{Name: name, Type: st, Shape: slices.Clone(ref.info.Shape), Data: data}, nil
}

// unpermute returns the rows of a q or k projection (or bias) reordered
// from Hugging Face's rotary layout back to Meta's. Per head of hd rows,
// the conversion (transformers' convert_llama_weights_to_hf permute,
// llama2.c export.py's) stored Meta row 2j+i at row i·hd/2+j, i ∈ {0,1}:
// the two members of each rotated pair moved to the two halves. So Meta
// row 2j+i is read back from HF row i·hd/2+j.
func unpermute(data []byte, shape []int, heads int) ([]byte, error) {
	rows := shape[0]
	if heads <= 0 || rows%heads != 0 || (rows/heads)%2 != 0 {
		return nil, fmt.Errorf("%d rows do not split into %d heads of even width", rows, heads)
	}
	rowBytes := len(data) / rows
	hd := rows / heads
	half := hd / 2
	out := make([]byte, len(data))
	for h := 0; h < heads; h++ {
		base := h * hd
		for j := 0; j < half; j++ {
			for i := 0; i < 2; i++ {
				dst := (base + 2*j + i) * rowBytes
				src := (base + i*half + j) * rowBytes
				copy(out[dst:dst+rowBytes], data[src:src+rowBytes])
			}
		}
	}
	return out, nil
}

// Close unmaps every shard.
func (s *Source) Close() error {
	var errs []error
	for _, f := range s.files {
		errs = append(errs, f.Close())
	}
	s.files = nil
	return errors.Join(errs...)
}

// StoredTypes names the stored dtypes of the weight matrices (the 2-D
// tensors the model uses), most frequent first, joined by "+" as for a
// GGUF ("BF16", "F32+BF16"). infer bench reports it as the weights
// column when the directory runs as stored.
func (s *Source) StoredTypes() string {
	count := map[model.StorageType]int{}
	var order []model.StorageType
	for _, ref := range s.where {
		if len(ref.info.Shape) != 2 {
			continue
		}
		st, err := storageType(ref.info)
		if err != nil {
			continue
		}
		if count[st] == 0 {
			order = append(order, st)
		}
		count[st]++
	}
	slices.SortFunc(order, func(a, b model.StorageType) int {
		if count[a] != count[b] {
			return count[b] - count[a]
		}
		return strings.Compare(a.String(), b.String())
	})
	names := make([]string, len(order))
	for i, t := range order {
		names[i] = t.String()
	}
	return strings.Join(names, "+")
}
