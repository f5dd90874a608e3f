package hf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"slices"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/mapfile"
)

// Architectures are the config.json "architectures" values that load.
var Architectures = []string{"LlamaForCausalLM", "Qwen2ForCausalLM"}

// maxJSONSize caps every JSON file of a directory (config.json,
// generation_config.json, the shard index) before it is read: real ones
// are kilobytes; the largest index files are a few hundred.
const maxJSONSize = 16 << 20

// readJSON reads the JSON file at path into v. The file must be a
// regular file of at most maxJSONSize bytes. A missing file wraps
// fs.ErrNotExist.
func readJSON(path string, v any) error {
	f, st, err := mapfile.Open(path, false)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return err // names the path already
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	defer f.Close()
	if st.Size() > maxJSONSize {
		return fmt.Errorf("%s: %d bytes is larger than the %d a JSON file of a checkpoint may have", path, st.Size(), maxJSONSize)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxJSONSize+1))
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	// A decoder stops after the first value; json.Unmarshal, like
	// Python's json.load, refuses anything but whitespace after it.
	if rest := bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return fmt.Errorf("%s: %d bytes follow the JSON value (at byte %d)", path, len(rest), len(data)-len(rest))
	}
	return nil
}

// tokenIDs is a token id field that is an int or a list of ints
// (eos_token_id in Llama 3's configs), or null.
type tokenIDs []int

func (t *tokenIDs) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		*t = nil
		return nil
	}
	if len(b) > 0 && b[0] == '[' {
		var ids []int
		if err := json.Unmarshal(b, &ids); err != nil {
			return fmt.Errorf("token ids must be integers: %w", err)
		}
		*t = ids
		return nil
	}
	var id int
	if err := json.Unmarshal(b, &id); err != nil {
		return fmt.Errorf("a token id must be an integer or a list of them: %w", err)
	}
	*t = tokenIDs{id}
	return nil
}

// ropeScaling is config.json's rope_scaling object.
type ropeScaling struct {
	RopeType        string   `json:"rope_type"`
	Type            string   `json:"type"` // the older spelling
	Factor          *float64 `json:"factor"`
	LowFreqFactor   *float64 `json:"low_freq_factor"`
	HighFreqFactor  *float64 `json:"high_freq_factor"`
	OrigMaxPosition *int     `json:"original_max_position_embeddings"`
}

// rawConfig is the part of config.json Stride reads. Pointers tell a
// missing key from a zero.
type rawConfig struct {
	Architectures       []string     `json:"architectures"`
	ModelType           string       `json:"model_type"`
	HiddenSize          *int         `json:"hidden_size"`
	IntermediateSize    *int         `json:"intermediate_size"`
	NumHiddenLayers     *int         `json:"num_hidden_layers"`
	NumAttentionHeads   *int         `json:"num_attention_heads"`
	NumKeyValueHeads    *int         `json:"num_key_value_heads"`
	HeadDim             *int         `json:"head_dim"`
	VocabSize           *int         `json:"vocab_size"`
	MaxPosition         *int         `json:"max_position_embeddings"`
	RMSNormEps          *float64     `json:"rms_norm_eps"`
	RopeTheta           *float64     `json:"rope_theta"`
	RopeScaling         *ropeScaling `json:"rope_scaling"`
	PartialRotaryFactor *float64     `json:"partial_rotary_factor"`
	TieWordEmbeddings   *bool        `json:"tie_word_embeddings"`
	HiddenAct           *string      `json:"hidden_act"`
	AttentionBias       *bool        `json:"attention_bias"`
	MLPBias             *bool        `json:"mlp_bias"`
	UseSlidingWindow    *bool        `json:"use_sliding_window"`
	BOSTokenID          tokenIDs     `json:"bos_token_id"`
	EOSTokenID          tokenIDs     `json:"eos_token_id"`
}

// generationConfig is the part of generation_config.json Stride reads.
type generationConfig struct {
	BOSTokenID tokenIDs `json:"bos_token_id"`
	EOSTokenID tokenIDs `json:"eos_token_id"`
	Sampling
}

// Sampling is the sampling defaults a generation_config.json gives (as
// transformers' GenerationConfig names them); a nil field was not given.
type Sampling struct {
	DoSample          *bool    `json:"do_sample"`
	Temperature       *float64 `json:"temperature"`
	TopP              *float64 `json:"top_p"`
	TopK              *int     `json:"top_k"`
	MinP              *float64 `json:"min_p"`
	RepetitionPenalty *float64 `json:"repetition_penalty"`
}

// Config is what a directory's config.json says, mapped to Stride.
type Config struct {
	// Model is the architecture for model.FromSource. Its RopeStyle is
	// RopeNeox, the stored layout (Source changes it for RotaryUnpermute).
	Model model.Config
	// Architecture is the config's architectures entry that loads.
	Architecture string
	// Tied is tie_word_embeddings: the classifier is the embedding.
	Tied bool
	// RopeFreqs are Llama 3's per-pair frequency factors (rope_scaling
	// with rope_type "llama3"), or nil.
	RopeFreqs []float32
	// BOS and EOS are config.json's bos_token_id and eos_token_id.
	BOS, EOS []int
}

// config maps the decoded config.json to a Config in steps: the
// architecture, the shape, the variants refused, then RoPE scaling.
func (r rawConfig) config() (Config, error) {
	var cfg Config
	var err error
	if cfg.Architecture, err = r.architecture(); err != nil {
		return Config{}, err
	}
	c, err := r.shape()
	if err != nil {
		return Config{}, err
	}
	if err := r.checkSupported(cfg.Architecture, &c); err != nil {
		return Config{}, err
	}
	cfg.Tied = r.TieWordEmbeddings != nil && *r.TieWordEmbeddings
	c.SharedClassifier = cfg.Tied
	if err := c.Validate(); err != nil {
		return Config{}, configErr("%w", err)
	}
	if err := cfg.scaling(&c, r.RopeScaling); err != nil {
		return Config{}, configErr("%w", err)
	}
	cfg.Model, cfg.BOS, cfg.EOS = c, r.BOSTokenID, r.EOSTokenID
	return cfg, nil
}

// configErr is an error about config.json.
func configErr(format string, a ...any) error {
	return fmt.Errorf("config.json: "+format, a...)
}

// architecture is the first of the config's architectures that loads.
func (r rawConfig) architecture() (string, error) {
	for _, a := range r.Architectures {
		if slices.Contains(Architectures, a) {
			return a, nil
		}
	}
	if len(r.Architectures) == 0 {
		return "", configErr("no \"architectures\" entry (model_type %q); %v are supported", r.ModelType, Architectures)
	}
	return "", configErr("architecture %v is not supported (%v are)", r.Architectures, Architectures)
}

// shape reads the model's dimensions, naming every required key that is
// missing at once; num_key_value_heads and rope_theta have defaults.
func (r rawConfig) shape() (model.Config, error) {
	var missing []string
	need := func(key string, v *int) int {
		if v == nil {
			missing = append(missing, key)
			return 0
		}
		return *v
	}
	c := model.Config{
		Dim:       need("hidden_size", r.HiddenSize),
		HiddenDim: need("intermediate_size", r.IntermediateSize),
		NLayers:   need("num_hidden_layers", r.NumHiddenLayers),
		NHeads:    need("num_attention_heads", r.NumAttentionHeads),
		VocabSize: need("vocab_size", r.VocabSize),
		SeqLen:    need("max_position_embeddings", r.MaxPosition),
		RopeTheta: 10000,
		RopeStyle: model.RopeNeox,
	}
	if r.RMSNormEps == nil {
		missing = append(missing, "rms_norm_eps")
	} else {
		c.NormEps = *r.RMSNormEps
	}
	if len(missing) > 0 {
		return model.Config{}, configErr("missing %v", missing)
	}
	c.NKVHeads = c.NHeads
	if r.NumKeyValueHeads != nil {
		c.NKVHeads = *r.NumKeyValueHeads
	}
	if r.RopeTheta != nil {
		c.RopeTheta = *r.RopeTheta
	}
	return c, nil
}

// checkSupported refuses the variants Stride does not run (another head
// size, activation or partial RoPE, MLP biases, Llama attention biases,
// Qwen2's sliding window) and sets Qwen2's q/k/v biases.
func (r rawConfig) checkSupported(arch string, c *model.Config) error {
	if c.NHeads > 0 && r.HeadDim != nil && *r.HeadDim != c.Dim/c.NHeads {
		return configErr("head_dim %d differs from hidden_size/num_attention_heads = %d, which is not supported", *r.HeadDim, c.Dim/c.NHeads)
	}
	if r.HiddenAct != nil && *r.HiddenAct != "silu" {
		return configErr("hidden_act %q is not supported (silu is)", *r.HiddenAct)
	}
	if r.PartialRotaryFactor != nil && *r.PartialRotaryFactor != 1 {
		return configErr("partial_rotary_factor %g is not supported", *r.PartialRotaryFactor)
	}
	if r.MLPBias != nil && *r.MLPBias {
		return configErr("mlp_bias = true is not supported")
	}
	switch arch {
	case "LlamaForCausalLM":
		if r.AttentionBias != nil && *r.AttentionBias {
			return configErr("attention_bias = true (biases on q, k, v and o_proj) is not supported for %s", arch)
		}
	case "Qwen2ForCausalLM":
		c.QKVBias = true
		if r.UseSlidingWindow != nil && *r.UseSlidingWindow {
			return configErr("use_sliding_window = true is not supported")
		}
	}
	return nil
}

// scaling applies rope_scaling to c (linear) or cfg (llama3's factors).
func (cfg *Config) scaling(c *model.Config, s *ropeScaling) error {
	if s == nil {
		return nil
	}
	typ := s.RopeType
	if typ == "" {
		typ = s.Type
	}
	factor := func() (float64, error) {
		if s.Factor == nil || !(*s.Factor > 0) || math.IsInf(*s.Factor, 0) {
			return 0, fmt.Errorf("rope_scaling %q needs a positive factor", typ)
		}
		return *s.Factor, nil
	}
	switch typ {
	case "", "default":
		return nil
	case "linear":
		f, err := factor()
		c.RopeScale = f
		return err
	case "llama3":
		f, err := factor()
		if err != nil {
			return err
		}
		if s.LowFreqFactor == nil || s.HighFreqFactor == nil || s.OrigMaxPosition == nil {
			return errors.New("rope_scaling \"llama3\" needs low_freq_factor, high_freq_factor and original_max_position_embeddings")
		}
		lo, hi, orig := *s.LowFreqFactor, *s.HighFreqFactor, *s.OrigMaxPosition
		if !(lo > 0) || !(hi > lo) || orig <= 0 || math.IsInf(hi, 0) {
			return fmt.Errorf("rope_scaling \"llama3\": need 0 < low_freq_factor (%g) < high_freq_factor (%g) and original_max_position_embeddings (%d) > 0", lo, hi, orig)
		}
		cfg.RopeFreqs = model.Llama3FreqFactors(c.RopeTheta, c.RopeDims(), f, lo, hi, orig)
		return nil
	}
	return fmt.Errorf("rope_scaling type %q is not supported (linear and llama3 are)", typ)
}

// stopTokens returns the ids generation stops at: generation_config's
// eos_token_id (else config.json's), then the BOS id, since a model that
// emits BOS has started a new document (as the GGUF reader does). Ids
// outside the vocabulary are left out. The result is never nil: a
// directory that names no stop id stops at none (nil would mean run.c's
// stop at id 1, which is a real token in most vocabularies).
func stopTokens(cfg Config, gen *generationConfig, vocab int) []int {
	eos, bos := cfg.EOS, cfg.BOS
	if gen != nil {
		if gen.EOSTokenID != nil {
			eos = gen.EOSTokenID
		}
		if gen.BOSTokenID != nil {
			bos = gen.BOSTokenID
		}
	}
	ids := []int{}
	for _, id := range append(slices.Clone(eos), bos...) {
		if id >= 0 && id < vocab && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// readGenerationConfig reads generation_config.json when there is one.
func readGenerationConfig(path string) (*generationConfig, error) {
	var g generationConfig
	err := readJSON(path, &g)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if err := g.Sampling.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &g, nil
}

// check refuses sampling values no sampler can use (transformers refuses
// them too): a negative temperature or top_k, a top_p or min_p outside
// [0, 1], a repetition_penalty that is not positive.
func (s Sampling) check() error {
	bad := func(name string, v any, want string) error {
		return fmt.Errorf("%s %v: want %s", name, v, want)
	}
	switch {
	case s.Temperature != nil && !(*s.Temperature >= 0 && *s.Temperature <= math.MaxFloat32):
		return bad("temperature", *s.Temperature, "a number >= 0")
	case s.TopP != nil && !(*s.TopP >= 0 && *s.TopP <= 1):
		return bad("top_p", *s.TopP, "a number in [0, 1]")
	case s.TopK != nil && *s.TopK < 0:
		return bad("top_k", *s.TopK, "an integer >= 0")
	case s.MinP != nil && !(*s.MinP >= 0 && *s.MinP <= 1):
		return bad("min_p", *s.MinP, "a number in [0, 1]")
	case s.RepetitionPenalty != nil && !(*s.RepetitionPenalty > 0 && *s.RepetitionPenalty <= math.MaxFloat32):
		return bad("repetition_penalty", *s.RepetitionPenalty, "a number > 0")
	}
	return nil
}
