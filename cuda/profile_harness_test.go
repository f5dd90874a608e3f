package cuda

import (
	"fmt"

	"github.com/stride-lm/stride/tensor"
)

// ProfileCase is one launch of the profile workload that
// scripts/gpu-check.sh runs under Nsight Compute: the strided-copy and
// reshape_and_cache kernels on the layouts the seed notes discuss.
type ProfileCase struct {
	Name string
	// Run allocates the case's tensors on d, launches exactly one kernel
	// and frees what it allocated.
	Run func(d *Device) error
}

// copyCase copies view(base) into a fresh contiguous tensor.
func copyCase(name string, dt tensor.DType, shape []int, view func(*tensor.Tensor) (*tensor.Tensor, error)) ProfileCase {
	return ProfileCase{Name: name, Run: func(d *Device) error {
		base, err := d.Empty(dt, shape...)
		if err != nil {
			return err
		}
		defer base.Free()
		src, err := base.View(view)
		if err != nil {
			return err
		}
		dst, err := d.Empty(dt, src.Layout().Shape()...)
		if err != nil {
			return err
		}
		defer dst.Free()
		if err := d.StridedCopy(dst, src); err != nil {
			return err
		}
		return d.Synchronize()
	}}
}

// cacheCase writes the K and V views of a fused QKV buffer
// [T, (H+2·KVH)·D] (or, with stepped, a V read with element stride 2) into
// paged caches; every tenth token is padding.
func cacheCase(name string, dt tensor.DType, T, H, KVH, D, bs int, stepped bool) ProfileCase {
	return ProfileCase{Name: name, Run: func(d *Device) error {
		cols := (H + 2*KVH) * D
		if stepped {
			cols = (H + 3*KVH) * D
		}
		qkv, err := d.Empty(dt, T, cols)
		if err != nil {
			return err
		}
		defer qkv.Free()
		view := func(col, heads, step int) (*DeviceTensor, error) {
			return qkv.View(func(t *tensor.Tensor) (*tensor.Tensor, error) {
				n, err := t.Narrow(1, col, heads*D*step)
				if err != nil {
					return nil, err
				}
				x, err := n.View(T, heads, D*step)
				if err != nil {
					return nil, err
				}
				return x.Slice(2, 0, D*step, step)
			})
		}
		k, err := view(H*D, KVH, 1)
		if err != nil {
			return err
		}
		step := 1
		if stepped {
			step = 2
		}
		v, err := view((H+KVH)*D, KVH, step)
		if err != nil {
			return err
		}
		seqs, nb, err := UniformSeqs(1, T, T, bs)
		if err != nil {
			return err
		}
		for i := range seqs.SlotMapping {
			if i%10 == 9 {
				seqs.SlotMapping[i] = -1
			}
		}
		kc, err := d.Empty(dt, nb, bs, KVH, D)
		if err != nil {
			return err
		}
		defer kc.Free()
		vc, err := d.Empty(dt, nb, bs, KVH, D)
		if err != nil {
			return err
		}
		defer vc.Free()
		ds, err := d.UploadSeqs(seqs)
		if err != nil {
			return err
		}
		defer ds.Free()
		if err := d.ReshapeAndCache(k, v, kc, vc, ds); err != nil {
			return err
		}
		return d.Synchronize()
	}}
}

// ProfileCases returns the profile workload, in launch order.
func ProfileCases() []ProfileCase {
	id := func(t *tensor.Tensor) (*tensor.Tensor, error) { return t, nil }
	tr := func(t *tensor.Tensor) (*tensor.Tensor, error) { return t.T() }
	return []ProfileCase{
		copyCase("fp32 contiguous [16M] (16-byte path)", tensor.F32, []int{16 << 20}, id),
		copyCase("fp32 x.t(), x [4096, 1024]: stride-1024 reads", tensor.F32, []int{4096, 1024}, tr),
		copyCase("fp32 a[::4], a [64M] (seed experiment 5)", tensor.F32, []int{64 << 20}, func(t *tensor.Tensor) (*tensor.Tensor, error) {
			return t.Slice(0, 0, 64<<20, 4)
		}),
		copyCase("fp32 x[:, 1:], x [4096, 1025]: misaligned rows", tensor.F32, []int{4096, 1025}, func(t *tensor.Tensor) (*tensor.Tensor, error) {
			return t.Narrow(1, 1, 1024)
		}),
		copyCase("fp16 contiguous [16M] (16-byte path)", tensor.F16, []int{16 << 20}, id),
		copyCase("fp16 x.t(), x [4096, 1024]", tensor.F16, []int{4096, 1024}, tr),
		copyCase("bf16 [8192, 32, 128].transpose(0, 1): head-major copy", tensor.BF16, []int{8192, 32, 128}, func(t *tensor.Tensor) (*tensor.Tensor, error) {
			return t.Transpose(0, 1)
		}),
		cacheCase("reshape_and_cache fp32 MHA, QKV views, T=8192 H=32 D=128 bs=16", tensor.F32, 8192, 32, 32, 128, 16, false),
		cacheCase("reshape_and_cache fp16 GQA, QKV views, T=4096 H=32 KVH=8 D=128 bs=16", tensor.F16, 4096, 32, 8, 128, 16, false),
		cacheCase("reshape_and_cache bf16, V read with element stride 2 (scalar path)", tensor.BF16, 2048, 8, 4, 64, 16, true),
	}
}

// RunProfile runs every case on d with recording on and returns the
// simulated launches, one per case.
func RunProfile(d *Device) ([]ProfiledLaunch, error) {
	var out []ProfiledLaunch
	for _, c := range ProfileCases() {
		d.Record(true)
		err := c.Run(d)
		ls := d.Launches()
		d.Record(false)
		if err != nil {
			return nil, fmt.Errorf("profile case %q: %w", c.Name, err)
		}
		if len(ls) != 1 {
			return nil, fmt.Errorf("profile case %q launched %d kernels, want 1", c.Name, len(ls))
		}
		out = append(out, ProfiledLaunch{Case: c.Name, Launch: ls[0]})
	}
	return out, nil
}
