package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/stride-lm/stride/configs"
	"github.com/stride-lm/stride/cuda"
	"github.com/stride-lm/stride/tensor"
)

func init() {
	registerKeys(
		configs.Key{Name: "coalesce.batch", Kind: configs.Int, Default: 2, Range: configs.AtLeast(1), Help: "B: sequences"},
		configs.Key{Name: "coalesce.seq", Kind: configs.Int, Default: 4096, Range: configs.AtLeast(1), Help: "S: new tokens per sequence (prefill) or context length (decode)"},
		configs.Key{Name: "coalesce.heads", Kind: configs.Int, Default: 32, Range: configs.AtLeast(1), Help: "H: query heads"},
		configs.Key{Name: "coalesce.kv_heads", Kind: configs.Int, Default: 32, Range: configs.AtLeast(1), Help: "KVH: key/value heads"},
		configs.Key{Name: "coalesce.head_dim", Kind: configs.Int, Default: 128, Range: configs.AtLeast(1), Help: "D: head width"},
		configs.Key{Name: "coalesce.block_size", Kind: configs.Int, Default: 16, Range: configs.AtLeast(1), Help: "KV cache block size"},
		configs.Key{Name: "coalesce.dtype", Kind: configs.String, Default: "f32", Help: "element type: f32, f16 or bf16"},
		configs.Key{Name: "coalesce.phase", Kind: configs.String, Default: "prefill", Allowed: []string{"prefill", "decode"}, Help: "prefill (S new tokens) or decode (1 new token over S cached)"},
		configs.Key{Name: "coalesce.partition", Kind: configs.Int, Default: 0, Range: configs.AtLeast(0), Help: "decode split-KV partition size; 0 = no split"},
		configs.Key{Name: "coalesce.bandwidth", Kind: configs.Float, Default: 4.8, Range: configs.Above(0), Help: "HBM bandwidth in TB/s for the time estimate (H200 peak: 4.8)"},
		configs.Key{Name: "coalesce.output", Kind: configs.String, Default: "table", Allowed: []string{"table", "markdown", "json"}, Help: "output of infer coalesce"},
		configs.Key{Name: "coalesce.device", Kind: configs.String, Default: "model", Allowed: []string{"model", "cuda"}, Help: "model: traffic model only; cuda: also run and time the kernels on GPU 0"},
		configs.Key{Name: "coalesce.reps", Kind: configs.Int, Default: 3, Range: configs.AtLeast(1), Help: "timed runs per path with --device cuda (after one warm-up)"},
		configs.Key{Name: "coalesce.warps", Kind: configs.Bool, Default: true, Help: "also print the seed's single-warp experiments"},
	)
	register(newCoalesceCmd)
}

func newCoalesceCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "coalesce",
		Short: "Model the GPU memory traffic of both attention paths, kernel by kernel",
		Long: `coalesce replays the global loads and stores of Stride's CUDA kernels at warp
granularity (32 threads, each kernel's real thread-to-element mapping, 32-byte
sectors, 128-byte lines, real base-address alignment) and prints, per kernel
and per path: requests, sectors per request, coalescing efficiency (bytes
requested / bytes moved), sector traffic, compulsory HBM bytes and an
estimated time at the given bandwidth, naive path vs fused path, with totals
and ratios. The counts are those Nsight Compute reports as
l1tex__t_requests/sectors_pipe_lsu_mem_global_op_{ld,st}.

It works on meta tensors: the seed's B=2, S=4096, H=32, D=128 layer (the
defaults) costs no memory. Times are estimates (compulsory bytes / bandwidth),
not measurements. --device cuda also runs and times the kernels on GPU 0; a
build without CUDA answers with how to get one.

Settings may come from a YAML file with a coalesce: section, e.g.
  coalesce:
    batch: 2
    seq: 4096
    heads: 32
    kv_heads: 8
    dtype: f16`,
		Example: `  infer coalesce
  infer coalesce --kv-heads 8 --dtype f16 --output markdown
  infer coalesce --phase decode --seq 32768 --partition 512
  infer coalesce --device cuda`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runCoalesce(a, cmd) },
	}
	a.flag(cmd, "batch", "coalesce.batch", "B")
	a.flag(cmd, "seq", "coalesce.seq", "S")
	a.flag(cmd, "heads", "coalesce.heads", "H")
	a.flag(cmd, "kv-heads", "coalesce.kv_heads", "KVH")
	a.flag(cmd, "head-dim", "coalesce.head_dim", "D")
	a.flag(cmd, "block-size", "coalesce.block_size", "KV cache block size")
	a.flag(cmd, "dtype", "coalesce.dtype", "element type")
	a.flag(cmd, "phase", "coalesce.phase", "attention step")
	a.flag(cmd, "partition", "coalesce.partition", "decode split-KV partition")
	a.flag(cmd, "bandwidth", "coalesce.bandwidth", "HBM TB/s")
	a.flag(cmd, "output", "coalesce.output", "output format")
	a.flag(cmd, "device", "coalesce.device", "where to count")
	a.flag(cmd, "reps", "coalesce.reps", "timed runs with --device cuda")
	a.flag(cmd, "warps", "coalesce.warps", "single-warp experiments")
	return cmd
}

// coalesceWorkload reads the workload from the coalesce.* keys.
func coalesceWorkload(a *app) (cuda.Workload, error) {
	dt, err := tensor.ParseDType(a.cfg.String("coalesce.dtype"))
	if err != nil {
		return cuda.Workload{}, fmt.Errorf("--dtype: %v", err)
	}
	phase, err := cuda.ParsePhase(a.cfg.String("coalesce.phase"))
	if err != nil {
		return cuda.Workload{}, fmt.Errorf("--phase: %v", err)
	}
	w := cuda.Workload{
		Batch: a.cfg.Int("coalesce.batch"), Seq: a.cfg.Int("coalesce.seq"),
		Heads: a.cfg.Int("coalesce.heads"), KVHeads: a.cfg.Int("coalesce.kv_heads"), HeadDim: a.cfg.Int("coalesce.head_dim"),
		BlockSize: a.cfg.Int("coalesce.block_size"), DType: dt, Phase: phase, Partition: a.cfg.Int("coalesce.partition"),
		Bandwidth: a.cfg.Float("coalesce.bandwidth") * 1e12,
	}
	return w, w.Validate()
}

func runCoalesce(a *app, cmd *cobra.Command) error {
	w, err := coalesceWorkload(a)
	if err != nil {
		return err
	}
	var c *cuda.Comparison
	device := ""
	switch a.cfg.String("coalesce.device") {
	case "cuda":
		reps := a.cfg.Int("coalesce.reps")
		if reps < 1 {
			return fmt.Errorf("--reps %d must be ≥ 1", reps)
		}
		d, err := cuda.Open(0)
		if err != nil {
			return err
		}
		if c, err = w.Measure(d, reps); err != nil {
			return err
		}
		device = d.Info.Name
	default:
		if c, err = w.Simulate(cuda.Aggregate); err != nil {
			return err
		}
	}
	return c.Report(a.cfg.Bool("coalesce.warps"), device).Write(cmd.OutOrStdout(), a.cfg.String("coalesce.output"))
}
