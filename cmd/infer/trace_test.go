package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stride-lm/stride/tensor"
)

type traceOut struct {
	Title string             `json:"title"`
	Steps []tensor.TraceStep `json:"steps"`
}

func traceJSON(t *testing.T, args ...string) []traceOut {
	t.Helper()
	code, out, errs := cli(t, append(append([]string{"trace"}, args...), "--output", "json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var traces []traceOut
	if err := json.Unmarshal([]byte(out), &traces); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return traces
}

func findStep(steps []tensor.TraceStep, prefix string) *tensor.TraceStep {
	for i := range steps {
		if strings.HasPrefix(steps[i].Op, prefix) {
			return &steps[i]
		}
	}
	return nil
}

// TestTraceSeedMHA: configs/seed-mha.yaml under --meta reproduces the
// seed's MHA table (section 6.1) on the naive path, and the fused path
// copies nothing for the head split or the output merge.
func TestTraceSeedMHA(t *testing.T) {
	traces := traceJSON(t, "--config", filepath.Join("..", "..", "configs", "seed-mha.yaml"), "--meta")
	if len(traces) != 2 {
		t.Fatalf("want naive and fused traces, got %d", len(traces))
	}
	naive, fused := traces[0].Steps, traces[1].Steps
	// The seed's table: op, shape, strides, contiguous.
	seed := []struct {
		op         string
		shape      string
		strides    string
		contiguous bool
	}{
		{"Q = x @ Wqᵀ", "[2, 4096, 4096]", "[16777216, 4096, 1]", true},
		{"q = Q.view(2, 4096, 32, 128)", "[2, 4096, 32, 128]", "[16777216, 4096, 128, 1]", true},
		{"q = q.transpose(1, 2)", "[2, 32, 4096, 128]", "[16777216, 128, 4096, 1]", false},
		{"k = K.view", "[2, 32, 4096, 128]", "[16777216, 128, 4096, 1]", false},
		{"scores = q @ k.transpose(-2, -1)", "[2, 32, 4096, 4096]", "[536870912, 16777216, 4096, 1]", true},
		{"attn = softmax", "[2, 32, 4096, 4096]", "[536870912, 16777216, 4096, 1]", true},
		{"out = attn @ v", "[2, 32, 4096, 128]", "[16777216, 524288, 128, 1]", true},
		{"out = out.transpose(1, 2)", "[2, 4096, 32, 128]", "[16777216, 128, 524288, 1]", false},
		{"out = out.contiguous()", "[2, 4096, 32, 128]", "[16777216, 4096, 128, 1]", true},
		{"out = out.view(2, 4096, 4096)", "[2, 4096, 4096]", "[16777216, 4096, 1]", true},
	}
	for _, row := range seed {
		s := findStep(naive, row.op)
		if s == nil {
			t.Fatalf("naive trace has no step %q", row.op)
		}
		if tensor.FormatInts(s.Shape) != row.shape || tensor.FormatInts(s.Strides) != row.strides || s.Contiguous != row.contiguous {
			t.Fatalf("%s: got %v %v %v, seed says %s %s %v", row.op, s.Shape, s.Strides, s.Contiguous, row.shape, row.strides, row.contiguous)
		}
	}
	if s := findStep(naive, "out = out.contiguous()"); s.BytesCopied != 2*4096*4096*4 {
		t.Fatalf("contiguous copied %d bytes, want 128 MiB", s.BytesCopied)
	}
	for _, op := range []string{"q = qkv", "k = qkv", "v = qkv", "out = fused_attention"} {
		s := findStep(fused, op)
		if s == nil || s.BytesCopied != 0 {
			t.Fatalf("fused step %q: %+v (want 0 bytes copied)", op, s)
		}
	}
}

// TestTraceGQA: the naive path's repeat_interleave copies g× the KV
// bytes; the fused path has no such step.
func TestTraceGQA(t *testing.T) {
	traces := traceJSON(t, "--heads", "12", "--kv-heads", "4", "--head-dim", "64", "--seq", "8", "--batch", "2")
	naive, fused := traces[0].Steps, traces[1].Steps
	k := findStep(naive, "k = k.repeat_interleave")
	if k == nil {
		t.Fatal("no repeat_interleave step in the naive GQA trace")
	}
	// [2, 12, 8, 64] float32 written: 3× the [2, 4, 8, 64] K.
	if k.BytesCopied != 2*12*8*64*4 {
		t.Fatalf("repeat_interleave copied %d bytes", k.BytesCopied)
	}
	if findStep(fused, "k = k.repeat_interleave") != nil || findStep(fused, "v = v.repeat_interleave") != nil {
		t.Fatal("fused path repeats KV heads")
	}
}

func TestTraceTooBigWithoutMeta(t *testing.T) {
	code, _, errs := cli(t, "trace", "--config", filepath.Join("..", "..", "configs", "seed-mha.yaml"))
	if code != 1 || !strings.Contains(strings.ToLower(errs), "meta") {
		t.Fatalf("a 4 GiB real trace must be refused with a hint to use --meta: exit %d %q", code, errs)
	}
}
