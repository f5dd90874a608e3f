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
	in, err := w.upload(d)
	defer in.free()
	if err != nil {
		return nil, err
	}
	out := &Comparison{Workload: w, DType: w.DType.String(), Naive: PathReport{Name: "naive"}, Fused: PathReport{Name: "fused"},
		Intermediates: sim.Intermediates}
	for _, p := range []*PathReport{&out.Naive, &out.Fused} {
		if err := in.measure(d, p, w.Partition, reps); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// deviceStep is a Workload step's inputs on a device: q, k, v as views of
// one fused QKV buffer, the two paged caches, and the step's metadata.
type deviceStep struct {
	qkv, q, k, v *DeviceTensor
	caches       [2]*DeviceTensor
	seqs         *DeviceSeqs
}

// upload builds the step's inputs on d from random data: the caches too,
// since a decode step's earlier context must hold values. Whatever it
// returns, also with an error, is released by free.
func (w Workload) upload(d *Device) (*deviceStep, error) {
	in := &deviceStep{}
	qlen := w.Seq
	if w.Phase == Decode {
		qlen = 1
	}
	seqs, nb, err := UniformSeqs(w.Batch, qlen, w.Seq, w.BlockSize)
	if err != nil {
		return in, err
	}
	H, KVH, D, dt := w.Heads, w.KVHeads, w.HeadDim, w.DType
	T := w.Batch * qlen
	hostQKV, err := tensor.Randn(nil, dt, 1, T, (H+2*KVH)*D)
	if err != nil {
		return in, err
	}
	if in.qkv, err = d.Upload(hostQKV); err != nil {
		return in, err
	}
	view := func(col, heads int) (*DeviceTensor, error) {
		return in.qkv.View(func(t *tensor.Tensor) (*tensor.Tensor, error) {
			n, err := t.Narrow(1, col, heads*D)
			if err != nil {
				return nil, err
			}
			return n.View(T, heads, D)
		})
	}
	if in.q, err = view(0, H); err != nil {
		return in, err
	}
	if in.k, err = view(H*D, KVH); err != nil {
		return in, err
	}
	if in.v, err = view((H+KVH)*D, KVH); err != nil {
		return in, err
	}
	for i := range in.caches {
		host, err := tensor.Randn(nil, dt, uint64(2+i), nb, w.BlockSize, KVH, D)
		if err != nil {
			return in, err
		}
		if in.caches[i], err = d.Upload(host); err != nil {
			return in, err
		}
	}
	in.seqs, err = d.UploadSeqs(seqs)
	return in, err
}

// free releases what upload allocated.
func (in *deviceStep) free() {
	if in.qkv != nil {
		in.qkv.Free()
	}
	for _, c := range in.caches {
		if c != nil {
			c.Free()
		}
	}
	if in.seqs != nil {
		in.seqs.Free()
	}
}

// measure runs path p once to warm up and reps times timed, keeping the
// launches of the first timed run with each kernel's best time.
func (in *deviceStep) measure(d *Device, p *PathReport, partition, reps int) error {
	for rep := 0; rep <= reps; rep++ {
		d.Measure(true)
		var res *DeviceTensor
		var err error
		if p.Name == "naive" {
			res, err = d.NaiveAttention(in.q, in.k, in.v, in.caches[0], in.caches[1], in.seqs)
		} else {
			res, err = d.FusedAttention(in.q, in.k, in.v, in.caches[0], in.caches[1], in.seqs, partition)
		}
		ls := d.Launches()
		d.Measure(false)
		if err != nil {
			return err
		}
		if err := d.Synchronize(); err != nil {
			return err
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
	return nil
}
