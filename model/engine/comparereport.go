package engine

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/tensor"
)

// ComparePoint is one Comparison as `infer compare` reports it: the
// context length of a sweep point (0 for a plain comparison), each
// path's figures in milliseconds and bytes, the fused/naive ratio of
// each figure as the table prints it (keyed by the figure's JSON name),
// and whether and where the tokens differ. Its JSON names are `infer
// compare --output json`'s.
type ComparePoint struct {
	Context          int               `json:"context,omitempty"`
	Naive            PathFigures       `json:"naive"`
	Fused            PathFigures       `json:"fused"`
	Ratio            map[string]string `json:"fused_over_naive"`
	MaxAbsDeltaLogit float64           `json:"max_abs_delta_logit"`
	TokensIdentical  bool              `json:"tokens_identical"`
	// First is where the tokens first differ, absent when they do not.
	First *Divergence `json:"first_divergence,omitempty"`
}

// PathFigures is a PathReport in the report's units: times in
// milliseconds, the decode rate, the Ledger's bytes and copy operations,
// and the tokens each phase ran.
type PathFigures struct {
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

func pathFigures(r PathReport) PathFigures {
	return PathFigures{
		PrefillMS: millis(r.PrefillTime), DecodeMSPerTok: millis(r.DecodePerToken()), TokensPerSecond: r.TokensPerSecond(),
		BytesAllocated: r.Stats.BytesAllocated, BytesCopied: r.Stats.BytesCopied, CopyOps: r.Stats.CopyOps,
		PeakExtraBytes: r.PeakExtraBytes, PrefillTokens: r.PrefillTokens, DecodeTokens: r.DecodeTokens,
	}
}

func millis(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// NewComparePoint is c as a report point at context length ctxLen (0 for
// a comparison that is not a sweep point).
func NewComparePoint(ctxLen int, c *Comparison) ComparePoint {
	p := ComparePoint{Context: ctxLen, Naive: pathFigures(c.Naive), Fused: pathFigures(c.Fused),
		MaxAbsDeltaLogit: c.MaxAbsDeltaLogit, TokensIdentical: c.TokensIdentical, First: c.First, Ratio: map[string]string{}}
	for _, r := range compareRows(p) {
		if r.ratio != "" {
			p.Ratio[r.key] = r.ratio
		}
	}
	return p
}

// CompareHeader is the report's first line: the model's name and shape
// and the KV block size both paths ran with.
func CompareHeader(modelName string, c model.Config, blockSize int) string {
	return fmt.Sprintf("model %s: dim %d, %d layers, %d heads, %d kv heads; block size %d",
		modelName, c.Dim, c.NLayers, c.NHeads, c.NKVHeads, blockSize)
}

// WriteCompare writes the header and the points in format "table" (one
// block of right-aligned columns per point: metric, naive, fused,
// fused/naive), "markdown" (the same as GitHub tables) or "json" (an
// indented array of the points, without the header). Below each point's
// figures come the largest logit difference, whether the tokens are
// identical, and where they first differ when they are not.
func WriteCompare(w io.Writer, format, header string, points []ComparePoint) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(points)
	case "markdown":
		return writeCompareMarkdown(w, header, points)
	case "table":
		return writeCompareTable(w, header, points)
	}
	return fmt.Errorf("compare report: unknown format %q (want table, markdown or json)", format)
}

type compareRow struct{ metric, key, naive, fused, ratio string }

// compareRows lays a point out as the table's rows: one metric per row,
// both paths and fused/naive side by side.
func compareRows(p ComparePoint) []compareRow {
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

// divergenceLine says where the paths' tokens first part and by how
// little: the logit gap of the two picks in each path against the
// logits' largest difference.
func divergenceLine(d *Divergence) string {
	return fmt.Sprintf("request %d position %d: naive %d, fused %d; margins %.3g (naive) and %.3g (fused), |Δlogit| %.3g",
		d.Seq, d.Pos, d.NaiveToken, d.FusedToken, d.NaiveMargin, d.FusedMargin, d.DeltaLogit)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func writeCompareTable(w io.Writer, header string, points []ComparePoint) error {
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
		fmt.Fprintf(tw, "max |Δlogit|\t\t%.3g\t\t\n", p.MaxAbsDeltaLogit)
		fmt.Fprintf(tw, "tokens identical\t\t%s\t\t\n", yesNo(p.TokensIdentical))
		if p.First != nil {
			fmt.Fprintf(tw, "first differing token\t\t%s\t\t\n", divergenceLine(p.First))
		}
	}
	return tw.Flush()
}

// writeCompareMarkdown builds the tables first and writes them in one
// write, so a failing writer fails it once.
func writeCompareMarkdown(w io.Writer, header string, points []ComparePoint) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", header)
	for _, p := range points {
		fmt.Fprintln(&b)
		if p.Context > 0 {
			fmt.Fprintf(&b, "**context %d**\n\n", p.Context)
		}
		fmt.Fprintln(&b, "| metric | naive | fused | fused/naive |")
		fmt.Fprintln(&b, "|---|---:|---:|---:|")
		for _, r := range compareRows(p) {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.metric, r.naive, r.fused, r.ratio)
		}
		fmt.Fprintf(&b, "| max \\|Δlogit\\| | | %.3g | |\n", p.MaxAbsDeltaLogit)
		fmt.Fprintf(&b, "| tokens identical | | %s | |\n", yesNo(p.TokensIdentical))
		if p.First != nil {
			fmt.Fprintf(&b, "| first differing token | | %s | |\n", divergenceLine(p.First))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
