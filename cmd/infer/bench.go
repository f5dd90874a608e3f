package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/tensor"
	"github.com/stride-lm/stride/tensor/kernels"
)

func init() {
	registerKeys(
		configKey{Name: "bench.tests", Kind: kindString, Default: "pp512,tg128", Help: "tests: ppN (prompt processing) and tgN (generation)"},
		configKey{Name: "bench.batches", Kind: kindString, Default: "1", Help: "sequences decoding together in tg tests, e.g. 1,4,16"},
		configKey{Name: "bench.paths", Kind: kindString, Default: "fused", Help: "attention paths, e.g. fused,naive"},
		configKey{Name: "bench.threads", Kind: kindString, Default: "", Help: "thread counts, e.g. 1,2; empty = the threads key"},
		configKey{Name: "bench.reps", Kind: kindInt, Default: 3, Help: "repetitions per row (after one warm-up)"},
		configKey{Name: "bench.roofline", Kind: kindBool, Default: false, Help: "measure read bandwidth and show each decode row's fraction of it"},
		configKey{Name: "bench.output", Kind: kindString, Default: "table", Allowed: []string{"table", "markdown", "json"}, Help: "output of infer bench"},
	)
	register(newBenchCmd)
}

func newBenchCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure prompt processing and generation speed, llama-bench style",
		Long: `bench measures tokens per second, as mean ± standard deviation over --reps
runs after a warm-up, for each combination of attention path, thread count and
test: ppN processes an N-token prompt in one batched prefill; tgN decodes N
tokens after BOS (with --batches B, B sequences decode together).

--roofline first measures this machine's read bandwidth with a streaming
pass over a 1 GiB buffer, then shows for each tg row the bytes read per token
(the weights, shared by the batch, plus the K/V of the average context) and
the fraction of the bandwidth roofline the achieved rate reaches.`,
		Example: `  infer bench --checkpoint stories110M.bin --roofline
  infer bench --tests pp512,tg128 --paths fused,naive --threads 1,2
  infer bench --weights bf16 --tests tg128 --batches 1,4,16`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runBench(a, cmd) },
	}
	// --threads takes a list here (llama-bench's -t 1,2), so it binds to
	// bench.threads instead of the engine's threads key.
	modelFlags(a, cmd, "threads", "path")
	a.flag(cmd, "threads", "bench.threads", "thread counts")
	a.flag(cmd, "tests", "bench.tests", "tests")
	a.flag(cmd, "batches", "bench.batches", "tg batch sizes")
	a.flag(cmd, "paths", "bench.paths", "attention paths")
	a.flag(cmd, "reps", "bench.reps", "repetitions")
	a.flag(cmd, "roofline", "bench.roofline", "bandwidth roofline")
	a.flag(cmd, "output", "bench.output", "output format")
	return cmd
}

// benchRow is one line of the report.
type benchRow struct {
	Model     string  `json:"model"`
	SizeBytes int64   `json:"size_bytes"`
	Params    int64   `json:"params"`
	Weights   string  `json:"weights"`
	Path      string  `json:"path"`
	Threads   int     `json:"threads"`
	Test      string  `json:"test"`
	Batch     int     `json:"batch"`
	Mean      float64 `json:"tokens_per_second"`
	SD        float64 `json:"sd"`
	Reps      int     `json:"reps"`
	// Roofline columns (tg rows with --roofline only).
	BytesPerToken int64   `json:"bytes_per_token,omitempty"`
	BandwidthGBs  float64 `json:"bandwidth_gbs,omitempty"`
	Roofline      float64 `json:"roofline_fraction,omitempty"`
}

type benchTest struct {
	kind string // "pp" or "tg"
	n    int
}

func parseBenchTests(spec string) ([]benchTest, error) {
	var out []benchTest
	for _, f := range strings.Split(spec, ",") {
		f = strings.TrimSpace(f)
		if len(f) < 3 || (f[:2] != "pp" && f[:2] != "tg") {
			return nil, fmt.Errorf("--tests: %q is not ppN or tgN", f)
		}
		n, err := strconv.Atoi(f[2:])
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--tests: %q is not ppN or tgN with N >= 1", f)
		}
		out = append(out, benchTest{f[:2], n})
	}
	return out, nil
}

func parseIntList(flag, spec string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--%s: %q is not a positive integer", flag, strings.TrimSpace(f))
		}
		out = append(out, n)
	}
	return out, nil
}

func runBench(a *app, cmd *cobra.Command) error {
	tests, err := parseBenchTests(a.getString("bench.tests"))
	if err != nil {
		return err
	}
	batches, err := parseIntList("batches", a.getString("bench.batches"))
	if err != nil {
		return err
	}
	threads := []int{a.getInt("threads")}
	if s := strings.TrimSpace(a.getString("bench.threads")); s != "" {
		if threads, err = parseIntList("threads", s); err != nil {
			return err
		}
	}
	var paths []string
	for _, p := range strings.Split(a.getString("bench.paths"), ",") {
		p = strings.TrimSpace(p)
		if p != "fused" && p != "naive" {
			return fmt.Errorf("--paths: %q is not fused or naive", p)
		}
		paths = append(paths, p)
	}
	reps := a.getInt("bench.reps")
	if reps < 1 {
		return fmt.Errorf("--reps must be >= 1 (got %d)", reps)
	}
	lm, err := loadModel(a)
	if err != nil {
		return err
	}
	var bandwidth float64
	if a.getBool("bench.roofline") {
		p := kernels.NewPool(maxInt(threads))
		bandwidth = kernels.MeasureReadBandwidth(1<<30, p)
		fmt.Fprintf(cmd.ErrOrStderr(), "read bandwidth (%d threads, 1 GiB streaming sum): %.1f GB/s\n", p.Threads(), bandwidth)
		p.Close()
	}
	var rows []benchRow
	c := lm.m.Config
	for _, path := range paths {
		for _, th := range threads {
			opts, err := engineOptions(a, nil)
			if err != nil {
				return err
			}
			opts.Path, opts.Threads = path, th
			e, err := model.NewEngine(lm.m, opts)
			if err != nil {
				return err
			}
			weights := a.getString("weights")
			if len(lm.m.Quantized) > 0 {
				weights = "q8_0" // quantized at load, or read from a version-2 file
			}
			base := benchRow{Model: lm.name, SizeBytes: e.WeightBytes(), Params: c.Params(),
				Weights: weights, Path: path, Threads: e.Threads()}
			for _, t := range tests {
				if t.kind == "pp" {
					st, err := e.BenchPrompt(t.n, reps)
					if err != nil {
						e.Close()
						return err
					}
					r := base
					r.Test, r.Batch, r.Mean, r.SD, r.Reps = fmt.Sprintf("pp%d", t.n), 1, st.Mean, st.SD, st.Reps
					rows = append(rows, r)
					continue
				}
				for _, b := range batches {
					st, err := e.BenchGenerate(t.n, b, reps)
					if err != nil {
						e.Close()
						return err
					}
					r := base
					r.Test, r.Batch, r.Mean, r.SD, r.Reps = fmt.Sprintf("tg%d", t.n), b, st.Mean, st.SD, st.Reps
					if bandwidth > 0 {
						// Per decode row: the weights are read once per step
						// and shared by the batch's b rows; each row reads
						// its own K/V at the average context n/2.
						r.BytesPerToken = e.WeightBytes()/int64(b) + int64(t.n/2)*e.Cache().BytesPerToken()
						r.BandwidthGBs = bandwidth
						r.Roofline = float64(r.BytesPerToken) * r.Mean / (bandwidth * 1e9)
					}
					rows = append(rows, r)
				}
			}
			e.Close()
		}
	}
	out := cmd.OutOrStdout()
	switch a.getString("bench.output") {
	case "json":
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	case "markdown":
		return writeBench(out, rows, bandwidth > 0, true)
	}
	return writeBench(out, rows, bandwidth > 0, false)
}

func maxInt(v []int) int {
	m := 0
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

func writeBench(w io.Writer, rows []benchRow, roofline, markdown bool) error {
	head := []string{"model", "size", "params", "weights", "path", "threads", "test", "batch", "t/s"}
	if roofline {
		head = append(head, "bytes/token", "roofline")
	}
	var lines [][]string
	for _, r := range rows {
		l := []string{r.Model, tensor.FormatBytes(r.SizeBytes), formatParams(r.Params), r.Weights, r.Path,
			strconv.Itoa(r.Threads), r.Test, strconv.Itoa(r.Batch), fmt.Sprintf("%.2f ± %.2f", r.Mean, r.SD)}
		if roofline {
			if r.BytesPerToken > 0 {
				l = append(l, tensor.FormatBytes(r.BytesPerToken), fmt.Sprintf("%.0f%%", 100*r.Roofline))
			} else {
				l = append(l, "", "")
			}
		}
		lines = append(lines, l)
	}
	if markdown {
		fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(head)))
		for _, l := range lines {
			fmt.Fprintf(w, "| %s |\n", strings.Join(l, " | "))
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, l := range lines {
		fmt.Fprintln(tw, strings.Join(l, "\t"))
	}
	return tw.Flush()
}

func formatParams(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2f B", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.2f M", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.2f K", float64(n)/1e3)
	}
	return strconv.FormatInt(n, 10)
}
