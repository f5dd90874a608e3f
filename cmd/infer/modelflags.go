package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stride-lm/stride/configs"
	"github.com/stride-lm/stride/kvcache"
	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/checkpoint"
	"github.com/stride-lm/stride/model/engine"
	"github.com/stride-lm/stride/model/tokenizer"
	"github.com/stride-lm/stride/tensor"
)

// The settings every command that runs a model shares: which model
// (a checkpoint, the built-in stories260K when none is given, or with
// --checkpoint synthetic the synthetic model the synthetic.* keys
// describe), its tokenizer, the
// weight dtype, and the engine (attention path, KV cache, threads).
func init() {
	registerKeys(
		configs.Key{Name: "checkpoint", Kind: configs.Path, Default: "", Help: "checkpoint: llama2.c .bin, GGUF or Hugging Face directory; empty = the built-in stories260K; \"synthetic\" = the synthetic model of the synthetic.* keys"},
		configs.Key{Name: "tokenizer", Kind: configs.Path, Default: "", Help: "tokenizer: llama2.c tokenizer.bin, GGUF or tokenizer.json; empty = the checkpoint's own, else bytes (vocab >= 259)"},
		configs.Key{Name: "synthetic.seed", Kind: configs.Int, Default: 42, Help: "seed of the synthetic model's weights"},
		configs.Key{Name: "synthetic.dim", Kind: configs.Int, Default: 64, Help: "synthetic model: width"},
		configs.Key{Name: "synthetic.hidden_dim", Kind: configs.Int, Default: 172, Help: "synthetic model: SwiGLU width"},
		configs.Key{Name: "synthetic.n_layers", Kind: configs.Int, Default: 4, Help: "synthetic model: layers"},
		configs.Key{Name: "synthetic.n_heads", Kind: configs.Int, Default: 8, Help: "synthetic model: query heads"},
		configs.Key{Name: "synthetic.n_kv_heads", Kind: configs.Int, Default: 2, Help: "synthetic model: KV heads"},
		configs.Key{Name: "synthetic.vocab_size", Kind: configs.Int, Default: 259, Help: "synthetic model: vocabulary"},
		configs.Key{Name: "synthetic.seq_len", Kind: configs.Int, Default: 2048, Help: "synthetic model: max positions"},
		configs.Key{Name: "weights", Kind: configs.String, Default: "f32", Allowed: []string{"f32", "f16", "bf16", "q8_0"}, Help: "weight dtype at run time"},
		configs.Key{Name: "path", Kind: configs.String, Default: "fused", Allowed: []string{"fused", "naive"}, Help: "attention path"},
		configs.Key{Name: "block_size", Kind: configs.Int, Default: 16, Range: configs.AtLeast(1), Help: "KV cache block size (tokens)"},
		configs.Key{Name: "num_blocks", Kind: configs.Int, Default: 0, Range: configs.AtLeast(0), Help: "KV cache blocks; 0 = from kv_memory, else 8 full sequences"},
		configs.Key{Name: "kv_memory", Kind: configs.String, Default: "", Help: "KV cache byte budget, e.g. 64MiB; at least one block"},
		configs.Key{Name: "kv_dtype", Kind: configs.String, Default: "f32", Allowed: []string{"f32", "f16", "bf16"}, Help: "KV cache dtype"},
		configs.Key{Name: "threads", Kind: configs.Int, Default: 0, Range: configs.InRange(0, maxThreads), Help: "worker threads; 0 = all cores"},
		configs.Key{Name: "max_batch", Kind: configs.Int, Default: 0, Range: configs.AtLeast(0), Help: "most sequences running at once; 0 = no cap"},
		configs.Key{Name: "prefix_sharing", Kind: configs.Bool, Default: true, Help: "share KV blocks of common prompt prefixes"},
		configs.Key{Name: "speculate", Kind: configs.String, Default: "off", Allowed: []string{"off", "ngram"}, Help: "speculative decoding: off, or ngram (prompt lookup)"},
		configs.Key{Name: "draft", Kind: configs.Int, Default: engine.DefaultDraft, Range: configs.InRange(1, engine.MaxDraft), Help: "speculation: most tokens drafted per step"},
		configs.Key{Name: "ngram_min", Kind: configs.Int, Default: engine.DefaultNgramMin, Range: configs.InRange(1, engine.MaxNgram), Help: "speculation: shortest n-gram looked up"},
		configs.Key{Name: "ngram_max", Kind: configs.Int, Default: engine.DefaultNgramMax, Range: configs.InRange(1, engine.MaxNgram), Help: "speculation: longest n-gram looked up (>= ngram_min)"},
		configs.Key{Name: "draft_cost", Kind: configs.Float, Default: 0.0, Range: configs.InRange(0, engine.MaxDraftCost), Help: "speculation: a verify row's cost in decode steps, which the adaptive rule weighs drafts against; 0 = by model size (0.1 at 32 MiB of weights or more, else 0.5)"},
	)
}

// specFlags adds the speculative decoding flags of generate, compare and
// bench (bench binds --speculate to its list key, so it skips it here).
func specFlags(a *app, cmd *cobra.Command, skip ...string) {
	for _, f := range []struct{ name, key, usage string }{
		{"speculate", "speculate", "speculative decoding"},
		{"draft", "draft", "speculation: most tokens drafted per step"},
		{"ngram-min", "ngram_min", "speculation: shortest n-gram looked up"},
		{"ngram-max", "ngram_max", "speculation: longest n-gram looked up"},
		{"draft-cost", "draft_cost", "speculation: a verify row's cost in decode steps (0 = by model size)"},
	} {
		if !slices.Contains(skip, f.name) {
			a.flag(cmd, f.name, f.key, f.usage)
		}
	}
}

// speculation reads the speculation keys.
func speculation(a *app) (engine.Speculation, error) {
	sp := engine.Speculation{Method: a.cfg.String("speculate"), Draft: a.cfg.Int("draft"),
		NgramMin: a.cfg.Int("ngram_min"), NgramMax: a.cfg.Int("ngram_max"), DraftCost: a.cfg.Float("draft_cost")}
	if sp.NgramMax < sp.NgramMin {
		return sp, fmt.Errorf("ngram_max %d is less than ngram_min %d", sp.NgramMax, sp.NgramMin)
	}
	return sp, nil
}

// modelFlags adds the model and engine flags to cmd, except the ones
// named in skip (a command that gives a flag another meaning).
func modelFlags(a *app, cmd *cobra.Command, skip ...string) {
	for _, f := range []struct{ name, key, usage string }{
		{"checkpoint", "checkpoint", "checkpoint file or HF directory (alias --model); empty = the built-in stories260K; synthetic = the synthetic model"},
		{"tokenizer", "tokenizer", "tokenizer file; empty = the checkpoint's own"},
		{"weights", "weights", "weight dtype"},
		{"path", "path", "attention path"},
		{"block-size", "block_size", "KV cache block size"},
		{"num-blocks", "num_blocks", "KV cache blocks; 0 = from --kv-memory, else 8 full sequences"},
		{"kv-memory", "kv_memory", "KV cache byte budget, e.g. 64MiB; at least one block"},
		{"kv-dtype", "kv_dtype", "KV cache dtype"},
		{"threads", "threads", "worker threads; 0 = all cores"},
		{"max-batch", "max_batch", "most running sequences"},
		{"prefix-sharing", "prefix_sharing", "share KV blocks of common prompt prefixes"},
	} {
		if !slices.Contains(skip, f.name) {
			a.flagP(cmd, f.name, shortFlags[f.name], f.key, f.usage)
		}
	}
	syntheticFlags(a, cmd)
}

// generationFlags adds the prompt and sampler flags of generate and
// compare.
func generationFlags(a *app, cmd *cobra.Command) {
	a.flagP(cmd, "prompt", "p", "prompt", "prompt text (repeat for several sequences; - = stdin)")
	a.flag(cmd, "prompts", "prompts", "file with one prompt per line (at most 16 MiB; not with --prompt; - = stdin)")
	a.flag(cmd, "steps", "steps", "positions to run, prompt included; 0 = seq_len")
	runcSamplerFlags(a, cmd)
}

// runcSamplerFlags adds run.c's sampler flags: generationFlags' and infer
// chat's (whose --steps means the whole conversation).
func runcSamplerFlags(a *app, cmd *cobra.Command) {
	a.flag(cmd, "temperature", "temperature", "sampling temperature (--temp); 0 = greedy")
	a.flag(cmd, "topp", "topp", "top-p sampling (--top-p); 0 or 1 = off")
	a.flagP(cmd, "seed", "s", "seed", "RNG seed; 0 = the time")
}

// shortFlags are llama.cpp's one-letter flags (run.c's single letters
// mean other things: its -n is our --steps, its -t the temperature).
var shortFlags = map[string]string{"checkpoint": "m", "threads": "t"}

// samplerSeed is the seed key, or the time when it is 0, as run.c does.
func samplerSeed(a *app) uint64 {
	if s := a.cfg.Int("seed"); s != 0 {
		return uint64(s)
	}
	return uint64(time.Now().Unix())
}

// syntheticFlags adds --synthetic.<key> flags for the synthetic model.
func syntheticFlags(a *app, cmd *cobra.Command) {
	for _, k := range []string{"seed", "dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"} {
		a.flag(cmd, "synthetic."+k, "synthetic."+k, "synthetic model: "+k)
	}
}

// syntheticCheckpoint is the --checkpoint value that selects the
// synthetic model of the synthetic.* keys instead of a file.
const syntheticCheckpoint = "synthetic"

// loadedModel is a model with its text codec, a description for reports,
// and what its checkpoint says about generating.
type loadedModel struct {
	m     *model.Model
	codec tokenizer.Codec
	name  string
	gen   checkpoint.Generation
	// enc encodes its prompts (encodePrompt); nil until the first.
	enc *tokenizer.PromptEncoder
}

// loadModel opens the checkpoint (or synthesizes the model) and its
// tokenizer, with the weights key's dtype.
func loadModel(a *app) (*loadedModel, error) { return loadModelAs(a, a.cfg.String("weights")) }

// loadModelAs is loadModel with weight dtype weights (f32, f16, bf16 or
// q8_0) in place of the weights key: checkpoint.Open (the built-in
// stories260K when no checkpoint is given) or the synthetic model, then
// the Q8_0 quantization that q8_0 asks for.
func loadModelAs(a *app, weights string) (*loadedModel, error) {
	wdt, quant, err := weightDType(weights)
	if err != nil {
		return nil, err
	}
	var lm *loadedModel
	// The word, not a path: a config file's relative paths are resolved
	// against its folder, "synthetic" is not.
	if a.cfg.String("checkpoint") == syntheticCheckpoint {
		lm, err = synthesize(a, wdt)
	} else {
		path := a.cfg.Path("checkpoint")
		if err := syntheticKeysUnused(a, path); err != nil {
			return nil, err
		}
		if path != "" {
			defer loadingNotice(a.errw, path)()
		}
		lm, err = openCheckpoint(a, path, weights, wdt)
	}
	if err != nil {
		return nil, err
	}
	if quant {
		if err := model.QuantizeQ8_0(lm.m, 0); err != nil {
			lm.m.Close()
			return nil, err
		}
	}
	return lm, nil
}

// openCheckpoint opens the checkpoint at path ("" = the built-in model)
// with the tokenizer key's file, if any. The formats that run as stored
// (GGUF, Hugging Face) do so unless a weight type was asked for.
func openCheckpoint(a *app, path, weights string, wdt tensor.DType) (*loadedModel, error) {
	ck, err := checkpoint.Open(path, checkpoint.Options{
		Load:      model.LoadOptions{WeightDType: wdt},
		AsStored:  asStoredDefault(a, weights),
		Tokenizer: a.cfg.Path("tokenizer"),
	})
	if err != nil {
		return nil, err
	}
	m, err := ck.Load()
	if err != nil {
		ck.Close()
		return nil, err
	}
	return &loadedModel{m: m, codec: ck.Tokenizer, name: ck.Source.Name(), gen: ck.Generation}, nil
}

// syntheticKeysUnused refuses synthetic.* keys set for a run that loads
// a checkpoint (the built-in one when path is empty): they describe only
// the synthetic model, and ignoring them would run another model than
// the one asked for.
func syntheticKeysUnused(a *app, path string) error {
	for _, k := range []string{"seed", "dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"} {
		if src := a.cfg.Source("synthetic." + k); src != "default" {
			where := "--checkpoint " + path
			if path == "" {
				where = "no --checkpoint (the built-in stories260K)"
			}
			return fmt.Errorf("synthetic.%s (from %s) describes the synthetic model, but the run has %s: add --checkpoint synthetic", k, src, where)
		}
	}
	return nil
}

// synthesize makes the synthetic model of the synthetic.* keys with
// weights of dtype wdt, after checking that they fit in memory, and opens
// the tokenizer key's file for it (or the byte codec).
func synthesize(a *app, wdt tensor.DType) (*loadedModel, error) {
	c := model.Config{
		Dim: a.cfg.Int("synthetic.dim"), HiddenDim: a.cfg.Int("synthetic.hidden_dim"),
		NLayers: a.cfg.Int("synthetic.n_layers"), NHeads: a.cfg.Int("synthetic.n_heads"),
		NKVHeads: a.cfg.Int("synthetic.n_kv_heads"), VocabSize: a.cfg.Int("synthetic.vocab_size"),
		SeqLen: a.cfg.Int("synthetic.seq_len"), RopeTheta: 10000, NormEps: 1e-5,
		SharedClassifier: true, WeightDType: wdt,
	}
	if err := engine.CheckWeights("the synthetic model's weights", c); err != nil {
		return nil, err
	}
	codec, g, err := checkpoint.OpenCodec(a.cfg.Path("tokenizer"), c.VocabSize)
	if err != nil {
		return nil, err
	}
	m, err := model.Synthesize(c, uint64(a.cfg.Int("synthetic.seed")))
	if err != nil {
		return nil, fmt.Errorf("synthetic model: %w", err)
	}
	return &loadedModel{m: m, codec: codec, name: fmt.Sprintf("synthetic(seed=%d)", a.cfg.Int("synthetic.seed")), gen: g}, nil
}

// asStoredDefault reports whether weights is the default f32 that nobody
// asked for (neither --weights, its env or config key, nor bench's list),
// which on a GGUF means "the stored types".
func asStoredDefault(a *app, weights string) bool {
	return weights == "f32" && a.cfg.Source("weights") == "default" && strings.TrimSpace(a.cfg.String("bench.weights")) == ""
}

// weightDType maps the weights key to a load dtype, and whether Q8_0
// quantization follows the load.
func weightDType(s string) (tensor.DType, bool, error) {
	if s == "q8_0" {
		return tensor.F32, true, nil
	}
	dt, err := tensor.ParseDType(s)
	return dt, false, err
}

// engineOptions reads the engine keys (their ranges were checked when
// the configuration loaded).
func engineOptions(a *app, led *tensor.Ledger) (engine.Options, error) {
	kvdt, err := tensor.ParseDType(a.cfg.String("kv_dtype"))
	if err != nil {
		return engine.Options{}, err
	}
	var budget int64
	if s := strings.TrimSpace(a.cfg.String("kv_memory")); s != "" {
		if budget, err = kvcache.ParseBytes(s); err != nil {
			return engine.Options{}, fmt.Errorf("kv_memory: %w", err)
		}
		if budget == 0 {
			// 0 bytes would silently mean "the default pool".
			return engine.Options{}, fmt.Errorf("kv_memory %q is 0 bytes, smaller than one KV block; give at least one block's bytes, or leave it unset for the default pool", s)
		}
	}
	spec, err := speculation(a)
	if err != nil {
		return engine.Options{}, err
	}
	return engine.Options{
		Path: a.cfg.String("path"), BlockSize: a.cfg.Int("block_size"), NumBlocks: a.cfg.Int("num_blocks"),
		KVMemory: budget, KVDType: kvdt, Threads: a.cfg.Int("threads"), MaxBatch: a.cfg.Int("max_batch"),
		DisablePrefixSharing: !a.cfg.Bool("prefix_sharing"), Ledger: led, Speculation: spec,
	}, nil
}

// clampSteps applies run.c's rule: 0 or more than seq_len means seq_len,
// with a warning when a larger value was asked for. (A negative value,
// which run.c also turns into seq_len, is refused by the key's range.)
func clampSteps(steps, seqLen int, stderr io.Writer) int {
	if steps > seqLen {
		fmt.Fprintf(stderr, "warning: --steps %d exceeds seq_len %d; clamped to %d\n", steps, seqLen, seqLen)
		return seqLen
	}
	if steps <= 0 {
		return seqLen
	}
	return steps
}
