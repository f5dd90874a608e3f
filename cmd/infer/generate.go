package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/tokenizer"
)

func init() {
	registerKeys(
		configKey{Name: "prompt", Kind: kindStrings, Default: []string{}, Help: "prompt text; a list (or a repeated --prompt) runs several sequences"},
		configKey{Name: "prompts", Kind: kindPath, Default: "", Help: "file with one prompt per line"},
		configKey{Name: "steps", Kind: kindInt, Default: 256, Help: "positions to run, prompt included (run.c's -n); 0 = seq_len"},
		configKey{Name: "temperature", Kind: kindFloat, Default: 1.0, Help: "sampling temperature; 0 = greedy"},
		configKey{Name: "topp", Kind: kindFloat, Default: 0.9, Help: "top-p (nucleus) sampling; 0 or 1 = off"},
		configKey{Name: "seed", Kind: kindInt, Default: 0, Help: "RNG seed; 0 = time-based, as run.c"},
		configKey{Name: "generate.output", Kind: kindString, Default: "text", Allowed: []string{"text", "ids", "json"}, Help: "output of infer generate"},
	)
	register(newGenerateCmd)
}

func newGenerateCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "generate",
		Short: "Generate text with a llama2.c checkpoint or the embedded synthetic model",
		Long: `generate runs a Llama-architecture model the way llama2.c's run.c does: the
same tokenizer, RoPE, sampler (xorshift RNG, temperature, top-p) and stopping
rule, so for the same checkpoint, prompt, temperature, top-p, seed and steps
the token stream is run.c's.

Several prompts (repeat --prompt, or --prompts FILE with one per line) run
together with continuous batching over the paged KV cache; each sequence's
output is what it would be alone. Without --checkpoint the synthetic model of
the synthetic.* keys runs (random weights: its text is noise).

Output: text streams token by token (one prompt) and ends with a tok/s line
on stderr; ids prints the ids after BOS on one line per sequence (prompt
tokens, then generated ones); json prints one JSON object per sequence.`,
		Example: `  infer generate --config configs/stories260k.yaml --temperature 0
  infer generate --checkpoint stories15M.bin --tokenizer tokenizer.bin --prompt "Once upon a time"
  infer generate --config configs/tiny.yaml --prompt a --prompt b --output json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGenerate(a, cmd)
		},
	}
	modelFlags(a, cmd)
	generationFlags(a, cmd)
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
	Error        string `json:"error,omitempty"`
}

func runGenerate(a *app, cmd *cobra.Command) error {
	out, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	lm, err := loadModel(a)
	if err != nil {
		return err
	}
	defer lm.m.Close() // unmap the checkpoint
	c := lm.m.Config
	texts, err := promptTexts(a)
	if err != nil {
		return err
	}
	steps := clampSteps(a.getInt("steps"), c.SeqLen, stderr)
	temp, topp := a.getFloat("temperature"), a.getFloat("topp")
	if temp < 0 {
		return fmt.Errorf("temperature must be >= 0 (got %g)", temp)
	}
	seed := samplerSeed(a)
	var reqs []model.Request
	var encodeErrs = make([]error, len(texts))
	for i, text := range texts {
		ids, err := lm.codec.Encode(text, true, false)
		if err == nil && len(ids) > c.SeqLen {
			err = fmt.Errorf("prompt %d is %d tokens, longer than seq_len %d", i, len(ids), c.SeqLen)
		}
		if err != nil {
			encodeErrs[i] = err
			ids = []int{model.BOSID}
		}
		reqs = append(reqs, model.Request{Prompt: ids, Steps: steps, StopTokens: lm.stop,
			Sampler: model.NewSampler(c.VocabSize, float32(temp), float32(topp), seed)})
	}
	opts, err := engineOptions(a, nil)
	if err != nil {
		return err
	}
	e, err := model.NewEngine(lm.m, opts)
	if err != nil {
		return err
	}
	defer e.Close()

	format := a.getString("generate.output")
	stream := format == "text" && len(texts) == 1 && encodeErrs[0] == nil
	var first time.Time
	var streamed int
	emit := func(ev model.Event) {
		if !stream {
			return
		}
		// run.c starts its clock after the first step; so do we.
		if streamed == 0 {
			first = time.Now()
		}
		streamed++
		writePiece(out, lm.codec, lm.codec.Decode(ev.Prev, ev.Token))
	}
	res, _, err := e.Generate(reqs, emit)
	if err != nil {
		return err
	}
	for i := range res {
		if encodeErrs[i] != nil {
			res[i] = model.Result{Err: encodeErrs[i]}
		}
	}
	if stream {
		if res[0].Err != nil {
			return res[0].Err
		}
		fmt.Fprintln(out) // run.c ends its text with a newline
		if streamed > 1 {
			fmt.Fprintf(stderr, "achieved tok/s: %f\n", float64(streamed-1)/time.Since(first).Seconds())
		}
		return nil
	}
	failed := 0
	for i, r := range res {
		if r.Err != nil {
			failed++
			fmt.Fprintf(stderr, "infer: sequence %d: %v\n", i, r.Err)
		}
		switch format {
		case "ids":
			if r.Err == nil {
				writeIDs(out, r.Tokens)
			}
		case "json":
			o := seqOutput{Seq: i, Prompt: texts[i], IDs: r.Tokens, Text: decodeAll(lm.codec, r.Tokens),
				CachedTokens: r.CachedTokens, Preemptions: r.Preemptions}
			if o.IDs == nil {
				o.IDs = []int{}
			}
			if r.Err != nil {
				o.Error = r.Err.Error()
			}
			b, _ := json.Marshal(o)
			fmt.Fprintln(out, string(b))
		default:
			if r.Err == nil {
				if len(res) > 1 {
					fmt.Fprintf(out, "=== sequence %d ===\n", i)
				}
				fmt.Fprintln(out, decodeAll(lm.codec, r.Tokens))
			}
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d sequences failed", failed, len(res))
	}
	return nil
}

// decodeAll turns the ids after BOS into text as run.c prints it.
func decodeAll(codec tokenizer.Codec, ids []int) string {
	var b []byte
	prev := model.BOSID
	for _, id := range ids {
		b = appendPiece(codec, b, codec.Decode(prev, id))
		prev = id
	}
	return string(b)
}

// appendPiece applies run.c's safe_printf for the run.c codecs: a piece
// that is a single byte which is neither printable nor whitespace in the C
// locale (control bytes, and every byte >= 0x80 from a <0xHH> byte piece)
// is dropped, so the printed text is exactly run.c's. Other tokenizers'
// pieces are printed whole (see tokenizer.Printable).
func appendPiece(codec tokenizer.Codec, b []byte, piece string) []byte {
	return append(b, tokenizer.Printable(codec, piece)...)
}

func writePiece(w io.Writer, codec tokenizer.Codec, piece string) {
	if b := appendPiece(codec, nil, piece); len(b) > 0 {
		w.Write(b)
	}
}

func writeIDs(w io.Writer, ids []int) {
	b := make([]byte, 0, len(ids)*4)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ' ')
		}
		b = fmt.Appendf(b, "%d", id)
	}
	fmt.Fprintln(w, string(b))
}
