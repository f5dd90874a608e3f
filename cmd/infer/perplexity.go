package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/spf13/cobra"

	"github.com/stride-lm/stride/attention"
	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/tensor"
	"github.com/stride-lm/stride/tensor/kernels"
)

func init() {
	registerKeys(
		configKey{Name: "perplexity.ctx", Kind: kindInt, Default: 0, Range: atLeast(0), Help: "tokens per chunk; 0 = min(seq_len, 512)"},
		configKey{Name: "perplexity.file", Kind: kindPath, Default: "", Help: "text to score; empty = the argument, else stdin"},
		configKey{Name: "perplexity.output", Kind: kindString, Default: "text", Allowed: []string{"text", "json"}, Help: "output of infer perplexity"},
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
running PPL after each chunk goes to stderr as [chunk]ppl, and the last line
of stdout reads "Final estimate: PPL = 3.3607 +/- 0.15656". The text needs at
least 2·ctx tokens. With --output json, one object:
{"ppl", "ppl_stderr", "nll", "tokens_scored", "chunks", "ctx"}.

The text is FILE, or -f FILE, or stdin when neither is given.`,
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

// pplResult is what perplexity reports; the JSON keys are the issue's.
type pplResult struct {
	PPL          float64 `json:"ppl"`
	PPLStderr    float64 `json:"ppl_stderr"`
	NLL          float64 `json:"nll"`
	TokensScored int     `json:"tokens_scored"`
	Chunks       int     `json:"chunks"`
	Ctx          int     `json:"ctx"`
}

// maxPerplexityText bounds the text read (stdin or file): llama.cpp's
// usual wiki.test.raw is 1.3 MB.
const maxPerplexityText = 256 << 20

func runPerplexity(a *app, cmd *cobra.Command, args []string) error {
	out, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	path := a.getPath("perplexity.file")
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
	text, err := io.ReadAll(io.LimitReader(r, maxPerplexityText+1))
	if err != nil {
		return fmt.Errorf("perplexity: reading the text: %w", err)
	}
	if len(text) > maxPerplexityText {
		return fmt.Errorf("perplexity: the text is larger than %d MiB", maxPerplexityText>>20)
	}
	lm, err := loadModel(a)
	if err != nil {
		return err
	}
	defer lm.m.Close()
	c := lm.m.Config
	nctx := a.getInt("perplexity.ctx")
	if nctx == 0 {
		nctx = min(c.SeqLen, 512)
	}
	if nctx < 4 || nctx > c.SeqLen {
		return fmt.Errorf("perplexity: --ctx %d must be in [4, seq_len=%d]", nctx, c.SeqLen)
	}
	// BOS as the tokenizer's file asks (llama.cpp's add_bos): a llama2.c
	// tokenizer always, a GGUF's per tokenizer.ggml.add_bos_token.
	bos, addBOS := lm.codec.BOS(), lm.codec.AddBOS() && lm.codec.BOS() >= 0
	tokens, err := lm.codec.Encode(string(text), addBOS, false)
	if err != nil {
		return fmt.Errorf("perplexity: %w", err)
	}
	if !addBOS {
		bos = -1
	}
	fmt.Fprintf(stderr, "perplexity: %d tokens, %d chunks of %d, scoring %d per chunk\n",
		len(tokens), len(tokens)/nctx, nctx, nctx-1-nctx/2)
	kvdt, err := perplexityKVDType(a, lm)
	if err != nil {
		return err
	}
	res, err := perplexity(lm.m, tokens, nctx, bos, a.getInt("threads"), kvdt, stderr)
	if err != nil {
		return err
	}
	if a.getString("perplexity.output") == "json" {
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
	if lm.ggml && a.source("kv_dtype") == "default" {
		return tensor.F16, nil
	}
	return tensor.ParseDType(a.getString("kv_dtype"))
}

// perplexity runs llama-perplexity's method (see the command's help) on
// tokens, which start with BOS when bos >= 0; each chunk's first token is
// replaced by bos, unless bos < 0 (a vocabulary without add_bos, as
// llama.cpp does then). progress receives "[i]ppl," after each
// chunk and a newline at the end.
func perplexity(m *model.Model, tokens []int, nctx, bos, threads int, kvdt tensor.DType, progress io.Writer) (pplResult, error) {
	c := m.Config
	if len(tokens) < 2*nctx {
		return pplResult{}, fmt.Errorf("perplexity: the text has %d tokens; a context of %d needs at least %d", len(tokens), nctx, 2*nctx)
	}
	nChunks := len(tokens) / nctx
	first := nctx / 2

	pool := kernels.NewPool(threads)
	defer pool.Close()
	path := attention.NewFused(attention.Options{Threads: pool.Threads(), Runner: pool})
	f, err := model.NewForward(m, model.ForwardOptions{Projection: model.FusedQKV, Path: path, Pool: pool})
	if err != nil {
		return pplResult{}, err
	}
	defer f.Close()
	// One sequence of nctx positions in blocks 0, 1, …: every chunk
	// overwrites the cache from position 0, and causal attention reads
	// only positions already written by this chunk.
	const bs = 16
	blocks := (nctx + bs - 1) / bs
	caches := make([]model.LayerCache, c.NLayers)
	for l := range caches {
		k, err := tensor.Zeros(nil, kvdt, blocks, bs, c.NKVHeads, c.HeadDim())
		if err != nil {
			return pplResult{}, err
		}
		v, err := tensor.Zeros(nil, kvdt, blocks, bs, c.NKVHeads, c.HeadDim())
		if err != nil {
			return pplResult{}, err
		}
		caches[l] = model.LayerCache{K: k, V: v}
	}
	b, _, err := attention.NewLinearBatch([]int{nctx}, []int{nctx}, bs)
	if err != nil {
		return pplResult{}, err
	}
	positions := make([]int, nctx)
	for i := range positions {
		positions[i] = i
	}
	rows := make([]int, 0, nctx-1-first)
	for r := first; r < nctx-1; r++ {
		rows = append(rows, r)
	}
	chunk := make([]int, nctx)
	var nll, nll2 float64
	count := 0
	for i := 0; i < nChunks; i++ {
		start := i * nctx
		copy(chunk, tokens[start:start+nctx])
		if bos >= 0 {
			chunk[0] = bos
		}
		logits, err := f.Run(chunk, positions, b, caches, rows)
		if err != nil {
			return pplResult{}, fmt.Errorf("perplexity: chunk %d: %w", i+1, err)
		}
		for k, r := range rows {
			v := -logSoftmax(logits[k*c.VocabSize:(k+1)*c.VocabSize], tokens[start+r+1])
			nll += v
			nll2 += v * v
		}
		count += len(rows)
		fmt.Fprintf(progress, "[%d]%.4f,", i+1, math.Exp(nll/float64(count)))
	}
	fmt.Fprintln(progress)
	mean, mean2 := nll/float64(count), nll2/float64(count)
	res := pplResult{PPL: math.Exp(mean), NLL: mean, TokensScored: count, Chunks: nChunks, Ctx: nctx}
	if v := mean2 - mean*mean; v > 0 && count > 1 {
		res.PPLStderr = math.Sqrt(v/float64(count-1)) * res.PPL
	}
	return res, nil
}

// logSoftmax is log p(tok) under softmax(logits), computed as llama.cpp's
// perplexity tool does: the maximum in float32, Σ expf(l − max) summed in
// float64, then l_tok − max − log(Σ).
func logSoftmax(logits []float32, tok int) float64 {
	mx := logits[0]
	for _, l := range logits[1:] {
		mx = max(mx, l)
	}
	var sum float64
	for _, l := range logits {
		sum += float64(float32(math.Exp(float64(l - mx))))
	}
	return float64(logits[tok]-mx) - math.Log(sum)
}
