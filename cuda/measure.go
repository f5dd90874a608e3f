package cuda

import (
	"fmt"

	"github.com/stride-lm/stride/tensor"
)

// Measure runs the workload's two paths on d with random data, reps times
// after one warm-up run, timing every kernel with CUDA events (launches
// are serialized while measuring). It returns the Comparison of the
// launches that ran, each simulated at its real device addresses, with
// Measured set to its best time over the reps. Intermediates come from the
// shapes, as in Simulate.
func (w Workload) Measure(d *Device, reps int) (*Comparison, error) {
	if err := d.ok(); err != nil {
		return nil, err
	}
	if reps < 1 {
		return nil, fmt.Errorf("measure: reps %d must be ≥ 1", reps)
	}
	sim, err := w.Simulate(Aggregate)
	if err != nil {
		return nil, err
	}
	qlen := w.Seq
	if w.Phase == Decode {
		qlen = 1
	}
	seqs, nb, err := UniformSeqs(w.Batch, qlen, w.Seq, w.BlockSize)
	if err != nil {
		return nil, err
	}
	B, H, KVH, D, dt := w.Batch, w.Heads, w.KVHeads, w.HeadDim, w.DType
	T := B * qlen
	hostQKV, err := tensor.Randn(nil, dt, 1, T, (H+2*KVH)*D)
	if err != nil {
		return nil, err
	}
	qkv, err := d.Upload(hostQKV)
	if err != nil {
		return nil, err
	}
	defer qkv.Free()
	view := func(col, heads int) (*DeviceTensor, error) {
		return qkv.View(func(t *tensor.Tensor) (*tensor.Tensor, error) {
			n, err := t.Narrow(1, col, heads*D)
			if err != nil {
				return nil, err
			}
			return n.View(T, heads, D)
		})
	}
	q, err := view(0, H)
	if err != nil {
		return nil, err
	}
	k, err := view(H*D, KVH)
	if err != nil {
		return nil, err
	}
	v, err := view((H+KVH)*D, KVH)
	if err != nil {
		return nil, err
	}
	caches := [2]*DeviceTensor{}
	for i := range caches {
		// earlier context (decode) must hold values: random caches
		host, err := tensor.Randn(nil, dt, uint64(2+i), nb, w.BlockSize, KVH, D)
		if err != nil {
			return nil, err
		}
		if caches[i], err = d.Upload(host); err != nil {
			return nil, err
		}
		defer caches[i].Free()
	}
	ds, err := d.UploadSeqs(seqs)
	if err != nil {
		return nil, err
	}
	defer ds.Free()
	out := &Comparison{Workload: w, DType: dt.String(), Naive: PathReport{Name: "naive"}, Fused: PathReport{Name: "fused"},
		Intermediates: sim.Intermediates}
	for _, p := range []*PathReport{&out.Naive, &out.Fused} {
		for rep := 0; rep <= reps; rep++ {
			d.Measure(true)
			var res *DeviceTensor
			if p.Name == "naive" {
				res, err = d.NaiveAttention(q, k, v, caches[0], caches[1], ds)
			} else {
				res, err = d.FusedAttention(q, k, v, caches[0], caches[1], ds, w.Partition)
			}
			ls := d.Launches()
			d.Measure(false)
			if err != nil {
				return nil, err
			}
			if err := d.Synchronize(); err != nil {
				return nil, err
			}
			res.Free()
			switch {
			case rep == 0: // warm-up
			case rep == 1:
				p.Launches = ls
			default:
				for i := range ls {
					if i < len(p.Launches) && ls[i].Measured < p.Launches[i].Measured {
						p.Launches[i].Measured = ls[i].Measured
					}
				}
			}
		}
	}
	return out, nil
}
