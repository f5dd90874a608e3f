package loadgen

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// Write dispatches to the table and the JSON, and refuses other formats.
func TestReportWrite(t *testing.T) {
	res := &Result{Config: Config{Rate: 2, Burstiness: 1}, Prompts: 1, Duration: time.Second,
		Records: []Record{{TTFT: time.Millisecond, Latency: 3 * time.Millisecond, PromptLen: 4, OutputLen: 2}}}
	rep := NewReport(res, []float64{99}, SLO{}, "m", "completions", "server", time.Unix(0, 0))
	var table, js bytes.Buffer
	if err := rep.Write(&table, "table"); err != nil || !strings.Contains(table.String(), "Serving Benchmark Result") {
		t.Errorf("table: %v\n%s", err, table.String())
	}
	var fields map[string]any
	if err := rep.Write(&js, "json"); err != nil || json.Unmarshal(js.Bytes(), &fields) != nil || fields["completed"] != 1.0 {
		t.Errorf("json: %v\n%s", err, js.String())
	}
	if err := rep.Write(&js, "csv"); err == nil || !strings.Contains(err.Error(), `"csv"`) {
		t.Errorf("unknown format: %v", err)
	}
}

// FirstFailure names the first failed record, by status and message.
func TestFirstFailure(t *testing.T) {
	res := &Result{Records: []Record{{}, {Status: "503", Err: "busy"}, {Status: "cancelled", Err: "context canceled"}}}
	if got := res.FirstFailure(); got != "503: busy" {
		t.Errorf("FirstFailure = %q, want 503: busy", got)
	}
	if got := (&Result{Records: []Record{{}}}).FirstFailure(); got != "no requests" {
		t.Errorf("no failure: %q", got)
	}
}
