// Package checkpoint opens a model checkpoint of any supported format,
// chosen by what the file is, never by its name (Sniff): a directory is a
// Hugging Face checkpoint, a file that starts with "GGUF" is a GGUF file,
// and anything else is tried as a llama2.c checkpoint, the one format
// with no magic (its header's validation then says what is wrong with
// it). An empty path is the built-in model, stories260K (package
// stories260k). A new format adds one case to openSource.
//
// Open returns everything a caller needs to run the model: its Source,
// its tokenizer and its Generation settings (BOS, stop ids, chat
// template...), so that a front end (the CLI, a server, a Go program)
// never asks which format it holds.
package checkpoint

import (
	"bytes"
	"fmt"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/checkpoint/stories260k"
	"github.com/stride-lm/stride/model/gguf"
	"github.com/stride-lm/stride/model/hf"
	"github.com/stride-lm/stride/model/llama2c"
	"github.com/stride-lm/stride/model/mapfile"
	"github.com/stride-lm/stride/model/tokenizer"
)

// Options say how Open opens a checkpoint.
type Options struct {
	// Load are the options of the model's load (weight dtype, no-mmap,
	// ledger). Its AsStored is replaced by the policy below.
	Load model.LoadOptions
	// AsStored runs the formats written to run as stored that way: a
	// GGUF's F16, Q8_0, Q4_K... matrices stream as the file holds them,
	// as llama.cpp runs them, and so does a Hugging Face directory's
	// torch_dtype, as vLLM runs it. Load.WeightDType then applies to
	// llama2.c checkpoints only. Set it when the caller asked for no
	// weight type.
	AsStored bool
	// Tokenizer is a tokenizer file to use instead of the checkpoint's
	// own (a GGUF, a tokenizer.json or its directory, a llama2.c
	// tokenizer.bin). Empty uses the checkpoint's: a GGUF's, a Hugging
	// Face directory's tokenizer.json, the built-in model's tok512; else
	// the byte codec (a vocabulary of at least 259 ids).
	Tokenizer string
}

// Checkpoint is an opened checkpoint: its tensors, its tokenizer and how
// to generate with it. Load builds the model; until then Close releases
// the file.
type Checkpoint struct {
	// Source is the opened file (or directory).
	Source model.Source
	// Tokenizer turns text into the model's ids and back.
	Tokenizer tokenizer.Codec
	// Generation is what the checkpoint says about generating.
	Generation Generation
	// Kind is the format Sniff found (Llama2c for the built-in model).
	Kind Kind

	load   model.LoadOptions
	loaded bool
}

// Generation is what a checkpoint says about generating with it.
type Generation struct {
	// BOS is the id a prompt starts with when AddBOS; -1 when the
	// vocabulary has none.
	BOS int
	// AddBOS reports whether prompts start with BOS (the tokenizer's
	// file says; llama2.c's always do).
	AddBOS bool
	// StopTokens are the ids generation stops at (a GGUF's EOS/EOT and
	// BOS, generation_config.json's eos_token_id); nil means run.c's
	// rule, stop at BOS (engine.Request.StopTokens).
	StopTokens []int
	// EOSText is the eos_token's text, where a chat reply ends; empty for
	// llama2.c tokenizers.
	EOSText string
	// ChatTemplate is the Jinja chat template the checkpoint carries
	// (GGUF's tokenizer.chat_template, tokenizer_config.json's), or "".
	ChatTemplate string
	// StoredTypes names the stored weight types when the model runs as
	// stored ("Q8_0+F16", "BF16"); empty otherwise.
	StoredTypes string
	// GGML is set for a GGUF checkpoint: a model written for llama.cpp,
	// whose defaults (an F16 KV cache) a front end may follow.
	GGML bool
	// Sampling is generation_config.json's sampling defaults (Hugging
	// Face directories; all nil otherwise), for a front end to apply to
	// the settings its user leaves unset (see samplingDefaults).
	Sampling model.SamplingDefaults
}

// Open opens the checkpoint at path (the built-in stories260K when path
// is empty) with its tokenizer. Errors are one line naming the path.
func Open(path string, opts Options) (*Checkpoint, error) {
	src, kind, err := openSource(path, opts.Load)
	if err != nil {
		return nil, err
	}
	ck := &Checkpoint{Source: src, Kind: kind, load: opts.Load}
	ck.load.AsStored = false
	switch s := src.(type) {
	case *gguf.Source:
		ck.Generation.StopTokens, ck.Generation.GGML = s.StopTokens(), true
		ck.load.AsStored = opts.AsStored
		if ck.load.AsStored {
			ck.Generation.StoredTypes = s.StoredTypes()
		}
	case *hf.Source:
		ck.Generation.StopTokens, ck.Generation.Sampling = s.StopTokens(), samplingDefaults(s.Sampling())
		ck.load.AsStored = opts.AsStored
		if ck.load.AsStored {
			ck.Generation.StoredTypes = s.StoredTypes()
		}
	}
	if err := ck.openTokenizer(path, opts.Tokenizer); err != nil {
		src.Close()
		return nil, err
	}
	return ck, nil
}

// samplingDefaults maps generation_config.json's settings to the
// defaults a front end applies: each value given, as vLLM's
// --generation-config auto takes them, and do_sample: false (given, not
// missing) as transformers reads it: greedy, whatever temperature says.
// A missing do_sample does not make a run greedy (transformers' default
// is false, but configs that give sampling values without it mean them,
// and vLLM applies them).
func samplingDefaults(s hf.Sampling) model.SamplingDefaults {
	d := model.SamplingDefaults{Temperature: s.Temperature, TopP: s.TopP, TopK: s.TopK, MinP: s.MinP,
		RepetitionPenalty: s.RepetitionPenalty}
	if s.DoSample != nil && !*s.DoSample {
		greedy := 0.0
		d.Temperature = &greedy
	}
	return d
}

// Load builds the model (model.FromSource). The model then owns the file:
// Model.Close releases it, and Close does nothing.
func (c *Checkpoint) Load() (*model.Model, error) {
	if c.loaded {
		return nil, fmt.Errorf("checkpoint %s: already loaded", c.Source.Name())
	}
	m, err := model.FromSource(c.Source, c.load)
	if err != nil {
		return nil, err
	}
	c.loaded = true
	return m, nil
}

// Close releases the file of a checkpoint whose model was not loaded.
func (c *Checkpoint) Close() error {
	if c.loaded {
		return nil
	}
	c.loaded = true
	return c.Source.Close()
}

// openSource opens the checkpoint at path as a model.Source, without its
// tokenizer, and says what kind of file it was. The path must be a regular
// file or a directory: it is opened non-blocking and fstat'ed, so a FIFO or
// a device is refused at once. opts.NoMmap makes formats read instead of
// mapping. Errors read "checkpoint <path>: <problem>".
func openSource(path string, opts model.LoadOptions) (model.Source, Kind, error) {
	if path == "" {
		b := stories260k.Checkpoint
		src, err := llama2c.NewReader(bytes.NewReader(b), int64(len(b)), stories260k.Name)
		if err != nil {
			return nil, 0, err
		}
		return src, Llama2c, nil
	}
	f, st, err := mapfile.Open(path, true)
	if err != nil {
		return nil, 0, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if st.IsDir() {
		f.Close()
		src, err := hf.Open(path, opts, hf.Options{})
		if err != nil {
			return nil, 0, err // not a typed nil inside the interface
		}
		return src, Dir, nil
	}
	var head [64]byte
	n, _ := f.ReadAt(head[:], 0)
	if sniffBytes(head[:n]) == GGUF {
		defer f.Close() // the mapping outlives the descriptor
		src, err := gguf.OpenSourceFile(f, path, opts)
		if err != nil {
			return nil, 0, err
		}
		return src, GGUF, nil
	}
	src, err := llama2c.OpenFile(f, path, opts)
	if err != nil {
		return nil, 0, err
	}
	return src, Llama2c, nil
}
