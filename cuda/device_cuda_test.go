//go:build cuda

package cuda

// GPU tests: every kernel against a CPU reference written here (float64
// attention, index-by-index copies), on MHA, GQA and MQA, varlen batches
// with and without earlier context, several block sizes and all three
// dtypes. They run from the binary scripts/cuda-build.sh builds
// (./cuda.test -test.v) and skip, saying why, on a machine without a GPU.

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/stride-lm/stride/tensor"
)

var gpu *Device

func TestMain(m *testing.M) {
	if err := Available(); err != nil {
		fmt.Fprintf(os.Stderr, "cuda: GPU tests will be skipped: %v\n", err)
	} else if d, err := Open(0); err != nil {
		fmt.Fprintf(os.Stderr, "cuda: GPU tests will be skipped: open device 0: %v\n", err)
	} else {
		gpu = d
		fmt.Fprintf(os.Stderr, "cuda: running GPU tests on %s (sm_%d%d, %d SMs, %.1f GiB)\n",
			d.Info.Name, d.Info.Major, d.Info.Minor, d.Info.SMs, float64(d.Info.TotalMem)/(1<<30))
	}
	os.Exit(m.Run())
}

func needGPU(t testing.TB) *Device {
	t.Helper()
	if gpu == nil {
		t.Skipf("no GPU: %v", Available())
	}
	return gpu
}

var dtypes = []tensor.DType{tensor.F32, tensor.F16, tensor.BF16}

func download(t testing.TB, x *DeviceTensor) []float32 {
	t.Helper()
	h := must(x.Download(nil))
	return must(h.Float32s())
}

// realView is randomViewOf over Randn data, at most 2^18 elements.
func realView(r *rand.Rand, dt tensor.DType) *tensor.Tensor {
	for {
		big := false
		v := randomViewOf(r, func(shape ...int) *tensor.Tensor {
			n := 1
			for _, s := range shape {
				n *= s
			}
			if n > 1<<18 {
				big = true
				return tensor.Must(tensor.Meta(dt, shape...))
			}
			return tensor.Must(tensor.Randn(nil, dt, r.Uint64(), shape...))
		})
		if !big {
			return v
		}
	}
}

func TestGPUStridedCopy(t *testing.T) {
	d := needGPU(t)
	r := rand.New(rand.NewPCG(1, 2))
	vec := 0
	for i := 0; i < 200; i++ {
		dt := dtypes[r.IntN(3)]
		src := realView(r, dt)
		ds := must(d.Upload(src))
		out := must(d.Empty(dt, src.Shape()...))
		d.Record(true)
		if err := d.StridedCopy(out, ds); err != nil {
			t.Fatal(err)
		}
		if ls := d.Launches(); len(ls) == 1 && ls[0].Vectorized {
			vec++
		}
		got, want := download(t, out), must(src.Float32s())
		for j := range want {
			if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
				t.Fatalf("%v: element %d = %v, want %v", src, j, got[j], want[j])
			}
		}
		ds.Free()
		out.Free()
	}
	if vec == 0 {
		t.Error("no case exercised the 16-byte path")
	}
}

func TestGPURepeatAndTranspose(t *testing.T) {
	d := needGPU(t)
	for _, dt := range dtypes {
		for _, g := range []int{1, 2, 4, 8} {
			L, KVH, D := 37, 3, 24
			src := tensor.Must(tensor.Randn(nil, dt, 5, L, KVH, D))
			ds := must(d.Upload(src))
			out := must(d.Empty(dt, L, KVH*g, D))
			if err := d.RepeatInterleave(out, ds, g); err != nil {
				t.Fatal(err)
			}
			got := download(t, out)
			for l := 0; l < L; l++ {
				for h := 0; h < KVH*g; h++ {
					for e := 0; e < D; e++ {
						w := must(src.At(l, h/g, e))
						if got[(l*KVH*g+h)*D+e] != w {
							t.Fatalf("%v g=%d: [%d,%d,%d] = %v, want %v", dt, g, l, h, e, got[(l*KVH*g+h)*D+e], w)
						}
					}
				}
			}
			ds.Free()
			out.Free()
		}
		H, T, D := 5, 19, 40
		src := tensor.Must(tensor.Randn(nil, dt, 6, H, T, D))
		ds := must(d.Upload(src))
		out := must(d.Empty(dt, T, H, D))
		if err := d.TransposeContiguous(out, ds); err != nil {
			t.Fatal(err)
		}
		got := download(t, out)
		for i := 0; i < T; i++ {
			for h := 0; h < H; h++ {
				for e := 0; e < D; e++ {
					if w := must(src.At(h, i, e)); got[(i*H+h)*D+e] != w {
						t.Fatalf("%v transpose [%d,%d,%d]", dt, i, h, e)
					}
				}
			}
		}
	}
}

type deviceCase struct {
	q, k, v, kc, vc *DeviceTensor
	s               *DeviceSeqs
}

func (c *attnCase) upload(t testing.TB, d *Device) *deviceCase {
	qkv := must(d.Upload(c.qkv))
	sub := func(x *tensor.Tensor) *DeviceTensor {
		return must(qkv.View(func(*tensor.Tensor) (*tensor.Tensor, error) {
			return tensor.MetaStrided(x.DType(), x.Shape(), x.Strides(), x.Offset())
		}))
	}
	return &deviceCase{q: sub(c.q), k: sub(c.k), v: sub(c.v), kc: must(d.Upload(c.kc)), vc: must(d.Upload(c.vc)), s: must(d.UploadSeqs(c.s))}
}

func (dc *deviceCase) free() {
	dc.q.Free()
	dc.kc.Free()
	dc.vc.Free()
	dc.s.Free()
}

func tolerance(dt tensor.DType, naive bool) float64 {
	switch dt {
	case tensor.F16:
		return 1e-2
	case tensor.BF16:
		if naive {
			return 6e-2
		}
		return 3e-2
	}
	return 2e-4
}

func compare(t testing.TB, what string, got []float32, want []float64, tol float64) {
	t.Helper()
	for i := range want {
		if d := math.Abs(float64(got[i]) - want[i]); d > tol || math.IsNaN(float64(got[i])) {
			t.Fatalf("%s: element %d = %v, want %v (|Δ| %.3g > %.3g)", what, i, got[i], want[i], d, tol)
		}
	}
}

func heads(r *rand.Rand) (H, KVH int, kind string) {
	switch r.IntN(3) {
	case 0:
		H = 4
		return H, H, "MHA"
	case 1:
		return 8, 2, "GQA"
	}
	return 4, 1, "MQA"
}

// attnShape is one random case of the attention tests: dtype, heads,
// head dim, block size and the query length of each sequence.
type attnShape struct {
	dt     tensor.DType
	H, KVH int
	kind   string // MHA, GQA or MQA
	D, bs  int
	qlens  []int
}

// randomAttnShape draws case i: the dtype cycles through dtypes, the heads
// are MHA, GQA or MQA, the head dim is one of dims, the block size 1, 16
// or 5, and 1 … maxSeqs sequences take their query lengths from qlen.
func randomAttnShape(r *rand.Rand, i int, dims []int, maxSeqs int, qlen func() int) attnShape {
	sh := attnShape{dt: dtypes[i%len(dtypes)]}
	sh.H, sh.KVH, sh.kind = heads(r)
	sh.D = dims[r.IntN(len(dims))]
	sh.bs = []int{1, 16, 5}[r.IntN(3)]
	sh.qlens = make([]int, 1+r.IntN(maxSeqs))
	for j := range sh.qlens {
		sh.qlens[j] = qlen()
	}
	return sh
}

// newCase makes the case's tensors; each sequence gets up to extra
// positions of earlier context before its queries.
func (sh attnShape) newCase(t testing.TB, r *rand.Rand, extra int) *attnCase {
	return newAttnCase(t, r, sh.dt, sh.H, sh.KVH, sh.D, sh.bs, sh.qlens, extra)
}

func TestGPUReshapeAndCacheAndGather(t *testing.T) {
	d := needGPU(t)
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 24; i++ {
		dt := dtypes[i%3]
		H, KVH, _ := heads(r)
		D := []int{8, 64, 128, 40}[r.IntN(4)]
		bs := []int{1, 16, 7}[r.IntN(3)]
		c := newAttnCase(t, r, dt, H, KVH, D, bs, []int{1 + r.IntN(20), 1 + r.IntN(9)}, 30)
		// a padding token: slot −1 is skipped
		c.s.SlotMapping[0] = -1
		dc := c.upload(t, d)
		if err := d.ReshapeAndCache(dc.k, dc.v, dc.kc, dc.vc, dc.s); err != nil {
			t.Fatal(err)
		}
		kc, vc := download(t, dc.kc), download(t, dc.vc)
		row := KVH * D
		for tok, slot := range c.s.SlotMapping {
			for g := 0; g < KVH; g++ {
				for e := 0; e < D; e++ {
					wk, wv := at(t, c.k, tok, g, e), at(t, c.v, tok, g, e)
					if slot < 0 {
						continue
					}
					if float64(kc[int(slot)*row+g*D+e]) != wk || float64(vc[int(slot)*row+g*D+e]) != wv {
						t.Fatalf("%v token %d slot %d: cache differs", dt, tok, slot)
					}
				}
			}
		}
		// padding: token 0's slot kept its old value
		s0 := c.s.physSlot(0, c.s.ContextLen[0]-c.s.QueryLen[0], bs)
		if float64(kc[int(s0)*row]) != at(t, c.kc, int(s0)/bs, int(s0)%bs, 0, 0) {
			t.Fatalf("padding token's slot was written")
		}
		// gather sequence 1's whole context back
		rows := must(d.UploadInts(c.s.contextSlots(1, bs)))
		C := c.s.ContextLen[1]
		ko, vo := must(d.Empty(dt, C, KVH, D)), must(d.Empty(dt, C, KVH, D))
		if err := d.GatherKV(ko, vo, dc.kc, dc.vc, rows); err != nil {
			t.Fatal(err)
		}
		gk, gv := download(t, ko), download(t, vo)
		for p := 0; p < C; p++ {
			slot := int(c.s.physSlot(1, p, bs))
			for e := 0; e < row; e++ {
				if gk[p*row+e] != kc[slot*row+e] || gv[p*row+e] != vc[slot*row+e] {
					t.Fatalf("%v gather position %d", dt, p)
				}
			}
		}
		ko.Free()
		vo.Free()
		rows.Free()
		dc.free()
	}
}

func TestGPUPagedDecode(t *testing.T) {
	d := needGPU(t)
	r := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 18; i++ {
		sh := randomAttnShape(r, i, []int{64, 128, 80, 256}, 4, func() int { return 1 })
		c := sh.newCase(t, r, 300)
		for _, part := range []int{0, 64} {
			dc := c.upload(t, d)
			out := must(d.FusedAttention(dc.q, dc.k, dc.v, dc.kc, dc.vc, dc.s, part))
			compare(t, fmt.Sprintf("decode %v %s D=%d bs=%d ctx=%v partition=%d", sh.dt, sh.kind, sh.D, sh.bs, c.s.ContextLen, part),
				download(t, out), c.reference(t), tolerance(sh.dt, false))
			out.Free()
			dc.free()
		}
	}
}

func TestGPUFusedPrefill(t *testing.T) {
	d := needGPU(t)
	r := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < 18; i++ {
		// varlen: 1 … 70 new tokens, some with earlier context
		sh := randomAttnShape(r, i, []int{64, 128, 40, 256}, 3, func() int { return 1 + r.IntN(70) })
		c := sh.newCase(t, r, []int{0, 50}[r.IntN(2)])
		want := c.reference(t)
		dc := c.upload(t, d)
		out := must(d.FusedAttention(dc.q, dc.k, dc.v, dc.kc, dc.vc, dc.s, 0))
		what := fmt.Sprintf("prefill %v %s D=%d bs=%d q=%v ctx=%v", sh.dt, sh.kind, sh.D, sh.bs, c.s.QueryLen, c.s.ContextLen)
		compare(t, "fused "+what, download(t, out), want, tolerance(sh.dt, false))
		out.Free()
		dc.free()
		// the naive path on the same step, from fresh caches
		dc = c.upload(t, d)
		out = must(d.NaiveAttention(dc.q, dc.k, dc.v, dc.kc, dc.vc, dc.s))
		compare(t, "naive "+what, download(t, out), want, tolerance(sh.dt, true))
		out.Free()
		dc.free()
	}
}

func TestGPUNaiveDecode(t *testing.T) {
	d := needGPU(t)
	r := rand.New(rand.NewPCG(9, 10))
	for i := 0; i < 9; i++ {
		dt := dtypes[i%3]
		H, KVH, kind := heads(r)
		c := newAttnCase(t, r, dt, H, KVH, 64, 16, []int{1, 1, 1}, 200)
		dc := c.upload(t, d)
		out := must(d.NaiveAttention(dc.q, dc.k, dc.v, dc.kc, dc.vc, dc.s))
		compare(t, fmt.Sprintf("naive decode %v %s", dt, kind), download(t, out), c.reference(t), tolerance(dt, true))
		out.Free()
		dc.free()
	}
}

// The device API reports bad arguments before launching anything.
func TestGPUErrors(t *testing.T) {
	d := needGPU(t)
	a := must(d.Empty(tensor.F32, 4, 4))
	b := must(d.Empty(tensor.F16, 4, 4))
	if err := d.StridedCopy(b, a); err == nil {
		t.Error("dtype mismatch accepted")
	}
	if _, err := d.UploadSeqs(nil); err == nil {
		t.Error("nil seqs accepted")
	}
	a.Free()
	b.Free()
}

// TestProfileWorkload runs the profile workload (ProfileCases) and writes
// the simulation's prediction for every launch, at its real device addresses,
// to $STRIDE_NCU_SIM. scripts/gpu-check.sh runs it under ncu and then
// compares with TestNcuAgreement.
func TestProfileWorkload(t *testing.T) {
	path := os.Getenv("STRIDE_NCU_SIM")
	if path == "" {
		t.Skip("STRIDE_NCU_SIM not set: run by scripts/gpu-check.sh under Nsight Compute")
	}
	d := needGPU(t)
	ls, err := RunProfile(d)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	enc.SetIndent("", "  ")
	if err := enc.Encode(ls); err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		t.Logf("%-70s ld %d req %d sect  st %d req %d sect", l.Case, l.Launch.Loads.Requests, l.Launch.Loads.Sectors, l.Launch.Stores.Requests, l.Launch.Stores.Sectors)
	}
}

// TestPathTimings measures both paths of the seed workload (and a GQA and
// a decode variant) on the GPU and prints the report with measured kernel
// times and effective bandwidths. Set STRIDE_GPU_TIMINGS=1 to run it (it
// needs several GiB of device memory); STRIDE_GPU_REPS sets the reps.
func TestPathTimings(t *testing.T) {
	if os.Getenv("STRIDE_GPU_TIMINGS") == "" {
		t.Skip("STRIDE_GPU_TIMINGS not set: timings run from scripts/gpu-check.sh")
	}
	d := needGPU(t)
	reps := 3
	if s := os.Getenv("STRIDE_GPU_REPS"); s != "" {
		fmt.Sscan(s, &reps)
	}
	seed := SeedWorkload()
	gqa := seed
	gqa.KVHeads, gqa.DType = 8, tensor.F16
	dec := seed
	dec.Phase = Decode
	split := dec
	split.Partition = 512
	for _, w := range []Workload{seed, gqa, dec, split} {
		c, err := w.Measure(d, reps)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Println()
		if err := c.Report(false, d.Info.Name).Write(os.Stdout, "table"); err != nil {
			t.Fatal(err)
		}
	}
}
