package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stride-lm/stride/model/engine"
)

func TestBenchJSON(t *testing.T) {
	code, out, errs := cli(t, "bench", "--tests", "pp16,tg8", "--batches", "1,2", "--paths", "fused,naive",
		"--threads", "1", "--reps", "2", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rows []engine.BenchRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// 2 paths × (pp16 + tg8 at batch 1 and 2).
	if len(rows) != 6 {
		t.Fatalf("want 6 rows, got %d: %+v", len(rows), rows)
	}
	for _, r := range rows {
		if r.Mean <= 0 || r.Reps != 2 || r.Threads != 1 || r.Params <= 0 || r.SizeBytes <= 0 {
			t.Fatalf("bad row %+v", r)
		}
	}
}

func TestBenchBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--tests", "qq5"}, "ppN or tgN"},
		{[]string{"bench", "--tests", "pp5000"}, "seq_len"},
		{[]string{"bench", "--threads", "0"}, "--threads"},
		{[]string{"bench", "--paths", "fast"}, "--paths"},
		{[]string{"bench", "--reps", "0"}, "--reps"},
		{[]string{"bench", "--weights", "f32,int4"}, "--weights"},
	} {
		code, _, errs := cli(t, tc.args...)
		if code != 1 || !strings.Contains(errs, tc.want) {
			t.Fatalf("%v: exit %d %q, want %q", tc.args, code, errs, tc.want)
		}
	}
}

// TestBenchWeightsList: --weights takes a list; each dtype gets its own
// rows (interleaved runs), labelled with its dtype and its smaller size.
func TestBenchWeightsList(t *testing.T) {
	// dim and hidden_dim multiples of 64 give Q8_0 groups of 64 (1.06
	// bytes per weight); the default 172 would give groups of 4 (2 bytes).
	code, out, errs := cli(t, "bench", "--tests", "pp8,tg4", "--weights", "f32,bf16,q8_0",
		"--checkpoint", "synthetic", "--synthetic.dim", "128", "--synthetic.hidden_dim", "256",
		"--threads", "1", "--reps", "2", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rows []engine.BenchRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rows) != 6 {
		t.Fatalf("want 6 rows (3 dtypes × pp8, tg4), got %d: %+v", len(rows), rows)
	}
	size := map[string]int64{}
	for i, r := range rows {
		want := []string{"f32", "bf16", "q8_0"}[i/2]
		if r.Weights != want || r.Mean <= 0 || r.Reps != 2 {
			t.Fatalf("row %d: %+v, want weights %s", i, r, want)
		}
		size[r.Weights] = r.SizeBytes
	}
	if !(size["f32"] > size["bf16"] && size["bf16"] > size["q8_0"]) {
		t.Fatalf("weight bytes should shrink f32 > bf16 > q8_0: %v", size)
	}
}

// TestBenchRoofline: with --roofline every tg row carries its bytes per
// token, the bandwidth measured around its runs and the fraction reached,
// and pp rows carry none. (A 1 MiB probe here: it measures a cache, not
// DRAM, which is all the test needs.)
func TestBenchRoofline(t *testing.T) {
	defer func(n int) { benchProbeBytes = n }(benchProbeBytes)
	benchProbeBytes = 1 << 20
	code, out, errs := cli(t, "bench", "--tests", "pp8,tg4", "--threads", "1", "--reps", "2", "--roofline", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, "before each of 2 rounds") {
		t.Fatalf("stderr should report the per-round bandwidth: %q", errs)
	}
	var rows []engine.BenchRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, r := range rows {
		tg := r.Test == "tg4"
		if has := r.BytesPerToken > 0 && r.BandwidthGBs > 0 && r.Roofline > 0; has != tg {
			t.Fatalf("row %+v: roofline columns present = %v, want %v", r, has, tg)
		}
	}
}
