package engine

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// reportRows are hand-made rows covering every column: a pp row, a
// speculating tg row with the roofline, a roofline row without
// speculation, and the parameter counts' units.
func reportRows() []BenchRow {
	label := func(m string, size, params int64, w, path, spec string, th int) BenchLabel {
		return BenchLabel{Model: m, SizeBytes: size, Params: params, Weights: w, Path: path, Spec: spec, Threads: th}
	}
	return []BenchRow{
		{BenchLabel: label("stories260K.bin", 1040128, 260032, "f32", "fused", "off", 1), Test: "pp512", Batch: 1, Mean: 12345.678, SD: 12.3, Reps: 3},
		{BenchLabel: label("stories260K.bin", 1040128, 260032, "f32", "fused", "ngram", 2), Test: "tg128", Batch: 4, Mean: 2345.6, SD: 1.25, Reps: 3,
			BytesPerToken: 300000, BandwidthGBs: 12.5, Roofline: 0.4567, AcceptRate: 0.5, TokensPerStep: 1.75},
		{BenchLabel: label("m", 7e9, 6.7e9, "q8_0", "naive", "off", 16), Test: "tg1", Batch: 1, Mean: 1, Reps: 1,
			BytesPerToken: 7e9, BandwidthGBs: 10, Roofline: 0.7},
		{BenchLabel: label("k", 0, 999, "bf16", "fused", "", 0), Test: "pp1", Batch: 1},
		{BenchLabel: label("k2", 0, 1500, "bf16", "fused", "", 0), Test: "pp1", Batch: 1},
	}
}

// TestWriteBenchRecorded: each format prints byte for byte what `infer
// bench` printed for these rows before the report moved out of
// cmd/infer (testdata/report, recorded from that code).
func TestWriteBenchRecorded(t *testing.T) {
	for _, tc := range []struct {
		format, file string
		roofline     bool
	}{
		{"table", "bench-table-roofline.txt", true},
		{"markdown", "bench-markdown.md", false},
		{"json", "bench.json", false},
	} {
		want, err := os.ReadFile(filepath.Join("testdata", "report", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := WriteBench(&b, tc.format, reportRows(), tc.roofline); err != nil {
			t.Fatal(err)
		}
		if b.String() != string(want) {
			t.Errorf("%s:\n%s\nwant\n%s", tc.format, b.String(), want)
		}
	}
}

// The JSON reads back into the same rows, and the columns that depend on
// the rows (speculation) or on the flag (roofline) come and go with them.
func TestWriteBenchColumns(t *testing.T) {
	var b bytes.Buffer
	if err := WriteBench(&b, "json", reportRows(), false); err != nil {
		t.Fatal(err)
	}
	var back []BenchRow
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || !reflect.DeepEqual(back, reportRows()) {
		t.Fatalf("JSON round trip: %v\n%+v", err, back)
	}
	plain := reportRows()[:1]
	b.Reset()
	if err := WriteBench(&b, "markdown", plain, false); err != nil {
		t.Fatal(err)
	}
	if head := strings.SplitN(b.String(), "\n", 2)[0]; strings.Contains(head, "accept") || strings.Contains(head, "roofline") {
		t.Errorf("a pp row without --roofline has extra columns: %q", head)
	}
	b.Reset()
	if err := WriteBench(&b, "markdown", plain, true); err != nil || !strings.Contains(b.String(), "bytes/token | roofline |") {
		t.Errorf("roofline set: %v\n%s", err, b.String())
	}
	if err := WriteBench(&b, "csv", plain, false); err == nil || !strings.Contains(err.Error(), `"csv"`) {
		t.Errorf("unknown format: %v", err)
	}
}

// BenchRows reports the measured cases only, each with its label, test,
// batch and Result's figures.
func TestBenchRows(t *testing.T) {
	e := newEngine(t, tinyGQA(t), Options{Path: "fused", Threads: 1, BlockSize: 16})
	label := BenchLabel{Model: "tiny", Weights: "f32", Path: "fused", Spec: "off", Threads: 1}
	measured := &BenchCase{Engine: e, Test: BenchTest{Gen: true, N: 8}, Batch: 2, Label: label, Rates: []float64{10, 14}}
	unmeasured := &BenchCase{Engine: e, Test: BenchTest{N: 8}, Batch: 1, Label: label}
	rows := BenchRows([]*BenchCase{unmeasured, measured})
	want := BenchRow{BenchLabel: label, Test: "tg8", Batch: 2, Mean: 12, SD: 2.8284271247461903, Reps: 2}
	if len(rows) != 1 || rows[0] != want {
		t.Fatalf("rows %+v, want [%+v]", rows, want)
	}
}

func TestFormatParams(t *testing.T) {
	for n, want := range map[int64]string{999: "999", 1000: "1.00 K", 260032: "260.03 K", 15e6: "15.00 M", 6738415616: "6.74 B"} {
		if got := formatParams(n); got != want {
			t.Errorf("formatParams(%d) = %q, want %q", n, got, want)
		}
	}
}
