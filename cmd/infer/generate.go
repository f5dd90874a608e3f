package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/stride-lm/stride/configs"
	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/engine"
	"github.com/stride-lm/stride/model/tokenizer"
)

func init() {
	registerKeys(
		configs.Key{Name: "prompt", Kind: configs.Strings, Default: []string{}, Help: "prompt text; a list (or a repeated --prompt) runs several sequences"},
		configs.Key{Name: "prompts", Kind: configs.Path, Default: "", Help: "file with one prompt per line (at most 16 MiB); not with prompt"},
		configs.Key{Name: "steps", Kind: configs.Int, Default: 256, Range: configs.AtLeast(0), Help: "positions to run, prompt included (run.c's -n); 0 = seq_len"},
		configs.Key{Name: "temperature", Kind: configs.Float, Default: 1.0, Range: configs.AtLeast(0), Help: "sampling temperature; 0 = greedy"},
		configs.Key{Name: "topp", Kind: configs.Float, Default: 0.9, Range: configs.InRange(0, 1), Help: "top-p (nucleus) sampling; 0 or 1 = off"},
		configs.Key{Name: "seed", Kind: configs.Int, Default: 0, Help: "RNG seed; 0 = time-based, as run.c"},
		configs.Key{Name: "generate.output", Kind: configs.String, Default: "text", Allowed: []string{"text", "ids", "json"}, Help: "output of infer generate"},
	)
	register(newGenerateCmd)
}

func newGenerateCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "generate",
		Short: "Generate text with a checkpoint, the built-in stories260K, or the synthetic model",
		Long: `generate runs a Llama-architecture model the way llama2.c's run.c does: the
same tokenizer, RoPE, sampler (xorshift RNG, temperature, top-p) and stopping
rule, so for the same checkpoint, prompt, temperature, top-p, seed and steps
the token stream is run.c's.

Several prompts (repeat --prompt, or --prompts FILE with one per line) run
together with continuous batching over the paged KV cache; each sequence's
output is what it would be alone.

Which model: --checkpoint FILE (a llama2.c .bin, a GGUF, or a Hugging Face
directory, told apart by content); without it the built-in stories260K
(llama2.c's 260K-parameter TinyStories model and its 512-piece tokenizer,
MIT, embedded in the binary), which tells a small story token for token as
run.c does; --checkpoint synthetic runs the synthetic model of the
synthetic.* keys instead (random weights: its text is noise, its shape is
yours to choose).

The prompt is a positional argument, --prompt/-p (repeatable), --file/-f
(a whole file) or --prompts (one per line); "-" reads stdin, and with none
of them a piped stdin is the prompt. -n counts new tokens (-1 = until the
context ends), --steps run.c's positions; -c caps the context and sizes
the KV pool. --top-k, --min-p and --repeat-penalty filter the logits
before run.c's chain; --stop ends a sequence at a string (docs/cli.md).

Output: text streams token by token (one prompt) and ends with a tok/s line
on stderr; several prompts print each sequence as it finishes. ids prints
the ids after BOS on one line per sequence (prompt tokens, then generated
ones; all the prompt's ids when the tokenizer adds no BOS); json prints one JSON object per sequence the moment it finishes (in
completion order; "seq" is its index), with its "finish_reason" (length,
eos, stop, interrupted or error), prompt_tokens, generated_tokens, ttft_ms
tokens_per_second, and its speculation counts "draft_tokens",
"accepted_tokens" and "verify_steps".

--speculate ngram drafts up to --draft tokens per step from the sequence's
own earlier tokens (the tokens that followed the last --ngram-max … --ngram-min
tokens where they occurred before) and verifies them in one step: greedy
output is unchanged, sampled output has the same distribution (see
docs/speculative.md).

Ctrl-C (SIGINT) or SIGTERM stops at the next step: every sequence's tokens so
far are printed in the chosen format and the exit status is 130. A second
signal exits at once. A failed write (a full disk, a closed pipe) is an error
with exit status 1.

Where run.c silently overrides a value, generate refuses it instead:
--steps must be >= 0 (run.c turns a negative one into seq_len), --topp must
be in [0, 1] (run.c turns any other value into 0.9), and NaN or infinite
numbers are refused for every setting. As in run.c, --steps 0 or above
seq_len means seq_len (the latter with a warning).`,
		Example: `  infer generate --config configs/stories260k.yaml --temperature 0
  infer generate -m stories15M.bin --tokenizer tokenizer.bin "Once upon a time"
  echo "Once upon a time" | infer generate -m stories15M.bin --tokenizer tokenizer.bin -n 64
  infer generate --config configs/tiny.yaml --prompt a --prompt b --output json`,
		Args: cobra.ArbitraryArgs, // the words of a positional prompt
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGenerate(a, cmd, args)
		},
	}
	modelFlags(a, cmd)
	generationFlags(a, cmd)
	specFlags(a, cmd)
	samplingFlags(a, cmd)
	a.flagP(cmd, "file", "f", "prompt_file", "file whose whole text is the prompt; - = stdin")
	a.flag(cmd, "output", "generate.output", "output format")
	return cmd
}

// seqOutput is one line of --output json.
type seqOutput struct {
	Seq          int    `json:"seq"`
	Prompt       string `json:"prompt"`
	IDs          []int  `json:"ids"`
	Text         string `json:"text"`
	CachedTokens int    `json:"cached_tokens"`
	Preemptions  int    `json:"preemptions"`
	// Speculative decoding (0 with --speculate off).
	DraftTokens    int    `json:"draft_tokens"`
	AcceptedTokens int    `json:"accepted_tokens"`
	VerifySteps    int    `json:"verify_steps"`
	FinishReason   string `json:"finish_reason"`
	Error          string `json:"error,omitempty"`
	seqTiming
}

// generation is one run of infer generate: the prompts, where output
// goes, and the results as they arrive.
type generation struct {
	lm      *loadedModel
	prompts []prompt
	format  string
	stream  bool // text of a single prompt, token by token
	out     io.Writer
	stderr  io.Writer
	cancel  context.CancelFunc // stops the run when a write fails
	res     []engine.Result    // by prompt index
	first   time.Time          // when the first streamed token arrived
	emitted int                // tokens streamed
	seqs    []seqTrack         // per prompt: timing and stop strings (genseq.go)
	start   time.Time          // when the run began
}

func runGenerate(a *app, cmd *cobra.Command, args []string) error {
	lm, err := loadModel(a)
	if err != nil {
		return err
	}
	defer lm.m.Close() // unmap the checkpoint
	if h := tokenizerHint(a, lm); h != "" {
		fmt.Fprintln(cmd.ErrOrStderr(), h)
	}
	ps, err := promptList(a, cmd.InOrStdin(), args)
	if err != nil {
		return err
	}
	c := lm.m.Config
	ctxLen := contextSize(a, c, cmd.ErrOrStderr())
	rule, err := newStepsRule(a, ctxLen, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	ids, encErrs := lm.requestsFor(ps, ctxLen) // before the KV pool is allocated
	opts, err := engineOptions(a, nil)
	if err != nil {
		return err
	}
	opts.Context = ctxLen
	opts.Tokenizer = lm.codec
	e, err := engine.New(lm.m, opts)
	if err != nil {
		return err
	}
	defer e.Close()
	// The prompts run on the online loop, the scheduler infer serve
	// submits to: Run's requests join it (docs/serving.md).
	e.Start()
	g := &generation{lm: lm, prompts: ps, format: a.cfg.String("generate.output"),
		out: cmd.OutOrStdout(), stderr: cmd.ErrOrStderr(), res: make([]engine.Result, len(ps))}
	seed := samplerSeed(a)
	g.seqs = make([]seqTrack, len(ps))
	var reqs []engine.Request
	var index []int // index[k] is the prompt of request k
	for i := range ps {
		if encErrs[i] != nil {
			g.finish(i, engine.Result{Err: encErrs[i], FinishReason: engine.FinishError})
			continue
		}
		index = append(index, i)
		r := engine.Request{Prompt: ids[i], Steps: rule.forPrompt(len(ids[i])),
			StopTokens: lm.gen.StopTokens,
			Sampler:    newSampler(a, lm, seed, ids[i])}
		r.Stop = a.cfg.Strings("stop")
		g.track(i, &r)
		reqs = append(reqs, r)
	}
	g.stream = g.format == "text" && len(ps) == 1 && len(reqs) == 1
	return g.run(cmd.Context(), e, reqs, index)
}

// run generates reqs (reqs[k] is prompt index[k]) and prints the
// results in the chosen format; an interrupt prints what there is and
// returns the context's error.
func (g *generation) run(parent context.Context, e *engine.Engine, reqs []engine.Request, index []int) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	g.cancel = cancel
	hooks := engine.Hooks{Finish: func(k int, r engine.Result) { g.finish(index[k], r) },
		Token: func(ev engine.Event) { g.seqToken(index[ev.Seq], ev) }}
	g.start = time.Now()
	var runErr error
	if len(reqs) > 0 {
		_, _, runErr = e.Run(ctx, reqs, hooks)
	}
	if err := writeErr(g.out); err != nil {
		return err
	}
	if runErr != nil && parent.Err() == nil {
		return runErr
	}
	if err := g.printAll(); err != nil {
		return err
	}
	if err := parent.Err(); err != nil {
		return err
	}
	return g.failures()
}

// token streams one token of the single text prompt.
func (g *generation) token(ev engine.Event) {
	// run.c starts its clock after the first step; so do we.
	var err error
	if g.emitted == 0 {
		g.first = time.Now()
		if lead := g.seqs[0].lead; lead != nil {
			// The first fed id is text, not BOS: it was never an event.
			if p := tokenizer.PrintableText(g.lm.codec, model.BOSID, lead[:1]); p != "" {
				_, err = io.WriteString(g.out, p)
			}
		}
	}
	g.emitted++
	if err == nil {
		_, err = io.WriteString(g.out, ev.Text)
	}
	if err != nil {
		g.cancel()
	}
}

// finish records prompt i's result; --output json prints it at once.
func (g *generation) finish(i int, r engine.Result) {
	g.res[i] = r
	g.seqs[i].done = time.Now()
	if g.format == "text" && !g.stream && r.Err == nil {
		g.printSeq(i, r) // several prompts: each one as it finishes
		return
	}
	if g.format != "json" {
		return
	}
	o := seqOutput{Seq: i, Prompt: g.prompts[i].text, IDs: g.shown(i, r.Tokens), Text: g.text(i, r),
		CachedTokens: r.CachedTokens, Preemptions: r.Preemptions, FinishReason: string(r.FinishReason),
		DraftTokens: r.DraftTokens, AcceptedTokens: r.AcceptedTokens, VerifySteps: r.VerifySteps,
		seqTiming: g.timing(i, r)}
	if o.IDs == nil {
		o.IDs = []int{}
	}
	if r.Err != nil {
		o.Error = r.Err.Error()
	}
	b, err := json.Marshal(o)
	if err == nil {
		_, err = fmt.Fprintln(g.out, string(b))
	}
	if err != nil && g.cancel != nil {
		g.cancel()
	}
}

// printAll prints the results the format did not print as they came:
// the streamed text's final newline and tok/s, or every sequence's ids
// or text in prompt order (partial ones after an interrupt).
func (g *generation) printAll() error {
	if g.stream {
		if r := g.res[0]; r.Err != nil {
			return r.Err
		}
		if _, err := io.WriteString(g.out, g.res[0].FlushText); err != nil {
			return err
		}
		if _, err := fmt.Fprintln(g.out); err != nil { // run.c ends its text with a newline
			return err
		}
		if g.emitted > 1 && g.res[0].FinishReason != engine.FinishInterrupted {
			fmt.Fprintf(g.stderr, "achieved tok/s: %f\n", float64(g.emitted-1)/time.Since(g.first).Seconds())
		}
		return nil
	}
	for i, r := range g.res {
		if r.Err != nil || g.format != "ids" {
			continue // text and json were printed as each sequence finished
		}
		if err := writeIDs(g.out, g.shown(i, r.Tokens)); err != nil {
			return err
		}
	}
	return writeErr(g.out)
}

// failures reports the sequences that failed: a single prompt's error
// as the command's error (one line), or one line per failed sequence and
// an error counting them.
func (g *generation) failures() error {
	if len(g.res) == 1 {
		return g.res[0].Err
	}
	failed := 0
	for i, r := range g.res {
		if r.Err != nil {
			failed++
			fmt.Fprintf(g.stderr, "infer: sequence %d: %v\n", i, r.Err)
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d sequences failed", failed, len(g.res))
	}
	return nil
}

// writeIDs writes one line of space-separated ids.
func writeIDs(w io.Writer, ids []int) error {
	b := make([]byte, 0, len(ids)*4)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ' ')
		}
		b = fmt.Appendf(b, "%d", id)
	}
	_, err := fmt.Fprintln(w, string(b))
	return err
}
