package cuda

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WarpRow is one single-warp experiment of the seed notes (§5.2, §7.5):
// what one load instruction of 32 threads costs for a given layout.
type WarpRow struct {
	Name           string  `json:"name"`
	Sectors        int64   `json:"sectors"`
	Lines          int64   `json:"lines"`
	BytesRequested int64   `json:"bytes_requested"`
	BytesMoved     int64   `json:"bytes_moved"`
	Efficiency     float64 `json:"efficiency"`
}

// SeedWarps returns the single-warp experiments: fp32/fp16/bf16 rows read
// with stride 1 and with stride 1024 (a column of a transposed matrix), a
// view one element off its storage's alignment, the seed's a[::4], a
// 16-byte vector load and a broadcast. Bases are 256-byte aligned, as
// cudaMalloc's are.
func SeedWarps() []WarpRow {
	const base = 1 << 30
	cases := []struct {
		name string
		w    Warp
	}{
		{"fp32, stride 1 (contiguous row)", Strided(base, 32, 4, 4)},
		{"fp32, stride 1024 (column of x.t())", Strided(base, 32, 4096, 4)},
		{"fp16, stride 1", Strided(base, 32, 2, 2)},
		{"fp16, stride 1024", Strided(base, 32, 2048, 2)},
		{"bf16, stride 1", Strided(base, 32, 2, 2)},
		{"bf16, stride 1024", Strided(base, 32, 2048, 2)},
		{"fp32, stride 1, storage offset 1 (misaligned view)", Strided(base+4, 32, 4, 4)},
		{"fp32, a[::4] (seed experiment 5)", Strided(base, 32, 16, 4)},
		{"fp32, 16-byte vectors (LDG.128)", Strided(base, 32, 16, 16)},
		{"int32 broadcast (a block-table entry)", Strided(base, 32, 0, 4)},
	}
	var rows []WarpRow
	for _, c := range cases {
		s, l, b := c.w.Count()
		rows = append(rows, WarpRow{Name: c.name, Sectors: s, Lines: l, BytesRequested: b, BytesMoved: s * SectorBytes,
			Efficiency: float64(b) / float64(s*SectorBytes)})
	}
	return rows
}

// HumanBytes formats n in binary units: 512 B, 1.50 KiB, 4.00 GiB.
func HumanBytes(n int64) string {
	f := float64(n)
	for _, u := range []string{"B", "KiB", "MiB", "GiB", "TiB"} {
		if f < 1024 || u == "TiB" {
			if u == "B" {
				return fmt.Sprintf("%d B", n)
			}
			return fmt.Sprintf("%.2f %s", f, u)
		}
		f /= 1024
	}
	return ""
}

// humanSeconds formats a duration in s, ms or µs.
func humanSeconds(s float64) string {
	switch {
	case s >= 1:
		return fmt.Sprintf("%.3f s", s)
	case s >= 1e-3:
		return fmt.Sprintf("%.3f ms", s*1e3)
	}
	return fmt.Sprintf("%.2f µs", s*1e6)
}

// KernelRow is one kernel's line of a report: every launch of that kernel
// in the path, summed.
type KernelRow struct {
	Path       string  `json:"path"`
	Kernel     string  `json:"kernel"`
	Launches   int     `json:"launches"`
	Vectorized bool    `json:"vectorized"`
	Loads      Traffic `json:"loads"`
	Stores     Traffic `json:"stores"`
	// BytesMoved is the sector traffic of loads and stores (no reuse).
	BytesMoved int64 `json:"bytes_moved"`
	// HBMBytes is the compulsory traffic (distinct sectors); MetaBytes the
	// part of it spent on int32 metadata.
	HBMBytes  int64 `json:"hbm_bytes"`
	MetaBytes int64 `json:"meta_bytes"`
	// EstSeconds = HBMBytes / bandwidth: an estimate, a lower bound at
	// peak bandwidth with perfect on-chip reuse. NoReuseSeconds =
	// BytesMoved / bandwidth: if no sector were ever reused.
	EstSeconds     float64 `json:"est_seconds"`
	NoReuseSeconds float64 `json:"no_reuse_seconds"`
	// MeasuredMs and MeasuredGBs: the kernel time on a GPU and HBMBytes
	// divided by it (0 when not run on a GPU).
	MeasuredMs  float64 `json:"measured_ms,omitempty"`
	MeasuredGBs float64 `json:"measured_gbs,omitempty"`
}

func (w Workload) row(path string, l Launch, launches int) KernelRow {
	r := KernelRow{Path: path, Kernel: l.Kernel, Launches: launches, Vectorized: l.Vectorized, Loads: l.Loads, Stores: l.Stores,
		BytesMoved: l.Total().BytesMoved(), HBMBytes: l.HBMBytes(), MetaBytes: l.MetaBytes, MeasuredMs: l.Measured}
	r.EstSeconds = w.Seconds(r.HBMBytes)
	r.NoReuseSeconds = w.Seconds(r.BytesMoved)
	if l.Measured > 0 {
		r.MeasuredGBs = float64(r.HBMBytes) / (l.Measured * 1e-3) / 1e9
	}
	return r
}

// Rows returns the report rows of a path: one per kernel, then the total.
func (c *Comparison) Rows(p PathReport) []KernelRow {
	var rows []KernelRow
	for _, l := range p.Kernels() {
		var n int
		fmt.Sscan(l.Note, &n)
		rows = append(rows, c.Workload.row(p.Name, l, n))
	}
	rows = append(rows, c.Workload.row(p.Name, p.Total(), len(p.Launches)))
	rows[len(rows)-1].Kernel = "total"
	return rows
}

// Report is what `infer coalesce --output json` prints.
type Report struct {
	Workload      Workload       `json:"workload"`
	DType         string         `json:"dtype"`
	Estimate      string         `json:"estimate"`
	Warps         []WarpRow      `json:"warps,omitempty"`
	Naive         []KernelRow    `json:"naive"`
	Fused         []KernelRow    `json:"fused"`
	HBMRatio      float64        `json:"hbm_ratio"`
	MovedRatio    float64        `json:"moved_ratio"`
	MeasuredRatio float64        `json:"measured_ratio,omitempty"`
	Intermediates []Intermediate `json:"intermediates"`
	ExtraBytes    int64          `json:"extra_bytes"`
	// Measured says whether the rows carry GPU times, and on what.
	Measured string `json:"measured,omitempty"`
}

// EstimateNote labels every time the simulation prints.
const EstimateNote = "estimate, not a measurement: compulsory HBM bytes / bandwidth (a lower bound at peak bandwidth with perfect L1/L2 reuse)"

// Report assembles the report; warps adds the single-warp experiments;
// device names the GPU the times were measured on ("" for the simulation only).
func (c *Comparison) Report(warps bool, device string) Report {
	r := Report{Workload: c.Workload, DType: c.DType, Estimate: EstimateNote, Naive: c.Rows(c.Naive), Fused: c.Rows(c.Fused),
		Intermediates: c.Intermediates, ExtraBytes: c.IntermediateBytes(), Measured: device}
	if warps {
		r.Warps = SeedWarps()
	}
	nt, ft := r.Naive[len(r.Naive)-1], r.Fused[len(r.Fused)-1]
	if ft.HBMBytes > 0 {
		r.HBMRatio = float64(nt.HBMBytes) / float64(ft.HBMBytes)
	}
	if ft.BytesMoved > 0 {
		r.MovedRatio = float64(nt.BytesMoved) / float64(ft.BytesMoved)
	}
	if ft.MeasuredMs > 0 {
		r.MeasuredRatio = nt.MeasuredMs / ft.MeasuredMs
	}
	return r
}

// Write prints the report as "table", "markdown" or "json".
func (r Report) Write(w io.Writer, format string) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	case "table", "markdown":
	default:
		return fmt.Errorf("unknown output format %q (want table, markdown or json)", format)
	}
	md := format == "markdown"
	wl := r.Workload
	fmt.Fprintf(w, "%s step: B=%d S=%d H=%d KVH=%d D=%d block_size=%d dtype=%s", wl.Phase, wl.Batch, wl.Seq, wl.Heads, wl.KVHeads, wl.HeadDim, wl.BlockSize, r.DType)
	if wl.Phase == Decode && wl.Partition > 0 {
		fmt.Fprintf(w, " partition=%d", wl.Partition)
	}
	fmt.Fprintf(w, "\nbandwidth %.2f TB/s; est. time = %s\n", wl.Bandwidth/1e12, EstimateNote)
	if r.Measured != "" {
		fmt.Fprintf(w, "measured: kernel times on %s (CUDA events, best of the runs); GB/s = HBM bytes / measured time\n", r.Measured)
	}
	if len(r.Warps) > 0 {
		fmt.Fprintln(w, "\none warp-level load (32 threads):")
		t := newTable(w, md, "layout", "sectors", "lines", "requested", "moved", "efficiency")
		for _, x := range r.Warps {
			t.row(x.Name, fmt.Sprint(x.Sectors), fmt.Sprint(x.Lines), fmt.Sprintf("%d B", x.BytesRequested), fmt.Sprintf("%d B", x.BytesMoved), pct(x.Efficiency))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(w, "\nper kernel (ld/st: requests, sectors per request, coalescing efficiency = bytes requested / bytes moved):")
	head := []string{"path", "kernel", "launches", "ld requests", "ld sect/req", "ld eff", "st requests", "st sect/req", "st eff", "moved", "HBM", "est. time"}
	if r.Measured != "" {
		head = append(head, "measured", "GB/s")
	}
	t := newTable(w, md, head...)
	for _, rows := range [][]KernelRow{r.Naive, r.Fused} {
		for _, k := range rows {
			name := k.Kernel
			if k.Vectorized {
				name += " (16B)"
			}
			cells := []string{k.Path, name, fmt.Sprint(k.Launches),
				fmt.Sprint(k.Loads.Requests), fmt.Sprintf("%.2f", k.Loads.SectorsPerRequest()), pct(k.Loads.Efficiency()),
				fmt.Sprint(k.Stores.Requests), fmt.Sprintf("%.2f", k.Stores.SectorsPerRequest()), pct(k.Stores.Efficiency()),
				HumanBytes(k.BytesMoved), HumanBytes(k.HBMBytes), humanSeconds(k.EstSeconds)}
			if r.Measured != "" {
				cells = append(cells, fmt.Sprintf("%.3f ms", k.MeasuredMs), fmt.Sprintf("%.0f", k.MeasuredGBs))
			}
			t.row(cells...)
		}
	}
	if err := t.flush(); err != nil {
		return err
	}
	nt, ft := r.Naive[len(r.Naive)-1], r.Fused[len(r.Fused)-1]
	fmt.Fprintf(w, "\nnaive / fused: HBM %s / %s = %.2f×, est. time %s / %s; sector traffic (no reuse) %.2f×\n",
		HumanBytes(nt.HBMBytes), HumanBytes(ft.HBMBytes), r.HBMRatio, humanSeconds(nt.EstSeconds), humanSeconds(ft.EstSeconds), r.MovedRatio)
	if r.MeasuredRatio > 0 {
		fmt.Fprintf(w, "measured: naive %.3f ms, fused %.3f ms = %.2f×\n", nt.MeasuredMs, ft.MeasuredMs, r.MeasuredRatio)
	}
	fmt.Fprintf(w, "naive − fused HBM = %s = its intermediates, each written and read back:\n", HumanBytes(r.ExtraBytes))
	t = newTable(w, md, "intermediate", "shape", "bytes", "passes")
	for _, x := range r.Intermediates {
		shape := make([]string, len(x.Shape))
		for i, s := range x.Shape {
			shape[i] = fmt.Sprint(s)
		}
		t.row(x.Name, "["+strings.Join(shape, ", ")+"]", HumanBytes(x.Bytes), fmt.Sprint(x.Passes))
	}
	return t.flush()
}

// pct formats a fraction as a percentage with at most 2 decimals:
// 100%, 12.5%, 6.25%.
func pct(f float64) string {
	s := strconv.FormatFloat(100*f, 'f', 2, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s + "%"
}

// table writes aligned columns, or a Markdown table.
type table struct {
	w  io.Writer
	tw *tabwriter.Writer
	md bool
}

func newTable(w io.Writer, md bool, head ...string) *table {
	t := &table{w: w, md: md}
	if !md {
		t.tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	} else {
		fmt.Fprintln(w)
	}
	t.row(head...)
	if md {
		seps := make([]string, len(head))
		for i := range seps {
			seps[i] = "---"
		}
		t.row(seps...)
	}
	return t
}

func (t *table) row(cells ...string) {
	if t.md {
		fmt.Fprintf(t.w, "| %s |\n", strings.Join(cells, " | "))
		return
	}
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

func (t *table) flush() error {
	if t.md {
		_, err := fmt.Fprintln(t.w)
		return err
	}
	return t.tw.Flush()
}
