package cuda

import (
	"testing"

	"github.com/stride-lm/stride/tensor"
)

// The naive path moves, on top of the fused path, exactly its
// intermediates: each written once and read once (scores twice: as scores
// and, after the in-place softmax, as probabilities). The simulation counts
// bytes by replaying addresses; the intermediates are summed from shapes.
func TestNaiveExtraBytesAreItsCopies(t *testing.T) {
	cases := []Workload{
		SeedWorkload(), // prefill, MHA, fp32: scores + out copy
		{Batch: 2, Seq: 512, Heads: 32, KVHeads: 8, HeadDim: 128, BlockSize: 16, DType: tensor.F16, Phase: Prefill, Bandwidth: DefaultBandwidth},  // GQA: + repeat_interleave
		{Batch: 3, Seq: 1000, Heads: 8, KVHeads: 1, HeadDim: 64, BlockSize: 32, DType: tensor.BF16, Phase: Decode, Bandwidth: DefaultBandwidth},   // MQA decode: + gather
		{Batch: 2, Seq: 4096, Heads: 32, KVHeads: 32, HeadDim: 128, BlockSize: 16, DType: tensor.F32, Phase: Decode, Bandwidth: DefaultBandwidth}, // decode: gather
	}
	for _, w := range cases {
		c, err := w.Simulate(Aggregate)
		if err != nil {
			t.Fatal(err)
		}
		extra := c.Naive.Total().DataHBMBytes() - c.Fused.Total().DataHBMBytes()
		if extra != c.IntermediateBytes() {
			t.Errorf("%+v: naive − fused = %d bytes, intermediates = %d", w, extra, c.IntermediateBytes())
		}
		// analytic intermediates, from the shapes alone
		B, S, H, KVH, D, es := int64(w.Batch), int64(w.Seq), int64(w.Heads), int64(w.KVHeads), int64(w.HeadDim), int64(w.DType.Size())
		Tq := S
		if w.Phase == Decode {
			Tq = 1
		}
		want := 2*2*B*H*Tq*S*es + 2*B*H*Tq*D*es // scores ×2 passes ×2 (scores, probs) + out
		if w.Phase == Decode {
			want += 2 * 2 * B * S * KVH * D * es // gathered k, v
		}
		if H != KVH {
			want += 2 * 2 * B * S * H * D * es // repeated k, v
		}
		if c.IntermediateBytes() != want {
			t.Errorf("%+v: intermediates %d, analytic %d", w, c.IntermediateBytes(), want)
		}
	}
}

// The seed configuration: the fused path's HBM bytes are q, k, v read,
// k, v cached and read back, out written; the naive path adds the scores
// matrix (1 GiB per sequence) ×4 passes and the out copy.
func TestSeedWorkloadTotals(t *testing.T) {
	w := SeedWorkload()
	c, err := w.Simulate(Aggregate)
	if err != nil {
		t.Fatal(err)
	}
	const B, S, H, D = 2, 4096, 32, 128
	unit := int64(B * S * H * D * 4) // one of q, k, v, out: 128 MiB
	// reshape_and_cache reads k, v and writes them to the cache (4 units);
	// the kernel reads q and the cached k, v and writes out (4 units).
	fused := c.Fused.Total().DataHBMBytes()
	if fused != 8*unit {
		t.Fatalf("fused data bytes %d, want 8 × %d", fused, unit)
	}
	scores := int64(B * H * S * S * 4)
	if got := c.Naive.Total().DataHBMBytes(); got != fused+4*scores+2*unit {
		t.Fatalf("naive data bytes %d", got)
	}
	for _, l := range c.Fused.Launches {
		if l.Loads.Efficiency() < 0.99 && l.Kernel == KernelFusedPrefill {
			t.Errorf("%s load efficiency %.3f", l.Kernel, l.Loads.Efficiency())
		}
	}
}

// Whole workloads, small enough to replay, agree with the aggregate count
// launch by launch.
func TestWorkloadAggregateEqualsReplay(t *testing.T) {
	for _, w := range []Workload{
		{Batch: 2, Seq: 40, Heads: 4, KVHeads: 2, HeadDim: 32, BlockSize: 16, DType: tensor.F16, Phase: Prefill, Bandwidth: 1e12},
		{Batch: 2, Seq: 70, Heads: 4, KVHeads: 1, HeadDim: 8, BlockSize: 4, DType: tensor.F32, Phase: Decode, Partition: 32, Bandwidth: 1e12},
		{Batch: 1, Seq: 33, Heads: 2, KVHeads: 2, HeadDim: 24, BlockSize: 5, DType: tensor.BF16, Phase: Decode, Bandwidth: 1e12},
	} {
		a, err := w.Simulate(Aggregate)
		if err != nil {
			t.Fatal(err)
		}
		r, err := w.Simulate(Replay)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range [][2]PathReport{{a.Naive, r.Naive}, {a.Fused, r.Fused}} {
			if len(p[0].Launches) != len(p[1].Launches) {
				t.Fatalf("launch counts differ")
			}
			for i := range p[0].Launches {
				if !sameTraffic(p[0].Launches[i], p[1].Launches[i]) {
					t.Fatalf("%+v %s: aggregate\n%v\nreplay\n%v", w, p[0].Launches[i].Kernel, p[0].Launches[i], p[1].Launches[i])
				}
			}
		}
	}
}

func TestWorkloadValidate(t *testing.T) {
	bad := []Workload{
		{},
		{Batch: 1, Seq: 1, Heads: 6, KVHeads: 4, HeadDim: 8, BlockSize: 1, Phase: Prefill, Bandwidth: 1},
		{Batch: 1, Seq: 1, Heads: 4, KVHeads: 4, HeadDim: 300, BlockSize: 1, Phase: Prefill, Bandwidth: 1},
		{Batch: 1, Seq: 1, Heads: 4, KVHeads: 4, HeadDim: 8, BlockSize: 0, Phase: Prefill, Bandwidth: 1},
		{Batch: 1, Seq: 1, Heads: 4, KVHeads: 4, HeadDim: 8, BlockSize: 1, Phase: "x", Bandwidth: 1},
		{Batch: 1, Seq: 1, Heads: 4, KVHeads: 4, HeadDim: 8, BlockSize: 1, Phase: Prefill, Bandwidth: 0},
		{Batch: 1, Seq: 1, Heads: 4, KVHeads: 4, HeadDim: 8, BlockSize: 1, Phase: Prefill, Partition: 4, Bandwidth: 1},
		{Batch: 1 << 20, Seq: 1 << 12, Heads: 4, KVHeads: 4, HeadDim: 8, BlockSize: 1, Phase: Prefill, Bandwidth: 1},
	}
	for _, w := range bad {
		if _, err := w.Simulate(Aggregate); err == nil {
			t.Errorf("%+v accepted", w)
		}
	}
	if _, err := ParsePhase("decode"); err != nil {
		t.Error(err)
	}
	if _, err := ParsePhase("train"); err == nil {
		t.Error("phase train accepted")
	}
}

// Launch geometry beyond CUDA's grid limits is refused before launching.
func TestGridLimits(t *testing.T) {
	if _, err := dimsOf(Launch{Kernel: "k", Grid: [3]int64{1, 70000, 1}}, 0); err == nil {
		t.Error("grid.y = 70000 accepted")
	}
	if _, err := dimsOf(Launch{Kernel: "k", Grid: [3]int64{1 << 31, 1, 1}}, 0); err == nil {
		t.Error("grid.x = 2^31 accepted")
	}
	l, err := dimsOf(Launch{Kernel: "k", Grid: [3]int64{1 << 30, 65535, 2}, Block: [3]int{128, 1, 1}}, 64)
	if err != nil || l.block[0] != 128 || l.smem != 64 {
		t.Errorf("valid grid: %v %v", l, err)
	}
}

// The prefill kernel's shared memory fits the default 48 KiB up to
// head_dim 128 and needs the opt-in (≤ 227 KiB on sm_90) beyond.
func TestPrefillSharedBytes(t *testing.T) {
	if b := PrefillSharedBytes(128); b > 48*1024 {
		t.Errorf("D=128 needs %d bytes", b)
	}
	if b := PrefillSharedBytes(MaxHeadDim); b <= 48*1024 || b > 227*1024 {
		t.Errorf("D=256 needs %d bytes", b)
	}
}

// BenchmarkSeedSimulate counts both paths of the seed's layer (2^31 score
// elements) in Aggregate mode.
func BenchmarkSeedSimulate(b *testing.B) {
	w := SeedWorkload()
	for i := 0; i < b.N; i++ {
		if _, err := w.Simulate(Aggregate); err != nil {
			b.Fatal(err)
		}
	}
}

// SeedWorkload is the seed notes' MHA configuration:
// [B, S, H, D] = [2, 4096, 32, 128], fp32, prefill, on an H200.
func SeedWorkload() Workload {
	return Workload{Batch: 2, Seq: 4096, Heads: 32, KVHeads: 32, HeadDim: 128, BlockSize: 16,
		DType: tensor.F32, Phase: Prefill, Bandwidth: DefaultBandwidth}
}
