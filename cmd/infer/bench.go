package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stride-lm/stride/configs"
	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/engine"
)

func init() {
	registerKeys(
		configs.Key{Name: "bench.tests", Kind: configs.String, Default: "pp512,tg128", Help: "tests: ppN (prompt processing) and tgN (generation)"},
		configs.Key{Name: "bench.batches", Kind: configs.String, Default: "1", Help: "sequences decoding together in tg tests, e.g. 1,4,16"},
		configs.Key{Name: "bench.paths", Kind: configs.String, Default: "fused", Help: "attention paths, e.g. fused,naive"},
		configs.Key{Name: "bench.threads", Kind: configs.String, Default: "", Help: "thread counts, e.g. 1,2; empty = the threads key"},
		configs.Key{Name: "bench.weights", Kind: configs.String, Default: "", Help: "weight dtypes to compare, e.g. f32,bf16,q8_0; empty = the weights key"},
		configs.Key{Name: "bench.speculate", Kind: configs.String, Default: "", Help: "speculation modes to compare, e.g. off,ngram; empty = the speculate key"},
		configs.Key{Name: "bench.reps", Kind: configs.Int, Default: 3, Range: configs.AtLeast(1), Help: "repetitions per row (after one warm-up)"},
		configs.Key{Name: "bench.roofline", Kind: configs.Bool, Default: false, Help: "measure read bandwidth and show each decode row's fraction of it"},
		configs.Key{Name: "bench.greedy", Kind: configs.Bool, Default: false, Help: "tg rows decode greedily (temperature 0) instead of sampling at temperature 1"},
		configs.Key{Name: "bench.output", Kind: configs.String, Default: "table", Allowed: []string{"table", "markdown", "json"}, Help: "output of infer bench"},
	)
	register(newBenchCmd)
}

func newBenchCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure prompt processing and generation speed, llama-bench style",
		Long: `bench measures tokens per second, as mean ± standard deviation over --reps
runs after a warm-up, for each combination of weight dtype, attention path,
thread count and test: ppN processes an N-token prompt in one batched
prefill; tgN decodes N tokens after BOS (with --batches B, B sequences decode
together).

The runs are interleaved: after one warm-up run of every row, each
repetition runs every row once, so a shared machine's slow drift in speed
touches all rows alike and the ratios between rows are measured side by
side (--weights f32,bf16,q8_0 compares weight formats this way).

--roofline measures this machine's read bandwidth with a streaming pass
over a 1 GiB buffer before every round, and shows for each tg row the bytes
read per token (the weights, shared by the batch, plus the K/V of the
average context) and the fraction of the bandwidth roofline the achieved
rate reaches, each run against its own round's bandwidth.

--speculate off,ngram runs every row with and without prompt-lookup
speculative decoding (--draft, --ngram-min, --ngram-max); the spec column
names the mode, and an ngram tg row adds the drafts' acceptance rate and
the tokens kept per sequence-step. tg rates count generated tokens.

tg rows sample at temperature 1 (open-ended text, which stops early less
often); --greedy decodes them at temperature 0, the decoding whose drafts
are accepted wherever the text repeats itself.`,
		Example: `  infer bench --checkpoint stories110M.bin --roofline
  infer bench --tests pp512,tg128 --paths fused,naive --threads 1,2
  infer bench --weights bf16 --tests tg128 --batches 1,4,16
  infer bench --weights f32,bf16,q8_0 --tests pp512,tg128 --roofline
  infer bench --checkpoint stories260K.bin --tests tg256 --speculate off,ngram --greedy`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runBench(a, cmd) },
	}
	// --threads takes a list here (llama-bench's -t 1,2), so it binds to
	// bench.threads instead of the engine's threads key.
	modelFlags(a, cmd, "threads", "path", "weights")
	a.flag(cmd, "threads", "bench.threads", "thread counts")
	a.flag(cmd, "weights", "bench.weights", "weight dtypes")
	a.flag(cmd, "tests", "bench.tests", "tests")
	a.flag(cmd, "batches", "bench.batches", "tg batch sizes")
	a.flag(cmd, "paths", "bench.paths", "attention paths")
	a.flag(cmd, "speculate", "bench.speculate", "speculation modes, e.g. off,ngram")
	specFlags(a, cmd, "speculate")
	a.flag(cmd, "reps", "bench.reps", "repetitions")
	a.flag(cmd, "roofline", "bench.roofline", "bandwidth roofline")
	a.flag(cmd, "greedy", "bench.greedy", "greedy tg rows")
	a.flag(cmd, "output", "bench.output", "output format")
	cmd.AddCommand(newBenchServeCmd(a)) // benchserve.go
	return cmd
}

func parseBenchTests(spec string) ([]engine.BenchTest, error) {
	var out []engine.BenchTest
	for _, f := range strings.Split(spec, ",") {
		t, err := engine.ParseBenchTest(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("--tests: %v", err)
		}
		out = append(out, t)
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

// benchPlan is what the bench flags ask for.
type benchPlan struct {
	tests       []engine.BenchTest
	batches     []int
	threads     []int
	paths       []string
	weightsList []string
	specs       []string
	reps        int
	greedy      bool
}

func parseBenchPlan(a *app) (benchPlan, error) {
	var p benchPlan
	var err error
	if p.tests, err = parseBenchTests(a.cfg.String("bench.tests")); err != nil {
		return p, err
	}
	if p.batches, err = parseIntList("batches", a.cfg.String("bench.batches")); err != nil {
		return p, err
	}
	p.threads = []int{a.cfg.Int("threads")}
	if s := strings.TrimSpace(a.cfg.String("bench.threads")); s != "" {
		if p.threads, err = parseIntList("threads", s); err != nil {
			return p, err
		}
		for _, t := range p.threads {
			if t > maxThreads {
				return p, fmt.Errorf("--threads: %d is more than the most threads, %d", t, maxThreads)
			}
		}
	}
	for _, path := range strings.Split(a.cfg.String("bench.paths"), ",") {
		path = strings.TrimSpace(path)
		if path != "fused" && path != "naive" {
			return p, fmt.Errorf("--paths: %q is not fused or naive", path)
		}
		p.paths = append(p.paths, path)
	}
	p.specs = []string{a.cfg.String("speculate")}
	if sp := strings.TrimSpace(a.cfg.String("bench.speculate")); sp != "" {
		p.specs = nil
		for _, m := range strings.Split(sp, ",") {
			m = strings.TrimSpace(m)
			if m != "off" && m != "ngram" {
				return p, fmt.Errorf("--speculate: %q is not off or ngram", m)
			}
			p.specs = append(p.specs, m)
		}
	}
	p.reps = a.cfg.Int("bench.reps")
	p.greedy = a.cfg.Bool("bench.greedy")
	p.weightsList = []string{a.cfg.String("weights")}
	if s := strings.TrimSpace(a.cfg.String("bench.weights")); s != "" {
		p.weightsList = nil
		for _, w := range strings.Split(s, ",") {
			w = strings.TrimSpace(w)
			if _, _, err := weightDType(w); err != nil || w == "" {
				return p, fmt.Errorf("--weights: %q is not f32, f16, bf16 or q8_0", w)
			}
			p.weightsList = append(p.weightsList, w)
		}
	}
	return p, nil
}

// benchRig holds every engine of a run (one per weights, path and
// threads), all alive for the whole run so the repetitions interleave.
type benchRig struct {
	cases   []*engine.BenchCase
	engines []*engine.Engine
	models  []*model.Model
}

func (r *benchRig) close() {
	for _, e := range r.engines {
		e.Close()
	}
	for _, m := range r.models {
		m.Close() // unmap the checkpoint, after its engines
	}
}

// build loads the models and engines and lays out every row.
func (r *benchRig) build(a *app, p benchPlan) error {
	for _, w := range p.weightsList {
		lm, err := loadModelAs(a, w)
		if err != nil {
			return err
		}
		r.models = append(r.models, lm.m)
		weights := w
		switch {
		case lm.gen.StoredTypes != "":
			weights = lm.gen.StoredTypes // a GGUF's stored types, as it runs them
		case len(lm.m.Quantized) > 0:
			weights = "q8_0" // quantized at load, or read from a version-2 file
		}
		for _, path := range p.paths {
			for _, th := range p.threads {
				for _, spec := range p.specs {
					opts, err := engineOptions(a, nil)
					if err != nil {
						return err
					}
					opts.Path, opts.Threads, opts.Speculation.Method = path, th, spec
					e, err := engine.New(lm.m, opts)
					if err != nil {
						return err
					}
					r.engines = append(r.engines, e)
					label := engine.BenchLabel{Model: lm.name, SizeBytes: e.WeightBytes(), Params: lm.m.Config.Params(),
						Weights: weights, Path: path, Spec: spec, Threads: e.Threads()}
					r.addCases(label, e, p)
				}
			}
		}
	}
	return nil
}

func (r *benchRig) addCases(label engine.BenchLabel, e *engine.Engine, p benchPlan) {
	for _, t := range p.tests {
		bs := p.batches
		if !t.Gen {
			bs = []int{1}
		}
		for _, b := range bs {
			r.cases = append(r.cases, &engine.BenchCase{Engine: e, Test: t, Batch: b, Label: label, Greedy: p.greedy})
		}
	}
}

// measure runs the cases (engine.RunBench), showing progress on stderr:
// what an interrupt would keep (a bar on a terminal, a line per round
// elsewhere).
func (r *benchRig) measure(ctx context.Context, reps int, probe *engine.BandwidthProbe, stderr io.Writer) ([]float64, error) {
	bar := newProgress(stderr, "bench", int64((reps+1)*len(r.cases)))
	defer bar.done()
	return engine.RunBench(ctx, r.cases, reps, probe, func(round, runs int) {
		bar.set(int64(runs))
		if bar != nil || runs%len(r.cases) != 0 {
			return
		}
		if round == 0 {
			fmt.Fprintf(stderr, "bench: warm-up done\n")
		} else {
			fmt.Fprintf(stderr, "bench: round %d of %d done\n", round, reps)
		}
	})
}

func runBench(a *app, cmd *cobra.Command) error {
	plan, err := parseBenchPlan(a)
	if err != nil {
		return err
	}
	// --roofline: the read bandwidth is measured before every round, so
	// each timed run is compared with the bandwidth of its own minute on a
	// machine whose speed drifts.
	var probe *engine.BandwidthProbe
	roofline := a.cfg.Bool("bench.roofline")
	if roofline {
		probe = engine.NewBandwidthProbe(maxInt(plan.threads), benchProbeBytes)
		defer probe.Close()
	}
	rig := &benchRig{}
	defer rig.close()
	if err := rig.build(a, plan); err != nil {
		return err
	}
	bws, runErr := rig.measure(cmd.Context(), plan.reps, probe, cmd.ErrOrStderr())
	rows := engine.BenchRows(rig.cases)
	if len(bws) > 0 {
		lo, hi := bws[0], bws[0]
		for _, b := range bws {
			lo, hi = min(lo, b), max(hi, b)
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "read bandwidth (%d threads, 1 GiB streaming sum, before each of %d rounds): %.1f–%.1f GB/s\n",
			probe.Threads(), len(bws), lo, hi)
	}
	// The rows measured are printed even when a run failed or was
	// interrupted part way (with the repetitions they got).
	if len(rows) > 0 {
		if err := engine.WriteBench(cmd.OutOrStdout(), a.cfg.String("bench.output"), rows, roofline); err != nil {
			return err
		}
	}
	return runErr
}

// benchProbeBytes is the --roofline probe's buffer: 1 GiB, several times a
// server's last-level cache, so the probe measures DRAM (tests shrink it).
var benchProbeBytes = 1 << 30

func maxInt(v []int) int {
	m := 0
	for _, x := range v {
		m = max(m, x)
	}
	return m
}
