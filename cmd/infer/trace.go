package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/stride-lm/stride/attention"
	"github.com/stride-lm/stride/configs"
	"github.com/stride-lm/stride/tensor"
)

func init() {
	registerKeys(
		configs.Key{Name: "trace.path", Kind: configs.String, Default: "both", Allowed: []string{"both", "naive", "fused"}, Help: "attention path(s) to trace"},
		configs.Key{Name: "trace.meta", Kind: configs.Bool, Default: false, Help: "compute layouts on meta tensors (no data, any size)"},
		configs.Key{Name: "trace.batch", Kind: configs.Int, Default: 1, Range: configs.AtLeast(1), Help: "B: sequences"},
		configs.Key{Name: "trace.seq", Kind: configs.Int, Default: 16, Range: configs.AtLeast(1), Help: "S: new tokens per sequence"},
		configs.Key{Name: "trace.past", Kind: configs.Int, Default: 0, Range: configs.AtLeast(0), Help: "tokens already cached per sequence (S=1 with past>0 is a decode step)"},
		configs.Key{Name: "trace.heads", Kind: configs.Int, Default: 0, Range: configs.AtLeast(0), Help: "H: query heads; 0 = the model's"},
		configs.Key{Name: "trace.kv_heads", Kind: configs.Int, Default: 0, Range: configs.AtLeast(0), Help: "KVH: key/value heads; 0 = the model's"},
		configs.Key{Name: "trace.head_dim", Kind: configs.Int, Default: 0, Range: configs.AtLeast(0), Help: "D: head width; 0 = the model's"},
		configs.Key{Name: "trace.block_size", Kind: configs.Int, Default: 16, Range: configs.AtLeast(1), Help: "KV cache block size"},
		configs.Key{Name: "trace.output", Kind: configs.String, Default: "table", Allowed: []string{"table", "markdown", "json"}, Help: "output of infer trace"},
	)
	register(newTraceCmd)
}

func newTraceCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trace",
		Short: "Print the layout of every stage of one attention layer, per path",
		Long: `trace runs one attention layer (B sequences of S new tokens on top of past
cached ones) through the naive and/or the fused path and prints one row per
stage: the op, shape, strides, storage offset, is_contiguous(), whether the
storage is new or shared with which earlier tensor, and the bytes allocated
and copied. The numbers are the ones PyTorch would print for the same code.

With --meta the layouts are computed on meta tensors, so the seed's
B=2, S=4096, H=32, D=128 layer (configs/seed-mha.yaml) costs nothing; without
it the layer runs for real on random inputs and the accounting is measured.
Meta mode allocates no tensor data, but the batch's slot mapping and block
tables hold one int32 per token and KV block, so B·(S + blocks) is limited to
2^24 entries and every size product is checked for overflow first.
Head counts default to the model's (--checkpoint; the built-in stories260K
without it, or --checkpoint synthetic for the synthetic.* keys).
The naive path is the PyTorch program in configs/mha-layout.py: run it with
infer layout -f configs/mha-layout.py to see the same layouts row by row.`,
		Example: `  infer trace --config configs/seed-mha.yaml --meta
  infer trace --heads 12 --kv-heads 4 --head-dim 64 --seq 8 --output markdown
  infer trace --seq 1 --past 127 --path naive`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runTrace(a, cmd) },
	}
	a.flag(cmd, "checkpoint", "checkpoint", "take head counts from this checkpoint")
	syntheticFlags(a, cmd)
	a.flag(cmd, "path", "trace.path", "path(s) to trace")
	a.flag(cmd, "meta", "trace.meta", "layouts only, on meta tensors")
	a.flag(cmd, "batch", "trace.batch", "B")
	a.flag(cmd, "seq", "trace.seq", "S")
	a.flag(cmd, "past", "trace.past", "cached tokens per sequence")
	a.flag(cmd, "heads", "trace.heads", "H")
	a.flag(cmd, "kv-heads", "trace.kv_heads", "KVH")
	a.flag(cmd, "head-dim", "trace.head_dim", "D")
	a.flag(cmd, "block-size", "trace.block_size", "KV cache block size")
	a.flag(cmd, "output", "trace.output", "output format")
	return cmd
}

func runTrace(a *app, cmd *cobra.Command) error {
	cfg := attention.TraceConfig{
		B: a.cfg.Int("trace.batch"), S: a.cfg.Int("trace.seq"), Past: a.cfg.Int("trace.past"),
		H: a.cfg.Int("trace.heads"), KVH: a.cfg.Int("trace.kv_heads"), D: a.cfg.Int("trace.head_dim"),
		BlockSize: a.cfg.Int("trace.block_size"), Meta: a.cfg.Bool("trace.meta"), Seed: 1,
	}
	if cfg.H == 0 || cfg.KVH == 0 || cfg.D == 0 {
		lm, err := loadModel(a)
		if err != nil {
			return err
		}
		defer lm.m.Close() // unmap the checkpoint
		c := lm.m.Config
		if cfg.H == 0 {
			cfg.H = c.NHeads
		}
		if cfg.KVH == 0 {
			cfg.KVH = c.NKVHeads
		}
		if cfg.D == 0 {
			cfg.D = c.HeadDim()
		}
	}
	paths := []string{"naive", "fused"}
	if p := a.cfg.String("trace.path"); p != "both" {
		paths = []string{p}
	}
	var traces []*tensor.Trace
	for _, p := range paths {
		tr, err := attention.TraceLayer(p, cfg)
		if err != nil {
			return err
		}
		traces = append(traces, tr)
	}
	return writeTraces(cmd.OutOrStdout(), a.cfg.String("trace.output"), traces)
}

func writeTraces(w io.Writer, format string, traces []*tensor.Trace) error {
	if format == "json" {
		type traceJSON struct {
			Title string             `json:"title"`
			Steps []tensor.TraceStep `json:"steps"`
		}
		var all []traceJSON
		for _, tr := range traces {
			all = append(all, traceJSON{tr.Title, tr.Steps})
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(all)
	}
	for i, tr := range traces {
		if i > 0 {
			fmt.Fprintln(w)
		}
		var err error
		if format == "markdown" {
			err = tr.WriteMarkdown(w)
		} else {
			err = tr.WriteTable(w)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
