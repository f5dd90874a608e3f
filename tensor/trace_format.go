package tensor

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// This file prints a Trace three ways: an aligned text table for a
// terminal, a Markdown table for a README, and JSON for scripts. Shapes
// and strides are printed as PyTorch prints a size ([2, 4096, 32, 128]);
// byte counts are human-readable in the tables and exact in JSON.

// FormatBytes formats a byte count with binary units and one decimal, as
// memory is usually quoted: 512 → "512 B", 1536 → "1.5 KiB",
// 64<<20 → "64.0 MiB".
func FormatBytes(n int64) string {
	if n < 0 {
		if n == -n { // math.MinInt64 has no positive counterpart
			return strconv.FormatInt(n, 10) + " B"
		}
		return "-" + FormatBytes(-n)
	}
	if n < 1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v := float64(n) / 1024
	u := 0
	// Move up a unit when the value would print as 1024.0 or more.
	for v >= 1023.95 && u < len(units)-1 {
		v /= 1024
		u++
	}
	return fmt.Sprintf("%.1f %s", v, units[u])
}

// formatBool prints a contiguity flag the way PyTorch prints a bool.
func formatBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// snapshot returns the title and a copy of the steps under the lock, so a
// trace can be printed while kernels are still recording into it.
func (tr *Trace) snapshot() (string, []TraceStep) {
	if tr == nil {
		return "", nil
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.Title, append([]TraceStep(nil), tr.Steps...)
}

var traceHeader = []string{"step", "op", "shape", "strides", "offset", "contiguous", "storage", "allocated", "copied"}

// traceRows renders every step, plus a final total row, as table cells.
func traceRows(steps []TraceStep) [][]string {
	rows := make([][]string, 0, len(steps)+1)
	var alloc, copied int64
	for _, s := range steps {
		alloc += s.BytesAllocated
		copied += s.BytesCopied
		rows = append(rows, []string{
			strconv.Itoa(s.Step), s.Op, FormatInts(s.Shape), FormatInts(s.Strides),
			strconv.Itoa(s.Offset), formatBool(s.Contiguous), s.Storage,
			FormatBytes(s.BytesAllocated), FormatBytes(s.BytesCopied),
		})
	}
	rows = append(rows, []string{"", "total", "", "", "", "", "", FormatBytes(alloc), FormatBytes(copied)})
	return rows
}

// WriteTable writes the trace as an aligned text table, one row per step
// and a total row summing the bytes allocated and copied. A non-empty
// Title is printed above the table.
func (tr *Trace) WriteTable(w io.Writer) error {
	title, steps := tr.snapshot()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if title != "" {
		if _, err := fmt.Fprintln(w, title); err != nil {
			return err
		}
	}
	for _, r := range append([][]string{traceHeader}, traceRows(steps)...) {
		if _, err := fmt.Fprintln(tw, strings.Join(r, "\t")); err != nil {
			return err
		}
	}
	return tw.Flush()
}

// WriteMarkdown writes the trace as a GitHub Markdown table (numbers
// right-aligned, a bold total row), preceded by the Title in bold when it
// is set. Pipes in op names are escaped so they cannot split a cell.
func (tr *Trace) WriteMarkdown(w io.Writer) error {
	title, steps := tr.snapshot()
	var b strings.Builder
	if title != "" {
		fmt.Fprintf(&b, "**%s**\n\n", escapeMarkdownCell(title))
	}
	b.WriteString("| " + strings.Join(traceHeader, " | ") + " |\n")
	b.WriteString("|---:|---|---|---|---:|---|---|---:|---:|\n")
	rows := traceRows(steps)
	for i, r := range rows {
		cells := make([]string, len(r))
		for j, c := range r {
			c = escapeMarkdownCell(c)
			if i == len(rows)-1 && c != "" {
				c = "**" + c + "**"
			}
			cells[j] = c
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func escapeMarkdownCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// traceJSONStep fixes the JSON keys of a step and makes empty shapes
// print as [] rather than null.
type traceJSONStep struct {
	Step           int    `json:"step"`
	Op             string `json:"op"`
	Shape          []int  `json:"shape"`
	Strides        []int  `json:"strides"`
	Offset         int    `json:"offset"`
	Contiguous     bool   `json:"contiguous"`
	Storage        string `json:"storage"`
	BytesAllocated int64  `json:"bytes_allocated"`
	BytesCopied    int64  `json:"bytes_copied"`
}

func nonNil(v []int) []int {
	if v == nil {
		return []int{}
	}
	return v
}

// WriteJSON writes the steps as a JSON array of objects with the keys
// step, op, shape, strides, offset, contiguous, storage, bytes_allocated
// and bytes_copied, one step per line; byte counts are exact integers.
func (tr *Trace) WriteJSON(w io.Writer) error {
	_, steps := tr.snapshot()
	var b strings.Builder
	b.WriteString("[")
	for i, s := range steps {
		line, err := json.Marshal(traceJSONStep{
			Step: s.Step, Op: s.Op, Shape: nonNil(s.Shape), Strides: nonNil(s.Strides),
			Offset: s.Offset, Contiguous: s.Contiguous, Storage: s.Storage,
			BytesAllocated: s.BytesAllocated, BytesCopied: s.BytesCopied,
		})
		if err != nil {
			return err
		}
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n  ")
		b.Write(line)
	}
	if len(steps) > 0 {
		b.WriteString("\n")
	}
	b.WriteString("]\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteTraces writes several traces in one of infer trace's formats:
// "table" (each trace's WriteTable) or "markdown" (WriteMarkdown), the
// traces separated by a blank line, or "json", one indented JSON array
// holding each trace as {"title", "steps"} (the steps with TraceStep's
// keys). Any other format is an error.
func WriteTraces(w io.Writer, format string, traces []*Trace) error {
	if format == "json" {
		type traceJSON struct {
			Title string      `json:"title"`
			Steps []TraceStep `json:"steps"`
		}
		var all []traceJSON
		for _, tr := range traces {
			title, steps := tr.snapshot()
			all = append(all, traceJSON{title, steps})
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(all)
	}
	if format != "table" && format != "markdown" {
		return fmt.Errorf("trace: unknown format %q (want table, markdown or json)", format)
	}
	for i, tr := range traces {
		if i > 0 {
			if _, err := fmt.Fprintln(w); err != nil {
				return err
			}
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
