package engine

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/stride-lm/stride/tensor"
)

// BenchLabel says what a bench case ran on, in the words of the report:
// the model as the front end names it, its weight bytes and parameter
// count, its weights' dtype as it runs them ("f32", "q8_0", a GGUF's
// stored "Q4_0"), the attention path, the speculation mode and the
// threads. The engine cannot know some of these (the checkpoint's name,
// how its weights were stored), so the front end fills them in when it
// builds its cases; the case adds its own test and batch.
type BenchLabel struct {
	Model     string `json:"model"`
	SizeBytes int64  `json:"size_bytes"`
	Params    int64  `json:"params"`
	Weights   string `json:"weights"`
	Path      string `json:"path"`
	Spec      string `json:"spec"`
	Threads   int    `json:"threads"`
}

// BenchRow is one line of llama-bench's report, what `infer bench`
// prints: the case's label, its test and batch, and the figures of its
// measured runs (BenchResult). Its JSON names are `infer bench --output
// json`'s; the roofline and speculation figures are omitted when zero.
type BenchRow struct {
	BenchLabel
	Test  string  `json:"test"`
	Batch int     `json:"batch"`
	Mean  float64 `json:"tokens_per_second"`
	SD    float64 `json:"sd"`
	Reps  int     `json:"reps"`
	// The roofline (tg rows measured with a probe): bytes one decode row
	// reads, the mean bandwidth of its rounds (GB/s), and the fraction
	// of it the rate reached.
	BytesPerToken int64   `json:"bytes_per_token,omitempty"`
	BandwidthGBs  float64 `json:"bandwidth_gbs,omitempty"`
	Roofline      float64 `json:"roofline_fraction,omitempty"`
	// Speculation (ngram tg rows): accepted/drafted tokens, and tokens
	// generated per sequence-step, over all measured runs.
	AcceptRate    float64 `json:"accept_rate,omitempty"`
	TokensPerStep float64 `json:"tokens_per_step,omitempty"`
}

// BenchRows is the report of a run: the row of every case measured at
// least once, in the cases' order. A run stopped part way (an error, an
// interrupt) still reports what it measured, each row with the
// repetitions it got.
func BenchRows(cases []*BenchCase) []BenchRow {
	var rows []BenchRow
	for _, c := range cases {
		if len(c.Rates) == 0 {
			continue
		}
		res := c.Result()
		rows = append(rows, BenchRow{BenchLabel: c.Label, Test: c.Test.String(), Batch: c.Batch,
			Mean: res.Mean, SD: res.SD, Reps: res.Reps,
			BytesPerToken: res.BytesPerToken, BandwidthGBs: res.BandwidthGBs, Roofline: res.Roofline,
			AcceptRate: res.AcceptRate, TokensPerStep: res.TokensPerStep})
	}
	return rows
}

// WriteBench writes rows as llama-bench does, in format "table" (columns
// aligned by spaces), "markdown" (a GitHub table) or "json" (an indented
// array of the rows). The columns are model, size, params, weights, path,
// spec, threads, test, batch and t/s (mean ± standard deviation); accept
// and tok/step follow when a row speculated, and bytes/token and roofline
// when roofline is set (a bandwidth probe ran). A row without those
// figures leaves their cells empty.
func WriteBench(w io.Writer, format string, rows []BenchRow, roofline bool) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	case "markdown", "table":
		head, lines := benchCells(rows, roofline)
		if format == "markdown" {
			return writeMarkdown(w, head, lines)
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(head, "\t"))
		for _, l := range lines {
			fmt.Fprintln(tw, strings.Join(l, "\t"))
		}
		return tw.Flush()
	}
	return fmt.Errorf("bench report: unknown format %q (want table, markdown or json)", format)
}

// benchCells lays the rows out as the report's header and cells.
func benchCells(rows []BenchRow, roofline bool) (head []string, lines [][]string) {
	head = []string{"model", "size", "params", "weights", "path", "spec", "threads", "test", "batch", "t/s"}
	spec := false
	for _, r := range rows {
		spec = spec || r.TokensPerStep > 0
	}
	if spec {
		head = append(head, "accept", "tok/step")
	}
	if roofline {
		head = append(head, "bytes/token", "roofline")
	}
	for _, r := range rows {
		l := []string{r.Model, tensor.FormatBytes(r.SizeBytes), formatParams(r.Params), r.Weights, r.Path, r.Spec,
			strconv.Itoa(r.Threads), r.Test, strconv.Itoa(r.Batch), fmt.Sprintf("%.2f ± %.2f", r.Mean, r.SD)}
		if spec {
			if r.TokensPerStep > 0 {
				l = append(l, fmt.Sprintf("%.0f%%", 100*r.AcceptRate), fmt.Sprintf("%.2f", r.TokensPerStep))
			} else {
				l = append(l, "", "")
			}
		}
		if roofline {
			if r.BytesPerToken > 0 {
				l = append(l, tensor.FormatBytes(r.BytesPerToken), fmt.Sprintf("%.0f%%", 100*r.Roofline))
			} else {
				l = append(l, "", "")
			}
		}
		lines = append(lines, l)
	}
	return head, lines
}

// writeMarkdown writes a GitHub table in one write, so a failing writer
// fails it once.
func writeMarkdown(w io.Writer, head []string, lines [][]string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(head)))
	for _, l := range lines {
		fmt.Fprintf(&b, "| %s |\n", strings.Join(l, " | "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// formatParams is a parameter count as llama-bench prints it: 260.03 K,
// 6.74 B.
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
