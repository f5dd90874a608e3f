package cuda

import (
	"fmt"

	"github.com/stride-lm/stride/tensor"
)

// The two attention paths on the GPU, launch for launch the sequence
// Workload.Simulate counts (and attention.Naive / attention.Fused run on the
// CPU): q [T, H, D] and k, v [T, KVH, D] may be views of a fused QKV
// buffer; the caches are [num_blocks, block_size, KVH, D].

// FusedAttention writes k and v into the caches, then runs one kernel:
// paged_attention_decode (+ merge when partition > 0) when every sequence
// has exactly one new token, flash_attention_prefill otherwise. It returns
// a new [T, H·D] output (rows of padding tokens are zero).
func (d *Device) FusedAttention(q, k, v, kCache, vCache *DeviceTensor, s *DeviceSeqs, partition int) (*DeviceTensor, error) {
	if err := d.ok(); err != nil {
		return nil, err
	}
	out, err := d.attnOut(q)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*DeviceTensor, error) {
		out.Free()
		return nil, err
	}
	if err := d.ReshapeAndCache(k, v, kCache, vCache, s); err != nil {
		return fail(err)
	}
	decode := s.Seqs.NumSeqs() > 0
	for _, ql := range s.Seqs.QueryLen {
		decode = decode && ql == 1
	}
	if decode {
		err = d.PagedDecode(q, kCache, vCache, out, s, partition)
	} else {
		err = d.FusedPrefill(q, kCache, vCache, out, s)
	}
	if err != nil {
		return fail(err)
	}
	return out, nil
}

func (d *Device) attnOut(q *DeviceTensor) (*DeviceTensor, error) {
	sh := q.layout.Shape()
	if len(sh) != 3 {
		return nil, fmt.Errorf("cuda: attention: q must be [T, H, D], got %v", sh)
	}
	return d.Empty(q.layout.DType(), sh[0], sh[1]*sh[2])
}

// NaiveAttention writes k and v into the caches, then, one sequence at a
// time: K and V are views of this step's k, v for a fresh prefill, or
// gathered from the cache (gather_kv) when there is earlier context;
// repeated per query head for GQA (repeat_interleave); scores = q·kᵀ
// materialized (naive_scores), softmax in place (naive_softmax),
// attn·v into [H, Tq, D] (naive_av), and transposed into the output rows
// (transpose_contiguous). It returns a new [T, H·D] output.
func (d *Device) NaiveAttention(q, k, v, kCache, vCache *DeviceTensor, s *DeviceSeqs) (*DeviceTensor, error) {
	if err := d.ok(); err != nil {
		return nil, err
	}
	out, err := d.attnOut(q)
	if err != nil {
		return nil, err
	}
	r := &naiveRun{d: d, q: q, k: k, v: v, kCache: kCache, vCache: vCache, out: out, s: s}
	err = r.run()
	r.cleanup()
	if err != nil {
		out.Free()
		return nil, err
	}
	return out, nil
}

// naiveRun is one NaiveAttention call: its operands, and the temporaries
// it frees when done.
type naiveRun struct {
	d                            *Device
	q, k, v, kCache, vCache, out *DeviceTensor
	s                            *DeviceSeqs
	H, D, KVH, G                 int
	temps                        []*DeviceTensor
	ints                         []*DeviceInts
}

// cleanup waits for the kernels, then frees the temporaries.
func (r *naiveRun) cleanup() {
	r.d.rt.sync()
	for _, t := range r.temps {
		t.Free()
	}
	for _, x := range r.ints {
		x.Free()
	}
}

// temp allocates a temporary of q's dtype, freed by cleanup.
func (r *naiveRun) temp(shape ...int) (*DeviceTensor, error) {
	t, err := r.d.Empty(r.q.layout.DType(), shape...)
	if err == nil {
		r.temps = append(r.temps, t)
	}
	return t, err
}

// narrow is x[start : start+n] along dim 0.
func narrow(x *DeviceTensor, start, n int) (*DeviceTensor, error) {
	return x.View(func(t *tensor.Tensor) (*tensor.Tensor, error) { return t.Narrow(0, start, n) })
}

// run writes the cache, then attends sequence by sequence.
func (r *naiveRun) run() error {
	if err := r.d.ReshapeAndCache(r.k, r.v, r.kCache, r.vCache, r.s); err != nil {
		return err
	}
	qs, ks := r.q.layout.Shape(), r.k.layout.Shape()
	r.H, r.D, r.KVH = qs[1], qs[2], ks[1]
	if r.KVH < 1 || r.H%r.KVH != 0 {
		return fmt.Errorf("cuda: naive attention: %d heads are not a multiple of %d KV heads", r.H, r.KVH)
	}
	r.G = r.H / r.KVH
	for i := 0; i < r.s.Seqs.NumSeqs(); i++ {
		if r.s.Seqs.QueryLen[i] == 0 {
			continue
		}
		if err := r.seq(i); err != nil {
			return err
		}
	}
	return nil
}

// seq runs the textbook attention of sequence i into its output rows.
func (r *naiveRun) seq(i int) error {
	d, H, D := r.d, r.H, r.D
	row, ql, C := r.s.Seqs.QueryStart[i], r.s.Seqs.QueryLen[i], r.s.Seqs.ContextLen[i]
	qi, err := narrow(r.q, row, ql)
	if err != nil {
		return err
	}
	ki, vi, err := r.keysValues(i)
	if err != nil {
		return err
	}
	scores, err := r.temp(H, ql, C)
	if err != nil {
		return err
	}
	if err := d.NaiveScores(scores, qi, ki); err != nil {
		return err
	}
	if err := d.NaiveSoftmax(scores); err != nil {
		return err
	}
	ohd, err := r.temp(H, ql, D)
	if err != nil {
		return err
	}
	if err := d.NaiveAV(ohd, scores, vi); err != nil {
		return err
	}
	rows, err := r.out.View(func(t *tensor.Tensor) (*tensor.Tensor, error) {
		x, err := t.Narrow(0, row, ql)
		if err != nil {
			return nil, err
		}
		return x.View(ql, H, D)
	})
	if err != nil {
		return err
	}
	return d.TransposeContiguous(rows, ohd)
}

// keysValues returns sequence i's K and V [C, H, D]: views of this step's
// k, v for a fresh prefill, else gathered from the cache (gather_kv); then
// repeated per query head for GQA (repeat_interleave).
func (r *naiveRun) keysValues(i int) (ki, vi *DeviceTensor, err error) {
	d := r.d
	row, ql, C := r.s.Seqs.QueryStart[i], r.s.Seqs.QueryLen[i], r.s.Seqs.ContextLen[i]
	if C == ql {
		if ki, err = narrow(r.k, row, ql); err == nil {
			vi, err = narrow(r.v, row, ql)
		}
	} else {
		if ki, err = r.temp(C, r.KVH, r.D); err == nil {
			vi, err = r.temp(C, r.KVH, r.D)
		}
		if err == nil {
			var rows *DeviceInts
			if rows, err = d.UploadInts(r.s.Seqs.contextSlots(i, r.kCache.layout.Shape()[1])); err == nil {
				r.ints = append(r.ints, rows)
				err = d.GatherKV(ki, vi, r.kCache, r.vCache, rows)
			}
		}
	}
	if err != nil || r.G == 1 {
		return ki, vi, err
	}
	kr, err := r.temp(C, r.H, r.D)
	if err != nil {
		return nil, nil, err
	}
	vr, err := r.temp(C, r.H, r.D)
	if err != nil {
		return nil, nil, err
	}
	if err := d.RepeatInterleave(kr, ki, r.G); err != nil {
		return nil, nil, err
	}
	if err := d.RepeatInterleave(vr, vi, r.G); err != nil {
		return nil, nil, err
	}
	return kr, vr, nil
}
