package cuda

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Nsight Compute metrics the traffic simulation predicts: per launch, the
// warp-level global load/store instructions sent to L1TEX (requests) and
// the 32-byte sectors they touched.
const (
	MetricLdRequests = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
	MetricLdSectors  = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
	MetricStRequests = "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"
	MetricStSectors  = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"
)

// NcuMetrics is the --metrics list scripts/gpu-check.sh passes to ncu.
var NcuMetrics = []string{MetricLdRequests, MetricLdSectors, MetricStRequests, MetricStSectors}

// NcuKernel is one profiled kernel launch of an `ncu --csv` report.
type NcuKernel struct {
	ID      int
	Name    string
	Metrics map[string]float64
}

// KernelBaseName reduces a (demangled) kernel name to the function name:
// "void strided_copy<float>(float*, const float*, StrideCopyArgs)" →
// "strided_copy".
func KernelBaseName(s string) string {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "void ")
	if i := strings.IndexAny(s, "<("); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// ParseNcuCSV reads the output of `ncu --csv --metrics …` (one row per
// kernel and metric, columns found by their header names; lines before
// the header, such as ==PROF== messages, are skipped; numbers may carry
// thousands separators). Kernels are returned in ID order of appearance.
func ParseNcuCSV(r io.Reader) ([]NcuKernel, error) {
	data, err := io.ReadAll(io.LimitReader(r, 1<<30))
	if err != nil {
		return nil, err
	}
	text := string(data)
	start := strings.Index(text, `"ID"`)
	if start < 0 {
		return nil, errors.New("ncu csv: no header row (a line starting with \"ID\"); was ncu run with --csv?")
	}
	cr := csv.NewReader(strings.NewReader(text[start:]))
	cr.FieldsPerRecord = -1
	cr.LazyQuotes = true
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("ncu csv: header: %w", err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.TrimSpace(h)] = i
	}
	for _, need := range []string{"ID", "Kernel Name", "Metric Name", "Metric Value"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("ncu csv: no %q column in header %q", need, head)
		}
	}
	var out []NcuKernel
	at := map[int]int{}
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("ncu csv: line %d: %w", line, err)
		}
		if len(rec) < len(head) {
			if len(rec) > 0 && (strings.HasPrefix(rec[0], "==") || strings.TrimSpace(strings.Join(rec, "")) == "") {
				continue // ncu's own messages (==PROF==, ==WARNING==) between rows
			}
			return nil, fmt.Errorf("ncu csv: line %d has %d fields, the header %d", line, len(rec), len(head))
		}
		id, err := strconv.Atoi(strings.TrimSpace(rec[col["ID"]]))
		if err != nil {
			return nil, fmt.Errorf("ncu csv: line %d: ID %q: %w", line, rec[col["ID"]], err)
		}
		raw := strings.ReplaceAll(strings.TrimSpace(rec[col["Metric Value"]]), ",", "")
		val, err := strconv.ParseFloat(raw, 64)
		if err != nil || math.IsNaN(val) || math.IsInf(val, 0) {
			return nil, fmt.Errorf("ncu csv: line %d: metric value %q is not a number", line, rec[col["Metric Value"]])
		}
		i, ok := at[id]
		if !ok {
			i = len(out)
			at[id] = i
			out = append(out, NcuKernel{ID: id, Name: rec[col["Kernel Name"]], Metrics: map[string]float64{}})
		}
		out[i].Metrics[strings.TrimSpace(rec[col["Metric Name"]])] = val
	}
	return out, nil
}

// ProfiledLaunch is a simulated launch of the profile workload, written by
// the GPU test TestProfileWorkload for comparison with ncu.
type ProfiledLaunch struct {
	Case   string `json:"case"`
	Launch Launch `json:"launch"`
}

// ReadProfiledLaunches reads the JSON written by TestProfileWorkload.
func ReadProfiledLaunches(r io.Reader) ([]ProfiledLaunch, error) {
	var ls []ProfiledLaunch
	dec := json.NewDecoder(io.LimitReader(r, 1<<28))
	if err := dec.Decode(&ls); err != nil {
		return nil, fmt.Errorf("profiled launches: %w", err)
	}
	return ls, nil
}

// Agreement compares one metric of one launch.
type Agreement struct {
	Case      string  `json:"case"`
	Kernel    string  `json:"kernel"`
	Metric    string  `json:"metric"`
	Simulated float64 `json:"simulated"`
	Measured  float64 `json:"measured"`
	// RelErr is |measured − simulated| / max(simulated, 1).
	RelErr float64 `json:"rel_err"`
	OK     bool    `json:"ok"`
}

// CompareNcu matches the i-th simulated launch with the i-th profiled
// kernel (their names must agree) and compares the request and sector
// counts the profile has, within tol (0.05 = 5%).
func CompareNcu(sim []ProfiledLaunch, ncu []NcuKernel, tol float64) ([]Agreement, error) {
	if len(sim) != len(ncu) {
		return nil, fmt.Errorf("ncu profiled %d kernels, the simulation has %d launches (was ncu's --kernel-name filter right?)", len(ncu), len(sim))
	}
	var out []Agreement
	for i, m := range sim {
		k := ncu[i]
		if got := KernelBaseName(k.Name); got != m.Launch.Kernel {
			return nil, fmt.Errorf("launch %d (%s): ncu profiled %q, the simulation %q", i, m.Case, got, m.Launch.Kernel)
		}
		pred := map[string]int64{
			MetricLdRequests: m.Launch.Loads.Requests, MetricLdSectors: m.Launch.Loads.Sectors,
			MetricStRequests: m.Launch.Stores.Requests, MetricStSectors: m.Launch.Stores.Sectors,
		}
		n := 0
		for _, name := range NcuMetrics {
			got, ok := k.Metrics[name]
			if !ok {
				continue
			}
			n++
			want := float64(pred[name])
			rel := math.Abs(got-want) / math.Max(want, 1)
			out = append(out, Agreement{Case: m.Case, Kernel: m.Launch.Kernel, Metric: name, Simulated: want, Measured: got, RelErr: rel, OK: rel <= tol})
		}
		if n == 0 {
			return nil, fmt.Errorf("launch %d (%s): ncu reported none of %v", i, m.Case, NcuMetrics)
		}
	}
	return out, nil
}
