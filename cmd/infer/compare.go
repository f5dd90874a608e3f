package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/stride-lm/stride/cmd/infer/internal/outfile"
	"github.com/stride-lm/stride/configs"
	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/engine"
	"github.com/stride-lm/stride/tensor"
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

// comparePoint is one row of a sweep (or the single comparison).
type comparePoint struct {
	Context int               `json:"context,omitempty"`
	Naive   pathJSON          `json:"naive"`
	Fused   pathJSON          `json:"fused"`
	Ratio   map[string]string `json:"fused_over_naive"`
	MaxDLog float64           `json:"max_abs_delta_logit"`
	Same    bool              `json:"tokens_identical"`
	// First is where the tokens first differ, absent when they do not.
	First *engine.Divergence `json:"first_divergence,omitempty"`
}

// divergenceLine says where the paths' tokens first part and by how
// little: the logit gap of the two picks in each path against the
// logits' largest difference.
func divergenceLine(d *engine.Divergence) string {
	return fmt.Sprintf("request %d position %d: naive %d, fused %d; margins %.3g (naive) and %.3g (fused), |Δlogit| %.3g",
		d.Seq, d.Pos, d.NaiveToken, d.FusedToken, d.NaiveMargin, d.FusedMargin, d.DeltaLogit)
}

type pathJSON struct {
	PrefillMS       float64 `json:"prefill_ms"`
	DecodeMSPerTok  float64 `json:"decode_ms_per_token"`
	TokensPerSecond float64 `json:"tokens_per_second"`
	BytesAllocated  int64   `json:"bytes_allocated"`
	BytesCopied     int64   `json:"bytes_copied"`
	CopyOps         int64   `json:"copy_ops"`
	PeakExtraBytes  int64   `json:"peak_extra_bytes"`
	PrefillTokens   int     `json:"prefill_tokens"`
	DecodeTokens    int     `json:"decode_tokens"`
}

func toPathJSON(r engine.PathReport) pathJSON {
	return pathJSON{
		PrefillMS: ms(r.PrefillTime), DecodeMSPerTok: ms(r.DecodePerToken()), TokensPerSecond: r.TokensPerSecond(),
		BytesAllocated: r.Stats.BytesAllocated, BytesCopied: r.Stats.BytesCopied, CopyOps: r.Stats.CopyOps,
		PeakExtraBytes: r.PeakExtraBytes, PrefillTokens: r.PrefillTokens, DecodeTokens: r.DecodeTokens,
	}
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

func newPoint(ctx int, c *engine.Comparison) comparePoint {
	p := comparePoint{Context: ctx, Naive: toPathJSON(c.Naive), Fused: toPathJSON(c.Fused),
		MaxDLog: c.MaxAbsDeltaLogit, Same: c.TokensIdentical, First: c.First, Ratio: map[string]string{}}
	for _, r := range compareRows(p) {
		if r.ratio != "" {
			p.Ratio[r.key] = r.ratio
		}
	}
	return p
}

type compareRow struct{ metric, key, naive, fused, ratio string }

// compareRows lays a point out as the table's rows: one metric per row,
// both paths and fused/naive side by side.
func compareRows(p comparePoint) []compareRow {
	f := func(v float64, unit string) string { return strconv.FormatFloat(v, 'f', 3, 64) + unit }
	b := func(v int64) string { return tensor.FormatBytes(v) }
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	ratio := func(fu, na float64) string {
		if na == 0 {
			if fu == 0 {
				return "—"
			}
			return "∞"
		}
		return strconv.FormatFloat(fu/na, 'f', 3, 64) + "×"
	}
	N, F := p.Naive, p.Fused
	return []compareRow{
		{"prefill time", "prefill_ms", f(N.PrefillMS, " ms"), f(F.PrefillMS, " ms"), ratio(F.PrefillMS, N.PrefillMS)},
		{"decode time / token", "decode_ms_per_token", f(N.DecodeMSPerTok, " ms"), f(F.DecodeMSPerTok, " ms"), ratio(F.DecodeMSPerTok, N.DecodeMSPerTok)},
		{"tokens / s", "tokens_per_second", f(N.TokensPerSecond, ""), f(F.TokensPerSecond, ""), ratio(F.TokensPerSecond, N.TokensPerSecond)},
		{"bytes allocated", "bytes_allocated", b(N.BytesAllocated), b(F.BytesAllocated), ratio(float64(F.BytesAllocated), float64(N.BytesAllocated))},
		{"bytes copied", "bytes_copied", b(N.BytesCopied), b(F.BytesCopied), ratio(float64(F.BytesCopied), float64(N.BytesCopied))},
		{"copy ops", "copy_ops", n(N.CopyOps), n(F.CopyOps), ratio(float64(F.CopyOps), float64(N.CopyOps))},
		{"peak extra live bytes", "peak_extra_bytes", b(N.PeakExtraBytes), b(F.PeakExtraBytes), ratio(float64(F.PeakExtraBytes), float64(N.PeakExtraBytes))},
	}
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
	if err := writeCompare(out, a.cfg.String("compare.output"), compareHeader(lm, opts), points); err != nil {
		return err
	}
	if runErr != nil {
		return runErr
	}
	if plot != nil {
		if err := plotSweep(plot, lm.name, points); err != nil {
			return err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", plot.Name())
	}
	return nil
}

// comparePoints runs the single comparison, or the sweep over contexts,
// stopping at the first error or at an interrupt (checked between sweep
// points: one point runs to its end); it returns the points measured so
// far with that error.
func comparePoints(ctx context.Context, a *app, lm *loadedModel, opts engine.Options, contexts []int, stderr io.Writer) ([]comparePoint, error) {
	if len(contexts) == 0 {
		mk, err := generationRequests(a, lm, stderr)
		if err != nil {
			return nil, err
		}
		cmp, err := engine.Compare(lm.m, opts, mk)
		if err != nil {
			return nil, err
		}
		return []comparePoint{newPoint(0, cmp)}, nil
	}
	var points []comparePoint
	bar := newProgress(stderr, "compare", int64(len(contexts)))
	defer bar.done()
	for _, L := range contexts {
		if err := ctx.Err(); err != nil {
			return points, err
		}
		mk, err := engine.ContextRequests(lm.m.Config, L, a.cfg.Int("compare.decode"))
		if err != nil {
			return points, err
		}
		cmp, err := engine.Compare(lm.m, opts, mk)
		if err != nil {
			return points, fmt.Errorf("context %d: %w", L, err)
		}
		points = append(points, newPoint(L, cmp))
		// Progress on stderr: a long sweep shows it is moving, and what
		// an interrupt would keep (a bar on a terminal).
		if bar.set(int64(len(points))); bar != nil {
			continue
		}
		fmt.Fprintf(stderr, "compare: context %d measured (%d of %d)\n", L, len(points), len(contexts))
	}
	// One point cannot be stopped part way (engine.Compare runs to the
	// end), so an interrupt during the last one is reported here.
	return points, ctx.Err()
}

func compareHeader(lm *loadedModel, opts engine.Options) string {
	c := lm.m.Config
	return fmt.Sprintf("model %s: dim %d, %d layers, %d heads, %d kv heads; block size %d",
		lm.name, c.Dim, c.NLayers, c.NHeads, c.NKVHeads, opts.BlockSize)
}

// writeCompare prints the points as a table, Markdown or JSON.
func writeCompare(w io.Writer, format, header string, points []comparePoint) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(points)
	case "markdown":
		return writeCompareMarkdown(w, header, points)
	}
	return writeCompareTable(w, header, points)
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

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func writeCompareTable(w io.Writer, header string, points []comparePoint) error {
	fmt.Fprintln(w, header)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, p := range points {
		fmt.Fprintln(tw)
		if p.Context > 0 {
			fmt.Fprintf(tw, "context %d\t\t\t\t\n", p.Context)
		}
		fmt.Fprintln(tw, "metric\tnaive\tfused\tfused/naive\t")
		for _, r := range compareRows(p) {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", r.metric, r.naive, r.fused, r.ratio)
		}
		fmt.Fprintf(tw, "max |Δlogit|\t\t%.3g\t\t\n", p.MaxDLog)
		fmt.Fprintf(tw, "tokens identical\t\t%s\t\t\n", yesNo(p.Same))
		if p.First != nil {
			fmt.Fprintf(tw, "first differing token\t\t%s\t\t\n", divergenceLine(p.First))
		}
	}
	return tw.Flush()
}

func writeCompareMarkdown(w io.Writer, header string, points []comparePoint) error {
	fmt.Fprintf(w, "%s\n", header)
	for _, p := range points {
		fmt.Fprintln(w)
		if p.Context > 0 {
			fmt.Fprintf(w, "**context %d**\n\n", p.Context)
		}
		fmt.Fprintln(w, "| metric | naive | fused | fused/naive |")
		fmt.Fprintln(w, "|---|---:|---:|---:|")
		for _, r := range compareRows(p) {
			fmt.Fprintf(w, "| %s | %s | %s | %s |\n", r.metric, r.naive, r.fused, r.ratio)
		}
		fmt.Fprintf(w, "| max \\|Δlogit\\| | | %.3g | |\n", p.MaxDLog)
		fmt.Fprintf(w, "| tokens identical | | %s | |\n", yesNo(p.Same))
		if p.First != nil {
			fmt.Fprintf(w, "| first differing token | | %s | |\n", divergenceLine(p.First))
		}
	}
	return writeErr(w) // the writes above go to a checkedWriter
}
