package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stride-lm/stride/cuda"
)

func coalesceJSON(t *testing.T, args ...string) cuda.Report {
	t.Helper()
	code, out, errs := cli(t, append(append([]string{"coalesce"}, args...), "--output", "json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r cuda.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return r
}

// The defaults are the seed's layer (B=2, S=4096, H=32, D=128, fp32): the
// single-warp rows give the seed's 4 sectors / 100% and 32 sectors / 12.5%,
// and the naive path moves the scores matrix on top of the fused path.
func TestCoalesceSeed(t *testing.T) {
	r := coalesceJSON(t)
	w := r.Workload
	if w.Batch != 2 || w.Seq != 4096 || w.Heads != 32 || w.HeadDim != 128 || r.DType != "float32" || w.Bandwidth != 4.8e12 {
		t.Fatalf("defaults: %+v %s", w, r.DType)
	}
	if len(r.Warps) < 2 || r.Warps[0].Sectors != 4 || r.Warps[0].Efficiency != 1 || r.Warps[1].Sectors != 32 || r.Warps[1].Efficiency != 0.125 {
		t.Fatalf("warp rows: %+v", r.Warps)
	}
	nt, ft := r.Naive[len(r.Naive)-1], r.Fused[len(r.Fused)-1]
	if nt.Kernel != "total" || ft.Kernel != "total" {
		t.Fatal("last rows are not totals")
	}
	const unit = 2 * 4096 * 32 * 128 * 4 // q, k, v or out: 128 MiB
	if ft.HBMBytes-ft.MetaBytes != 8*unit {
		t.Fatalf("fused data bytes %d, want %d", ft.HBMBytes-ft.MetaBytes, 8*unit)
	}
	scores := int64(2 * 32 * 4096 * 4096 * 4)
	if r.ExtraBytes != 4*scores+2*unit {
		t.Fatalf("extra bytes %d", r.ExtraBytes)
	}
	if (nt.HBMBytes-nt.MetaBytes)-(ft.HBMBytes-ft.MetaBytes) != r.ExtraBytes {
		t.Fatalf("naive − fused = %d, intermediates %d", (nt.HBMBytes-nt.MetaBytes)-(ft.HBMBytes-ft.MetaBytes), r.ExtraBytes)
	}
	if r.HBMRatio < 10 || nt.EstSeconds != float64(nt.HBMBytes)/4.8e12 {
		t.Fatalf("ratio %v, est %v", r.HBMRatio, nt.EstSeconds)
	}
	if !strings.Contains(r.Estimate, "estimate") {
		t.Fatalf("times not labelled as estimates: %q", r.Estimate)
	}
}

// Flags override a config file's coalesce: section, which overrides the
// defaults; the text outputs label the estimate.
func TestCoalesceConfigAndFormats(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfg, []byte("coalesce:\n  batch: 1\n  seq: 256\n  heads: 8\n  kv_heads: 2\n  head_dim: 64\n  dtype: f16\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := coalesceJSON(t, "--config", cfg, "--seq", "128", "--warps=false")
	w := r.Workload
	if w.Batch != 1 || w.Seq != 128 || w.Heads != 8 || w.KVHeads != 2 || r.DType != "float16" || len(r.Warps) != 0 {
		t.Fatalf("config + flag: %+v %s warps=%d", w, r.DType, len(r.Warps))
	}
	found := false
	for _, k := range r.Naive {
		found = found || k.Kernel == cuda.KernelRepeatInterleave
	}
	if !found {
		t.Fatal("GQA naive path without repeat_interleave")
	}
	for _, f := range []string{"table", "markdown"} {
		code, out, errs := cli(t, "coalesce", "--config", cfg, "--output", f, "--phase", "decode", "--partition", "64")
		if code != 0 {
			t.Fatalf("%s: exit %d %s", f, code, errs)
		}
		for _, want := range []string{"estimate", cuda.KernelPagedDecode, cuda.KernelDecodeMerge, cuda.KernelGatherKV, "naive / fused"} {
			if !strings.Contains(out, want) {
				t.Fatalf("%s output lacks %q:\n%s", f, want, out)
			}
		}
		if f == "markdown" && !strings.Contains(out, "| path | kernel |") {
			t.Fatalf("no markdown table:\n%s", out)
		}
	}
}

func TestCoalesceBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--heads", "6", "--kv-heads", "4"}, "multiple"},
		{[]string{"--dtype", "f8"}, "--dtype"},
		{[]string{"--phase", "train"}, "phase"},
		{[]string{"--head-dim", "512"}, "head dim"},
		{[]string{"--bandwidth", "0"}, "bandwidth"},
		{[]string{"--partition", "64"}, "decode only"},
		{[]string{"--device", "tpu"}, "device"},
	} {
		code, _, errs := cli(t, append([]string{"coalesce"}, tc.args...)...)
		if code != 1 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d %q, want %q", tc.args, code, errs, tc.want)
		}
	}
}

// --device cuda in a build without CUDA says so, and how to rebuild.
func TestCoalesceDeviceCUDA(t *testing.T) {
	if cuda.Built {
		t.Skip("built with -tags cuda: --device cuda would run on the GPU")
	}
	code, _, errs := cli(t, "coalesce", "--device", "cuda", "--seq", "64")
	if code != 1 || !strings.Contains(errs, "built without CUDA support") || !strings.Contains(errs, "scripts/cuda-build.sh") {
		t.Fatalf("exit %d: %q", code, errs)
	}
}
