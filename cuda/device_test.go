package cuda

import (
	"errors"
	"reflect"
	"testing"

	"github.com/stride-lm/stride/tensor"
)

// The profile workload that gpu-check.sh runs under Nsight Compute, on a
// simulated device: the device API plans every launch exactly as on a GPU, and
// the predictions are the seed's numbers.
func TestSimDeviceProfile(t *testing.T) {
	d := NewSimDevice()
	ls, err := RunProfile(d)
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != len(ProfileCases()) {
		t.Fatalf("%d launches for %d cases", len(ls), len(ProfileCases()))
	}
	get := func(i int) Launch { return ls[i].Launch }
	// fp32 contiguous: 16-byte vectors, 16 sectors per request, 100%
	if l := get(0); !l.Vectorized || l.Loads.SectorsPerRequest() != 16 || l.Loads.Efficiency() != 1 || l.Loads.Requests != (16<<20)/4/32 {
		t.Errorf("contiguous: %v", l)
	}
	// x.t(): stride-1024 fp32 reads, 32 sectors per request, 12.5%
	if l := get(1); l.Loads.SectorsPerRequest() != 32 || l.Loads.Efficiency() != 0.125 || l.Stores.SectorsPerRequest() != 4 {
		t.Errorf("x.t(): %v", l)
	}
	// a[::4]: 16 sectors per request, 25%, and all 256 MiB of a read
	if l := get(2); l.Loads.SectorsPerRequest() != 16 || l.Loads.Efficiency() != 0.25 || l.Loads.HBMBytes() != 256<<20 {
		t.Errorf("a[::4]: %v", l)
	}
	// misaligned rows: scalar path, more than 4 sectors per 128-byte request
	if l := get(3); l.Vectorized || l.Loads.SectorsPerRequest() <= 4 || l.Loads.SectorsPerRequest() > 5 {
		t.Errorf("misaligned: %v", l)
	}
	// fp16 x.t(): 32 sectors for 64 useful bytes
	if l := get(5); l.Loads.SectorsPerRequest() != 32 || l.Loads.Efficiency() != 64.0/1024 {
		t.Errorf("fp16 x.t(): %v", l)
	}
	// reshape_and_cache from QKV views: K/V loads and cache stores 100%
	for _, i := range []int{7, 8} {
		l := get(i)
		if l.Kernel != KernelReshapeAndCache || !l.Vectorized || l.Stores.Efficiency() != 1 {
			t.Errorf("%s: %v", ls[i].Case, l)
		}
	}
	// element stride 2 on V: scalar path; V's loads move twice what they use
	if l := get(9); l.Vectorized || l.Loads.Efficiency() >= 1 {
		t.Errorf("stepped V: %v", l)
	}
}

// The device paths (NaiveAttention, FusedAttention) launch exactly the
// kernels Workload.Simulate counts, with the same traffic.
func TestSimDevicePathsMatchWorkload(t *testing.T) {
	for _, w := range []Workload{
		{Batch: 2, Seq: 64, Heads: 8, KVHeads: 2, HeadDim: 64, BlockSize: 16, DType: tensor.F16, Phase: Prefill, Bandwidth: 1},
		{Batch: 2, Seq: 100, Heads: 4, KVHeads: 4, HeadDim: 32, BlockSize: 8, DType: tensor.F32, Phase: Decode, Bandwidth: 1},
		{Batch: 3, Seq: 300, Heads: 8, KVHeads: 1, HeadDim: 128, BlockSize: 16, DType: tensor.BF16, Phase: Decode, Partition: 64, Bandwidth: 1},
	} {
		want, err := w.Simulate(Aggregate)
		if err != nil {
			t.Fatal(err)
		}
		d := NewSimDevice()
		qlen := w.Seq
		if w.Phase == Decode {
			qlen = 1
		}
		seqs, nb, err := UniformSeqs(w.Batch, qlen, w.Seq, w.BlockSize)
		if err != nil {
			t.Fatal(err)
		}
		T, H, KVH, D := w.Batch*qlen, w.Heads, w.KVHeads, w.HeadDim
		qkv := must(d.Empty(w.DType, T, (H+2*KVH)*D))
		view := func(col, heads int) *DeviceTensor {
			return must(qkv.View(func(x *tensor.Tensor) (*tensor.Tensor, error) {
				return tensor.Must(x.Narrow(1, col, heads*D)).View(T, heads, D)
			}))
		}
		q, k, v := view(0, H), view(H*D, KVH), view((H+KVH)*D, KVH)
		kc, vc := must(d.Empty(w.DType, nb, w.BlockSize, KVH, D)), must(d.Empty(w.DType, nb, w.BlockSize, KVH, D))
		ds := must(d.UploadSeqs(seqs))
		for _, p := range []PathReport{want.Naive, want.Fused} {
			d.Record(true)
			var err error
			if p.Name == "naive" {
				_, err = d.NaiveAttention(q, k, v, kc, vc, ds)
			} else {
				_, err = d.FusedAttention(q, k, v, kc, vc, ds, w.Partition)
			}
			if err != nil {
				t.Fatal(err)
			}
			got := d.Launches()
			if len(got) != len(p.Launches) {
				t.Fatalf("%+v %s: %d launches, simulation %d", w, p.Name, len(got), len(p.Launches))
			}
			for i := range got {
				if got[i].Kernel != p.Launches[i].Kernel || !sameTraffic(got[i], p.Launches[i]) || got[i].Grid != p.Launches[i].Grid {
					t.Fatalf("%+v %s launch %d: device\n%v\nmodel\n%v", w, p.Name, i, got[i], p.Launches[i])
				}
			}
		}
		if _, err := q.Download(nil); !errors.Is(err, ErrSimDevice) {
			t.Errorf("download from a simulated device: %v", err)
		}
	}
}

// Bad arguments are refused by the device API before any launch, on a
// simulated device as on a GPU.
func TestDeviceArgumentErrors(t *testing.T) {
	d := NewSimDevice()
	a := must(d.Empty(tensor.F32, 4, 4))
	h := must(d.Empty(tensor.F16, 4, 4))
	if err := d.StridedCopy(h, a); err == nil {
		t.Error("dtype mismatch accepted")
	}
	if err := d.RepeatInterleave(a, a, 3); err == nil {
		t.Error("repeat_interleave of 2-D tensors accepted")
	}
	if _, err := d.UploadSeqs(nil); err == nil {
		t.Error("nil seqs accepted")
	}
	if err := d.ReshapeAndCache(a, a, a, a, nil); err == nil {
		t.Error("nil seqs accepted by reshape_and_cache")
	}
	q := must(d.Empty(tensor.F32, 2, 4, 300))
	c := must(d.Empty(tensor.F32, 1, 2, 4, 300))
	s, _, _ := UniformSeqs(2, 1, 1, 2)
	ds := must(d.UploadSeqs(s))
	out := must(d.Empty(tensor.F32, 2, 1200))
	if err := d.FusedPrefill(q, c, c, out, ds); err == nil {
		t.Error("head_dim 300 accepted")
	}
	var zero Device
	if err := zero.Synchronize(); err == nil {
		t.Error("an unopened Device accepted a call")
	}
	if len(d.Launches()) != 0 {
		t.Errorf("refused calls were recorded: %v", d.Launches())
	}
}

// must returns v or panics (failing the test with a stack trace).
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// Workload.Measure on a simulated device runs both paths like on a GPU
// (one warm-up, then reps timed runs) and reports the launches the
// simulation counts, with no time measured.
func TestMeasureOnSimDevice(t *testing.T) {
	for _, w := range []Workload{
		{Batch: 2, Seq: 64, Heads: 8, KVHeads: 2, HeadDim: 64, BlockSize: 16, DType: tensor.F16, Phase: Prefill, Bandwidth: 1},
		{Batch: 3, Seq: 300, Heads: 8, KVHeads: 1, HeadDim: 128, BlockSize: 16, DType: tensor.BF16, Phase: Decode, Partition: 64, Bandwidth: 1},
	} {
		want, err := w.Simulate(Aggregate)
		if err != nil {
			t.Fatal(err)
		}
		got, err := w.Measure(NewSimDevice(), 2)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Intermediates, want.Intermediates) {
			t.Errorf("%+v: intermediates %v, want %v", w, got.Intermediates, want.Intermediates)
		}
		for _, pair := range [][2]PathReport{{got.Naive, want.Naive}, {got.Fused, want.Fused}} {
			g, p := pair[0], pair[1]
			if g.Name != p.Name || len(g.Launches) != len(p.Launches) {
				t.Fatalf("%+v %s: %d launches, simulation %s %d", w, g.Name, len(g.Launches), p.Name, len(p.Launches))
			}
			for i, l := range g.Launches {
				if l.Kernel != p.Launches[i].Kernel || l.Grid != p.Launches[i].Grid || !sameTraffic(l, p.Launches[i]) || l.Measured != 0 {
					t.Fatalf("%+v %s launch %d: measured\n%v\nsimulated\n%v", w, g.Name, i, l, p.Launches[i])
				}
			}
		}
	}
}
