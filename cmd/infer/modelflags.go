package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stride-lm/stride/kvcache"
	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/checkpoint"
	"github.com/stride-lm/stride/model/llama2c"
	"github.com/stride-lm/stride/model/tokenizer"
	"github.com/stride-lm/stride/tensor"
)

// The settings every command that runs a model shares: which model
// (a llama2.c checkpoint, or the synthetic model described by the
// synthetic.* keys when no checkpoint is given), its tokenizer, the
// weight dtype, and the engine (attention path, KV cache, threads).
func init() {
	registerKeys(
		configKey{Name: "checkpoint", Kind: kindPath, Default: "", Help: "llama2.c checkpoint (.bin); empty = the synthetic model"},
		configKey{Name: "tokenizer", Kind: kindPath, Default: "", Help: "llama2.c tokenizer.bin; empty = bytes (vocab >= 259)"},
		configKey{Name: "synthetic.seed", Kind: kindInt, Default: 42, Help: "seed of the synthetic model's weights"},
		configKey{Name: "synthetic.dim", Kind: kindInt, Default: 64, Help: "synthetic model: width"},
		configKey{Name: "synthetic.hidden_dim", Kind: kindInt, Default: 172, Help: "synthetic model: SwiGLU width"},
		configKey{Name: "synthetic.n_layers", Kind: kindInt, Default: 4, Help: "synthetic model: layers"},
		configKey{Name: "synthetic.n_heads", Kind: kindInt, Default: 8, Help: "synthetic model: query heads"},
		configKey{Name: "synthetic.n_kv_heads", Kind: kindInt, Default: 2, Help: "synthetic model: KV heads"},
		configKey{Name: "synthetic.vocab_size", Kind: kindInt, Default: 259, Help: "synthetic model: vocabulary"},
		configKey{Name: "synthetic.seq_len", Kind: kindInt, Default: 2048, Help: "synthetic model: max positions"},
		configKey{Name: "weights", Kind: kindString, Default: "f32", Allowed: []string{"f32", "f16", "bf16", "q8_0"}, Help: "weight dtype at run time"},
		configKey{Name: "path", Kind: kindString, Default: "fused", Allowed: []string{"fused", "naive"}, Help: "attention path"},
		configKey{Name: "block_size", Kind: kindInt, Default: 16, Help: "KV cache block size (tokens)"},
		configKey{Name: "num_blocks", Kind: kindInt, Default: 0, Help: "KV cache blocks; 0 = from kv_memory, else 8 full sequences"},
		configKey{Name: "kv_memory", Kind: kindString, Default: "", Help: "KV cache byte budget, e.g. 64MiB"},
		configKey{Name: "kv_dtype", Kind: kindString, Default: "f32", Allowed: []string{"f32", "f16", "bf16"}, Help: "KV cache dtype"},
		configKey{Name: "threads", Kind: kindInt, Default: 0, Help: "worker threads; 0 = all cores"},
		configKey{Name: "max_batch", Kind: kindInt, Default: 0, Help: "most sequences running at once; 0 = no cap"},
		configKey{Name: "prefix_sharing", Kind: kindBool, Default: true, Help: "share KV blocks of common prompt prefixes"},
	)
}

// modelFlags adds the model and engine flags to cmd, except the ones
// named in skip (a command that gives a flag another meaning).
func modelFlags(a *app, cmd *cobra.Command, skip ...string) {
	for _, f := range []struct{ name, key, usage string }{
		{"checkpoint", "checkpoint", "llama2.c checkpoint; empty = the synthetic model"},
		{"tokenizer", "tokenizer", "llama2.c tokenizer.bin"},
		{"weights", "weights", "weight dtype"},
		{"path", "path", "attention path"},
		{"block-size", "block_size", "KV cache block size"},
		{"num-blocks", "num_blocks", "KV cache blocks"},
		{"kv-memory", "kv_memory", "KV cache byte budget"},
		{"kv-dtype", "kv_dtype", "KV cache dtype"},
		{"threads", "threads", "worker threads"},
		{"max-batch", "max_batch", "most running sequences"},
		{"prefix-sharing", "prefix_sharing", "share KV blocks of common prompt prefixes"},
	} {
		if !slices.Contains(skip, f.name) {
			a.flag(cmd, f.name, f.key, f.usage)
		}
	}
	syntheticFlags(a, cmd)
}

// generationFlags adds the prompt and sampler flags of generate and
// compare.
func generationFlags(a *app, cmd *cobra.Command) {
	a.flag(cmd, "prompt", "prompt", "prompt text (repeat for several sequences)")
	a.flag(cmd, "prompts", "prompts", "file with one prompt per line")
	a.flag(cmd, "steps", "steps", "positions to run, prompt included")
	a.flag(cmd, "temperature", "temperature", "sampling temperature")
	a.flag(cmd, "topp", "topp", "top-p sampling")
	a.flag(cmd, "seed", "seed", "RNG seed")
}

// samplerSeed is the seed key, or the time when it is 0, as run.c does.
func samplerSeed(a *app) uint64 {
	if s := a.getInt("seed"); s != 0 {
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

// loadedModel is a model with its text codec and a description for
// reports.
type loadedModel struct {
	m     *model.Model
	codec tokenizer.Codec
	name  string
	// stop holds the ids generation stops at when the checkpoint names
	// them (a GGUF's EOS/EOT and BOS); nil means run.c's stop at BOS.
	stop []int
	// types names the stored weight types when the checkpoint reports
	// them (a GGUF: "Q8_0+F16"); empty otherwise.
	types string
}

// loadModel opens the checkpoint (or synthesizes the model) and its
// tokenizer, with the weights key's dtype.
func loadModel(a *app) (*loadedModel, error) { return loadModelAs(a, a.getString("weights")) }

// loadModelAs is loadModel with weight dtype weights (f32, f16, bf16 or
// q8_0) in place of the weights key.
func loadModelAs(a *app, weights string) (*loadedModel, error) {
	wdt, quant, err := weightDType(weights)
	if err != nil {
		return nil, err
	}
	lm := &loadedModel{}
	if path := a.getPath("checkpoint"); path != "" {
		opts := model.LoadOptions{WeightDType: wdt}
		src, err := checkpoint.Open(path, opts)
		if err != nil {
			return nil, err
		}
		// A GGUF runs as stored unless a weight type was asked for: its
		// F16, Q8_0, Q4_K... matrices stream as the file holds them.
		_, isGGML := src.(model.GGMLSource)
		if isGGML && asStoredDefault(a, weights) {
			opts.AsStored = true
		}
		if st, ok := src.(interface{ StopTokens() []int }); ok {
			lm.stop = st.StopTokens()
		}
		if st, ok := src.(interface{ StoredTypes() string }); ok && opts.AsStored {
			lm.types = st.StoredTypes()
		}
		m, err := model.FromSource(src, opts)
		if err != nil {
			return nil, err
		}
		lm.m, lm.name = m, path
	} else {
		c := model.Config{
			Dim: a.getInt("synthetic.dim"), HiddenDim: a.getInt("synthetic.hidden_dim"),
			NLayers: a.getInt("synthetic.n_layers"), NHeads: a.getInt("synthetic.n_heads"),
			NKVHeads: a.getInt("synthetic.n_kv_heads"), VocabSize: a.getInt("synthetic.vocab_size"),
			SeqLen: a.getInt("synthetic.seq_len"), RopeTheta: 10000, NormEps: 1e-5,
			SharedClassifier: true, WeightDType: wdt,
		}
		m, err := model.Synthesize(c, uint64(a.getInt("synthetic.seed")))
		if err != nil {
			return nil, fmt.Errorf("synthetic model: %w", err)
		}
		lm.m = m
		lm.name = fmt.Sprintf("synthetic(seed=%d)", a.getInt("synthetic.seed"))
	}
	if quant {
		if err := model.QuantizeQ8_0(lm.m, 0); err != nil {
			return nil, err
		}
	}
	tokPath := a.getPath("tokenizer")
	if ckpt := a.getPath("checkpoint"); tokPath == "" && ckpt != "" {
		if kind, _ := sniff(ckpt); kind == "gguf" {
			tokPath = ckpt // a GGUF carries its tokenizer
		}
	}
	if kind, _ := sniff(tokPath); kind == "gguf" || kind == "json" || kind == "dir" {
		tok, err := openTokenizer(tokPath)
		if err != nil {
			return nil, err
		}
		if tok.VocabSize() > lm.m.Config.VocabSize {
			return nil, fmt.Errorf("tokenizer %s has %d tokens, the model only %d", tokPath, tok.VocabSize(), lm.m.Config.VocabSize)
		}
		lm.codec = tok
	} else if tokPath != "" {
		tok, err := llama2c.LoadTokenizer(tokPath, lm.m.Config.VocabSize)
		if err != nil {
			return nil, err
		}
		lm.codec = tok
	} else {
		bt, err := tokenizer.NewBytes(lm.m.Config.VocabSize)
		if err != nil {
			return nil, fmt.Errorf("model has a vocabulary of %d and no tokenizer was given (--tokenizer): %w", lm.m.Config.VocabSize, err)
		}
		lm.codec = bt
	}
	return lm, nil
}

// asStoredDefault reports whether weights is the default f32 that nobody
// asked for (neither --weights, its env or config key, nor bench's list),
// which on a GGUF means "the stored types".
func asStoredDefault(a *app, weights string) bool {
	return weights == "f32" && a.source("weights") == "default" && strings.TrimSpace(a.getString("bench.weights")) == ""
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

// engineOptions reads the engine keys.
func engineOptions(a *app, led *tensor.Ledger) (model.EngineOptions, error) {
	kvdt, err := tensor.ParseDType(a.getString("kv_dtype"))
	if err != nil {
		return model.EngineOptions{}, err
	}
	var budget int64
	if s := strings.TrimSpace(a.getString("kv_memory")); s != "" {
		if budget, err = kvcache.ParseBytes(s); err != nil {
			return model.EngineOptions{}, fmt.Errorf("kv_memory: %w", err)
		}
	}
	for _, k := range []string{"block_size", "num_blocks", "threads", "max_batch"} {
		if a.getInt(k) < 0 {
			return model.EngineOptions{}, fmt.Errorf("%s must be >= 0 (got %d)", k, a.getInt(k))
		}
	}
	if a.getInt("block_size") == 0 {
		return model.EngineOptions{}, fmt.Errorf("block_size must be > 0")
	}
	return model.EngineOptions{
		Path: a.getString("path"), BlockSize: a.getInt("block_size"), NumBlocks: a.getInt("num_blocks"),
		KVMemory: budget, KVDType: kvdt, Threads: a.getInt("threads"), MaxBatch: a.getInt("max_batch"),
		DisablePrefixSharing: !a.getBool("prefix_sharing"), Ledger: led,
	}, nil
}

// clampSteps applies run.c's rule: 0 or more than seq_len means seq_len,
// with a warning when a larger value was asked for.
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

// promptTexts returns the prompts to run: the prompt key (repeated
// --prompt flags, INFER_PROMPT, or a string or list in the config file),
// else the lines of the prompts file, else one empty prompt.
func promptTexts(a *app) ([]string, error) {
	if texts := a.getStrings("prompt"); len(texts) > 0 {
		return texts, nil
	}
	if path := a.getPath("prompts"); path != "" {
		return readPromptsFile(path)
	}
	return []string{""}, nil
}

// readPromptsFile returns the non-empty lines of a prompts file.
func readPromptsFile(path string) ([]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("prompts file: %w", err)
	}
	var out []string
	for _, line := range strings.Split(strings.ReplaceAll(string(raw), "\r\n", "\n"), "\n") {
		if strings.TrimSpace(line) != "" {
			out = append(out, line)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("prompts file %s has no prompts", path)
	}
	return out, nil
}
