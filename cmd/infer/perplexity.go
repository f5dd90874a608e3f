package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/stride-lm/stride/configs"
	"github.com/stride-lm/stride/model/engine"
	"github.com/stride-lm/stride/model/tokenizer"
	"github.com/stride-lm/stride/tensor"
)

func init() {
	registerKeys(
		configs.Key{Name: "perplexity.ctx", Kind: configs.Int, Default: 0, Range: configs.AtLeast(0), Help: "tokens per chunk; 0 = min(seq_len, 512)"},
		configs.Key{Name: "perplexity.file", Kind: configs.Path, Default: "", Help: "text to score; empty = the argument, else stdin"},
		configs.Key{Name: "perplexity.output", Kind: configs.String, Default: "text", Allowed: []string{"text", "json"}, Help: "output of infer perplexity"},
	)
	register(newPerplexityCmd)
}

func newPerplexityCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "perplexity [FILE]",
		Short: "Measure a model's perplexity on a text, as llama.cpp's llama-perplexity does",
		Long: `perplexity scores a text the way llama.cpp's llama-perplexity does, so the two
print the same figure for the same model:

  - the whole text is tokenized with BOS;
  - the tokens are cut into chunks of --ctx (the remainder is dropped);
  - each chunk's first token is replaced by BOS, and the chunk runs as one
    batch from position 0 with an empty KV cache;
  - the positions ctx/2 … ctx-2 of each chunk are scored, each on the token
    that follows it: ctx-1-ctx/2 tokens per chunk.

PPL = exp(mean negative log-likelihood); the ± is llama.cpp's estimate,
PPL·sqrt((mean(nll²) − mean(nll)²)/(N−1)) over the N scored tokens. The
running PPL after each chunk goes to stderr as [chunk]ppl, then the counts
of tokens and chunks; the last line of stdout reads
"Final estimate: PPL = 3.3607 +/- 0.15656". The text needs at least 2·ctx
tokens. With --output json, one object:
{"ppl", "ppl_stderr", "nll", "tokens_scored", "chunks", "ctx"}.

The text is FILE, or -f FILE, or stdin when neither is given. It is read
and tokenized a window at a time (the ids are those of the whole text), so
memory does not grow with its length; a stretch of 16 MiB with no line
break or space to cut at is refused.`,
		Example: `  infer perplexity --checkpoint stories260K-f32.gguf --tokenizer tok512.bin --ctx 64 text.txt
  infer perplexity --checkpoint model.gguf -f wiki.test.raw --output json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPerplexity(a, cmd, args)
		},
	}
	modelFlags(a, cmd)
	a.flag(cmd, "ctx", "perplexity.ctx", "tokens per chunk")
	cmd.Flags().StringP("file", "f", "", "text to score (same as the FILE argument)")
	a.bindFlag(cmd, "file", "perplexity.file")
	a.flag(cmd, "output", "perplexity.output", "output format")
	return cmd
}

func runPerplexity(a *app, cmd *cobra.Command, args []string) error {
	out, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	path := a.cfg.Path("perplexity.file")
	if len(args) == 1 {
		if path != "" && path != args[0] {
			return fmt.Errorf("perplexity: give the text once (FILE or -f), not both")
		}
		path = args[0]
	}
	var r io.Reader = cmd.InOrStdin()
	if path != "" {
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("perplexity: %w", err)
		}
		defer f.Close()
		r = f
	}
	lm, err := loadModel(a)
	if err != nil {
		return err
	}
	defer lm.m.Close()
	c := lm.m.Config
	nctx := a.cfg.Int("perplexity.ctx")
	if nctx == 0 {
		nctx = min(c.SeqLen, engine.DefaultPerplexityContext)
	}
	if nctx < 4 || nctx > c.SeqLen {
		return fmt.Errorf("perplexity: --ctx %d must be in [4, seq_len=%d]", nctx, c.SeqLen)
	}
	// BOS as the tokenizer's file asks (llama.cpp's add_bos): a llama2.c
	// tokenizer always, a GGUF's per tokenizer.ggml.add_bos_token.
	bos, addBOS := lm.gen.BOS, lm.addBOS()
	if !addBOS {
		bos = -1
	}
	tokens, err := tokenizer.NewStream(lm.codec, closedIsEmpty{r}, tokenizer.EncodeOptions{BOS: addBOS})
	if err != nil {
		return fmt.Errorf("perplexity: %w", err)
	}
	kvdt, err := perplexityKVDType(a, lm)
	if err != nil {
		return err
	}
	e, err := engine.New(lm.m, engine.PerplexityOptions(nctx, kvdt, a.cfg.Int("threads")))
	if err != nil {
		return err
	}
	defer e.Close()
	res, err := e.Perplexity(cmd.Context(), tokens, nctx, bos, func(chunk int, ppl float64) {
		fmt.Fprintf(stderr, "[%d]%.4f,", chunk, ppl)
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "\nperplexity: %d tokens, %d chunks of %d, scoring %d per chunk\n",
		res.Tokens, res.Chunks, nctx, nctx-1-nctx/2)
	if a.cfg.String("perplexity.output") == "json" {
		b, err := json.Marshal(res)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s\n", b)
		return err
	}
	_, err = fmt.Fprintf(out, "Final estimate: PPL = %.4f +/- %.5f\n", res.PPL, res.PPLStderr)
	return err
}

// perplexityKVDType is the KV cache dtype perplexity runs with: the
// kv_dtype key when it is set (flag, environment or config), else, on a
// GGUF, F16, llama.cpp's default cache type, without which its figures
// are not reproduced (ggml rounds K and V, and q and the probabilities
// with them, to F16: up to 0.08% on stories260K-q8_0); else F32.
func perplexityKVDType(a *app, lm *loadedModel) (tensor.DType, error) {
	if lm.gen.GGML && a.cfg.Source("kv_dtype") == "default" {
		return tensor.F16, nil
	}
	return tensor.ParseDType(a.cfg.String("kv_dtype"))
}
