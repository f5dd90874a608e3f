package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/stride-lm/stride/cuda"
	"github.com/stride-lm/stride/tensor"
)

func init() {
	registerKeys(
		configKey{Name: "coalesce.batch", Kind: kindInt, Default: 2, Range: atLeast(1), Help: "B: sequences"},
		configKey{Name: "coalesce.seq", Kind: kindInt, Default: 4096, Range: atLeast(1), Help: "S: new tokens per sequence (prefill) or context length (decode)"},
		configKey{Name: "coalesce.heads", Kind: kindInt, Default: 32, Range: atLeast(1), Help: "H: query heads"},
		configKey{Name: "coalesce.kv_heads", Kind: kindInt, Default: 32, Range: atLeast(1), Help: "KVH: key/value heads"},
		configKey{Name: "coalesce.head_dim", Kind: kindInt, Default: 128, Range: atLeast(1), Help: "D: head width"},
		configKey{Name: "coalesce.block_size", Kind: kindInt, Default: 16, Range: atLeast(1), Help: "KV cache block size"},
		configKey{Name: "coalesce.dtype", Kind: kindString, Default: "f32", Help: "element type: f32, f16 or bf16"},
		configKey{Name: "coalesce.phase", Kind: kindString, Default: "prefill", Allowed: []string{"prefill", "decode"}, Help: "prefill (S new tokens) or decode (1 new token over S cached)"},
		configKey{Name: "coalesce.partition", Kind: kindInt, Default: 0, Range: atLeast(0), Help: "decode split-KV partition size; 0 = no split"},
		configKey{Name: "coalesce.bandwidth", Kind: kindFloat, Default: 4.8, Range: above(0), Help: "HBM bandwidth in TB/s for the time estimate (H200 peak: 4.8)"},
		configKey{Name: "coalesce.output", Kind: kindString, Default: "table", Allowed: []string{"table", "markdown", "json"}, Help: "output of infer coalesce"},
		configKey{Name: "coalesce.device", Kind: kindString, Default: "model", Allowed: []string{"model", "cuda"}, Help: "model: traffic model only; cuda: also run and time the kernels on GPU 0"},
		configKey{Name: "coalesce.reps", Kind: kindInt, Default: 3, Range: atLeast(1), Help: "timed runs per path with --device cuda (after one warm-up)"},
		configKey{Name: "coalesce.warps", Kind: kindBool, Default: true, Help: "also print the seed's single-warp experiments"},
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
	dt, err := tensor.ParseDType(a.getString("coalesce.dtype"))
	if err != nil {
		return cuda.Workload{}, fmt.Errorf("--dtype: %v", err)
	}
	phase, err := cuda.ParsePhase(a.getString("coalesce.phase"))
	if err != nil {
		return cuda.Workload{}, fmt.Errorf("--phase: %v", err)
	}
	w := cuda.Workload{
		Batch: a.getInt("coalesce.batch"), Seq: a.getInt("coalesce.seq"),
		Heads: a.getInt("coalesce.heads"), KVHeads: a.getInt("coalesce.kv_heads"), HeadDim: a.getInt("coalesce.head_dim"),
		BlockSize: a.getInt("coalesce.block_size"), DType: dt, Phase: phase, Partition: a.getInt("coalesce.partition"),
		Bandwidth: a.getFloat("coalesce.bandwidth") * 1e12,
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
	switch a.getString("coalesce.device") {
	case "cuda":
		reps := a.getInt("coalesce.reps")
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
	return c.Report(a.getBool("coalesce.warps"), device).Write(cmd.OutOrStdout(), a.getString("coalesce.output"))
}
