package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stride-lm/stride/cmd/infer/internal/outfile"
	"github.com/stride-lm/stride/configs"
	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/engine"
	"github.com/stride-lm/stride/model/engine/engineplot"
)

func init() {
	registerKeys(
		configs.Key{Name: "compare.contexts", Kind: configs.String, Default: "", Help: "comma-separated context lengths to sweep, e.g. 128,512,2048"},
		configs.Key{Name: "compare.decode", Kind: configs.Int, Default: 32, Range: configs.AtLeast(0), Help: "decode steps after each sweep point's prefill"},
		configs.Key{Name: "compare.plot", Kind: configs.Path, Default: "", Help: "PNG file for the sweep's time and bytes-copied chart"},
		configs.Key{Name: "compare.output", Kind: configs.String, Default: "table", Allowed: []string{"table", "markdown", "json"}, Help: "output of infer compare"},
	)
	register(newCompareCmd)
}

func newCompareCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "compare",
		Short: "Run the same generation through the naive and the fused attention path",
		Long: `compare runs one generation (same model, prompts, sampler settings and seed)
twice: through the naive copying path (three projections, KV gather,
repeat_interleave, materialized scores, transpose().contiguous()) and through
the fused path (one QKV projection cut by views, block tables handed to an
online-softmax kernel that writes [T, H·D] directly). It prints, side by side,
the time, the bytes allocated and copied, the copy operations, the peak of
extra live memory, the largest logit difference and whether the tokens match,
with the fused/naive ratio of each.

--contexts sweeps prefill lengths instead: for each length L a prompt of L
tokens is prefilled and --decode greedy tokens follow, so prefill runs at
S = L and decode at context L…L+decode. --plot draws time and bytes copied
against the context length for both paths.`,
		Example: `  infer compare
  infer compare --config configs/stories260k.yaml --prompt "Once upon a time" --steps 128
  infer compare --contexts 128,512,1536 --plot compare.png`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCompare(a, cmd)
		},
	}
	modelFlags(a, cmd)
	generationFlags(a, cmd)
	specFlags(a, cmd)
	a.flag(cmd, "contexts", "compare.contexts", "context lengths to sweep")
	a.flag(cmd, "decode", "compare.decode", "decode steps per sweep point")
	a.flag(cmd, "plot", "compare.plot", "PNG chart of the sweep")
	a.flag(cmd, "output", "compare.output", "output format")
	return cmd
}

func runCompare(a *app, cmd *cobra.Command) error {
	out, ctx := cmd.OutOrStdout(), cmd.Context()
	lm, err := loadModel(a)
	if err != nil {
		return err
	}
	defer lm.m.Close() // unmap the checkpoint
	opts, err := engineOptions(a, nil)
	if err != nil {
		return err
	}
	if err := engine.CheckMemory(lm.m.Config, opts); err != nil {
		return err
	}
	spec := strings.TrimSpace(a.cfg.String("compare.contexts"))
	var contexts []int
	if spec != "" {
		if contexts, err = parseContexts(spec); err != nil {
			return err
		}
	}
	// The chart's file is opened before the sweep, so a path that cannot
	// be written fails at once instead of after minutes of measuring.
	var plot *outfile.File
	if path := a.cfg.Path("compare.plot"); path != "" {
		if len(contexts) < 2 {
			return fmt.Errorf("--plot needs a sweep of at least two --contexts")
		}
		if plot, err = outfile.Create(ctx, path); err != nil {
			return fmt.Errorf("plot: %w", err)
		}
		defer plot.Abort()
	}
	points, runErr := comparePoints(ctx, a, lm, opts, contexts, cmd.ErrOrStderr())
	if len(points) == 0 {
		return runErr
	}
	// The rows measured are printed even when the sweep was interrupted
	// or failed part way, and before the chart is drawn.
	header := engine.CompareHeader(lm.name, lm.m.Config, opts.BlockSize)
	if err := engine.WriteCompare(out, a.cfg.String("compare.output"), header, points); err != nil {
		return err
	}
	if runErr != nil {
		return runErr
	}
	if plot != nil {
		png, err := engineplot.SweepPNG(lm.name, points)
		if err != nil {
			return err
		}
		if err := writePlot(plot, png); err != nil {
			return err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", plot.Name())
	}
	return nil
}

// writePlot writes a drawn chart to its file and commits it.
func writePlot(f *outfile.File, png io.WriterTo) error {
	if _, err := png.WriteTo(f); err != nil {
		return fmt.Errorf("plot %s: %w", f.Name(), err)
	}
	if err := f.Commit(); err != nil {
		return fmt.Errorf("plot %s: %w", f.Name(), err)
	}
	return nil
}

// comparePoints runs the single comparison, or the sweep over contexts
// (engine.CompareContexts, stopped by an interrupt between points); it
// returns the points measured so far with the error that stopped it.
func comparePoints(ctx context.Context, a *app, lm *loadedModel, opts engine.Options, contexts []int, stderr io.Writer) ([]engine.ComparePoint, error) {
	if len(contexts) == 0 {
		mk, err := generationRequests(a, lm, stderr)
		if err != nil {
			return nil, err
		}
		cmp, err := engine.Compare(lm.m, opts, mk)
		if err != nil {
			return nil, err
		}
		return []engine.ComparePoint{engine.NewComparePoint(0, cmp)}, nil
	}
	// Progress on stderr: a long sweep shows it is moving, and what an
	// interrupt would keep (a bar on a terminal, a line per point elsewhere).
	bar := newProgress(stderr, "compare", int64(len(contexts)))
	defer bar.done()
	return engine.CompareContexts(ctx, lm.m, opts, contexts, a.cfg.Int("compare.decode"), func(n int) {
		if bar.set(int64(n)); bar == nil {
			fmt.Fprintf(stderr, "compare: context %d measured (%d of %d)\n", contexts[n-1], n, len(contexts))
		}
	})
}

// generationRequests builds the requests of a plain comparison from the
// prompt/steps/sampler keys; it returns a constructor so each path starts
// from fresh samplers.
func generationRequests(a *app, lm *loadedModel, stderr io.Writer) (func() []engine.Request, error) {
	c := lm.m.Config
	ps, err := promptList(a, processStdin, nil)
	if err != nil {
		return nil, err
	}
	prompts, errs := lm.requestsFor(ps, lm.m.Config.SeqLen)
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	steps := clampSteps(a.cfg.Int("steps"), c.SeqLen, stderr)
	st, seed := samplerSettings(a, lm), samplerSeed(a)
	return func() []engine.Request {
		reqs := make([]engine.Request, len(prompts))
		for i, p := range prompts {
			reqs[i] = engine.Request{Prompt: p, Steps: steps, StopTokens: lm.gen.StopTokens, Sampler: model.NewSampler(c.VocabSize, st.temperature, st.topp, seed)}
		}
		return reqs
	}, nil
}

func parseContexts(spec string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--contexts: %q is not a positive context length", strings.TrimSpace(f))
		}
		out = append(out, n)
	}
	return out, nil
}
