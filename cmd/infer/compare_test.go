package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stride-lm/stride/model/engine"
)

func TestCompareTableAndJSON(t *testing.T) {
	code, out, errs := cli(t, "compare", "--steps", "24", "--seed", "1", "--prompt", "ab")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"bytes copied", "copy ops", "peak extra live bytes", "max |Δlogit|", "tokens identical", "fused/naive"} {
		if !strings.Contains(out, want) {
			t.Fatalf("table lacks %q:\n%s", want, out)
		}
	}
	code, out, errs = cli(t, "compare", "--contexts", "16,48", "--decode", "3", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var points []engine.ComparePoint
	if err := json.Unmarshal([]byte(out), &points); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(points) != 2 || points[0].Context != 16 || points[1].Context != 48 {
		t.Fatalf("points %+v", points)
	}
	for _, p := range points {
		if !p.TokensIdentical || p.MaxAbsDeltaLogit > 1e-3 {
			t.Fatalf("context %d: paths disagree (max Δ %g)", p.Context, p.MaxAbsDeltaLogit)
		}
		if p.Naive.BytesCopied <= p.Fused.BytesCopied || p.Naive.PrefillTokens != p.Context || p.Fused.DecodeTokens != 3 {
			t.Fatalf("context %d: %+v", p.Context, p)
		}
	}
	// The naive path copies more as the context grows (gather,
	// repeat_interleave and contiguous all scale with it).
	if points[1].Naive.BytesCopied <= points[0].Naive.BytesCopied {
		t.Fatalf("naive copies did not grow with context: %d then %d", points[0].Naive.BytesCopied, points[1].Naive.BytesCopied)
	}
}

func TestComparePlotWritesPNG(t *testing.T) {
	png := filepath.Join(t.TempDir(), "cmp.png")
	code, _, errs := cli(t, "compare", "--contexts", "8,16,24", "--decode", "2", "--plot", png)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	b, err := os.ReadFile(png)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("not a PNG (%v, %d bytes)", err, len(b))
	}
}

func TestCompareBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"compare", "--contexts", "10,x"}, "\"x\""},
		{[]string{"compare", "--contexts", "5000"}, "seq_len"},
		{[]string{"compare", "--plot", "x.png"}, "--contexts"},
		{[]string{"compare", "--output", "yaml"}, "compare.output"},
	} {
		code, _, errs := cli(t, tc.args...)
		if code != 1 || !strings.Contains(errs, tc.want) {
			t.Fatalf("%v: exit %d, %q (want %q)", tc.args, code, errs, tc.want)
		}
	}
}
