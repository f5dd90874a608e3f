package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stride-lm/stride/tensor"
)

// reportPoints are hand-made sweep points: identical tokens, a
// divergence, and a fused path that copies nothing (the ratios' 0×).
func reportPoints() []ComparePoint {
	mk := func(ctxLen int, scale float64, first bool) ComparePoint {
		n := PathReport{Path: "naive", PrefillTime: time.Duration(scale * 1.5e6), DecodeTime: time.Duration(scale * 9e6), PrefillTokens: ctxLen, DecodeTokens: 8,
			Stats: tensor.Stats{BytesAllocated: int64(scale * 1e6), BytesCopied: int64(scale * 5e5), CopyOps: 42}, PeakExtraBytes: int64(scale * 3e5), Tokens: [][]int{{1, 2, 3}}}
		f := n
		f.Path, f.PrefillTime, f.DecodeTime, f.Stats, f.PeakExtraBytes = "fused", time.Duration(scale*1e6), time.Duration(scale*4e6), tensor.Stats{BytesAllocated: 1000}, 0
		c := &Comparison{Naive: n, Fused: f, MaxAbsDeltaLogit: 1.234e-6 * scale, TokensIdentical: !first}
		if first {
			c.First = &Divergence{Seq: 1, Pos: 7, NaiveToken: 3, FusedToken: 5, DeltaLogit: 2e-6, NaiveMargin: 1e-6, FusedMargin: 5e-7}
		}
		return NewComparePoint(ctxLen, c)
	}
	return []ComparePoint{mk(128, 1, false), mk(512, 3.3, true), mk(2048, 10, false)}
}

// TestWriteCompareRecorded: each format prints byte for byte what `infer
// compare` printed for these points before the report moved out of
// cmd/infer (testdata/report, recorded from that code).
func TestWriteCompareRecorded(t *testing.T) {
	for format, file := range map[string]string{"table": "compare-table.txt", "markdown": "compare-markdown.md", "json": "compare.json"} {
		want, err := os.ReadFile(filepath.Join("testdata", "report", file))
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := WriteCompare(&b, format, "model x: dim 1", reportPoints()); err != nil {
			t.Fatal(err)
		}
		if b.String() != string(want) {
			t.Errorf("%s:\n%s\nwant\n%s", format, b.String(), want)
		}
	}
	if err := WriteCompare(new(bytes.Buffer), "yaml", "", nil); err == nil || !strings.Contains(err.Error(), `"yaml"`) {
		t.Errorf("unknown format: %v", err)
	}
}

// A point's figures are the PathReport's in milliseconds, its ratios the
// table's fused/naive column, and its JSON reads back into it.
func TestNewComparePoint(t *testing.T) {
	p := reportPoints()[0]
	if p.Naive.PrefillMS != 1.5 || p.Naive.DecodeMSPerTok != 9.0/8 || p.Fused.BytesCopied != 0 || p.Naive.PrefillTokens != 128 {
		t.Errorf("figures %+v", p)
	}
	want := map[string]string{"prefill_ms": "0.667×", "decode_ms_per_token": "0.444×", "bytes_copied": "0.000×", "copy_ops": "0.000×"}
	for k, v := range want {
		if p.Ratio[k] != v {
			t.Errorf("ratio %s = %q, want %q", k, p.Ratio[k], v)
		}
	}
	b, err := json.Marshal(reportPoints())
	var back []ComparePoint
	if err != nil || json.Unmarshal(b, &back) != nil || !reflect.DeepEqual(back, reportPoints()) {
		t.Errorf("JSON round trip: %v\n%s", err, b)
	}
}

// CompareContexts measures one point per length, in order, calling done
// after each; a length with no room to decode stops the sweep with the
// points so far, and a cancelled context stops it before the next point.
func TestCompareContexts(t *testing.T) {
	m := tinyGQA(t)
	var calls []int
	points, err := CompareContexts(context.Background(), m, Options{BlockSize: 8}, []int{8, 24, m.Config.SeqLen}, 2, func(n int) { calls = append(calls, n) })
	if err == nil || !strings.Contains(err.Error(), "seq_len") {
		t.Fatalf("a context filling seq_len: %v", err)
	}
	if len(points) != 2 || points[0].Context != 8 || points[1].Context != 24 || !reflect.DeepEqual(calls, []int{1, 2}) {
		t.Fatalf("points %+v, done calls %v", points, calls)
	}
	for _, p := range points {
		if p.Naive.PrefillTokens != p.Context || p.Fused.DecodeTokens != 2 || !p.TokensIdentical {
			t.Errorf("context %d: %+v", p.Context, p)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if points, err := CompareContexts(ctx, m, Options{BlockSize: 8}, []int{8}, 2, nil); !errors.Is(err, context.Canceled) || len(points) != 0 {
		t.Errorf("cancelled: %v, %d points", err, len(points))
	}
}
