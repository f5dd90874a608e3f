package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/stride-lm/stride/configs"
	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/engine"
)

// The settings llama.cpp users bring to generate and chat: how many new
// tokens (-n), the context cap (-c), the logit filters and stop strings.
// Every filter defaults to off, so the defaults stay run.c's sampler.
func init() {
	registerKeys(
		configs.Key{Name: "n_predict", Kind: configs.Int, Default: 0, Range: configs.AtLeast(-1), Help: "new tokens to generate after the prompt (llama.cpp's -n); -1 = until the context ends; 0 = steps decides"},
		configs.Key{Name: "ctx_size", Kind: configs.Int, Default: 0, Range: configs.AtLeast(0), Help: "context cap in positions; the KV pool is sized from it; 0 = min(seq_len, 4096)"},
		configs.Key{Name: "prompt_file", Kind: configs.Path, Default: "", Help: "file whose whole text is one prompt (llama.cpp's -f; at most 16 MiB); - = stdin"},
		configs.Key{Name: "top_k", Kind: configs.Int, Default: 0, Range: configs.AtLeast(0), Help: "keep the k most likely tokens; 0 = off"},
		configs.Key{Name: "min_p", Kind: configs.Float, Default: 0.0, Range: configs.InRange(0, 1), Help: "drop tokens less likely than min_p × the most likely; 0 = off"},
		configs.Key{Name: "repeat_penalty", Kind: configs.Float, Default: 1.0, Range: configs.Above(0), Help: "penalize tokens seen in the last repeat_last_n; 1 = off"},
		configs.Key{Name: "repeat_last_n", Kind: configs.Int, Default: 64, Range: configs.AtLeast(-1), Help: "tokens the repeat penalty looks back over; -1 = the whole context, 0 = off"},
		configs.Key{Name: "stop", Kind: configs.Strings, Default: []string{}, Help: "stop when the generated text contains this string (repeatable); it is cut from the output"},
	)
}

// samplingFlags adds llama.cpp's -n and -c and the filter and stop flags
// (generate adds -f itself).
func samplingFlags(a *app, cmd *cobra.Command) {
	a.flagP(cmd, "n-predict", "n", "n_predict", "new tokens to generate; -1 = until the context ends; 0 = --steps decides")
	a.flagP(cmd, "ctx-size", "c", "ctx_size", "context cap (positions); 0 = min(seq_len, 4096)")
	a.flag(cmd, "top-k", "top_k", "keep the k most likely tokens; 0 = off")
	a.flag(cmd, "min-p", "min_p", "drop tokens below min-p × the top probability; 0 = off")
	a.flag(cmd, "repeat-penalty", "repeat_penalty", "repeat penalty; 1 = off")
	a.flag(cmd, "repeat-last-n", "repeat_last_n", "tokens the repeat penalty looks at; -1 = all")
	a.flag(cmd, "stop", "stop", "stop string (repeatable)")
}

// contextSize is the ctx_size key as engine.ContextSize sizes it
// (0 = min(seq_len, 4096)), with a warning when more than seq_len was
// asked for.
func contextSize(a *app, c model.Config, stderr io.Writer) int {
	n, clamped := engine.ContextSize(c, a.cfg.Int("ctx_size"))
	if clamped {
		fmt.Fprintf(stderr, "warning: --ctx-size %d exceeds the model's seq_len %d; using %d\n", a.cfg.Int("ctx_size"), c.SeqLen, n)
	}
	return n
}

// stepsRule turns steps and n_predict into each request's Steps.
type stepsRule struct {
	ctx      int
	steps    int // run.c's rule, clamped to ctx; used when nPredict == 0
	nPredict int
}

// newStepsRule reads steps and n_predict. When both are set the one
// from the stronger source wins (a flag over INFER_*, over the config
// file: -n on the command line overrides a config's steps); both from
// the same source is an error.
func newStepsRule(a *app, ctx int, stderr io.Writer) (stepsRule, error) {
	np := a.cfg.Int("n_predict")
	if np != 0 && a.cfg.Source("steps") != "default" {
		rs, rn := a.cfg.Rank("steps"), a.cfg.Rank("n_predict")
		if rs == rn {
			return stepsRule{}, fmt.Errorf("--steps (from %s) and --n-predict (from %s) are both set; give one of them (--steps counts the prompt, -n does not)",
				a.cfg.Source("steps"), a.cfg.Source("n_predict"))
		}
		if rs > rn {
			np = 0
		}
	}
	steps := a.cfg.Int("steps")
	if steps > ctx {
		fmt.Fprintf(stderr, "warning: --steps %d exceeds the context of %d positions; clamped to %d\n", steps, ctx, ctx)
	}
	if steps <= 0 || steps > ctx {
		steps = ctx
	}
	return stepsRule{ctx: ctx, steps: steps, nPredict: np}, nil
}

// forPrompt is the Steps of a request whose prompt has n ids (BOS
// included): Steps counts the ids after BOS, so -n N is n-1+N, and the
// context end always stops it (finish_reason length).
func (r stepsRule) forPrompt(n int) int {
	switch {
	case r.nPredict < 0:
		return r.ctx
	case r.nPredict > 0:
		return max(1, min(r.ctx, n-1+r.nPredict))
	}
	return r.steps
}

// newSampler is run.c's sampler with the run's settings
// (samplerSettings); prompt (its ids) is what the repeat penalty starts
// from, as in llama.cpp.
func newSampler(a *app, lm *loadedModel, seed uint64, prompt []int) *model.Sampler {
	st := samplerSettings(a, lm)
	s := model.NewSampler(lm.m.Config.VocabSize, st.temperature, st.topp, seed)
	s.SetFilters(st.filters)
	s.Accept(prompt...)
	return s
}

// sampling is what a run samples with.
type sampling struct {
	temperature, topp float32
	filters           model.Filters
}

// samplerSettings resolves the sampler keys (SamplingDefaults.Resolve):
// what the user set (a flag, INFER_*, the config file), else the
// checkpoint's defaults (generation_config.json,
// checkpoint.Generation.Sampling), else the keys' own defaults (run.c's
// sampler, every filter off). A repetition
// penalty that comes from the checkpoint looks at the whole sequence, as
// transformers applies it, unless repeat_last_n is set.
func samplerSettings(a *app, lm *loadedModel) sampling {
	set := func(key string) *float64 {
		if a.cfg.Source(key) == "default" {
			return nil
		}
		v := a.cfg.Float(key)
		return &v
	}
	user := model.SamplingDefaults{Temperature: set("temperature"), TopP: set("topp"), MinP: set("min_p"),
		RepetitionPenalty: set("repeat_penalty")}
	if a.cfg.Source("top_k") != "default" {
		k := a.cfg.Int("top_k")
		user.TopK = &k
	}
	r := lm.gen.Sampling.Resolve(user, model.SamplingSettings{Temperature: a.cfg.Float("temperature"), TopP: a.cfg.Float("topp"),
		TopK: a.cfg.Int("top_k"), MinP: a.cfg.Float("min_p"), RepetitionPenalty: a.cfg.Float("repeat_penalty")})
	st := sampling{temperature: float32(r.Temperature), topp: float32(r.TopP),
		filters: model.Filters{TopK: r.TopK, MinP: float32(r.MinP), RepeatPenalty: float32(r.RepetitionPenalty),
			RepeatLastN: a.cfg.Int("repeat_last_n")}}
	if user.RepetitionPenalty == nil && lm.gen.Sampling.RepetitionPenalty != nil && a.cfg.Source("repeat_last_n") == "default" {
		st.filters.RepeatLastN = -1
	}
	return st
}
