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
	var temps []*DeviceTensor
	var ints []*DeviceInts
	cleanup := func() {
		d.rt.sync()
		for _, t := range temps {
			t.Free()
		}
		for _, x := range ints {
			x.Free()
		}
	}
	fail := func(err error) (*DeviceTensor, error) {
		cleanup()
		out.Free()
		return nil, err
	}
	if err := d.ReshapeAndCache(k, v, kCache, vCache, s); err != nil {
		return fail(err)
	}
	qs, ks := q.layout.Shape(), k.layout.Shape()
	H, D, KVH := qs[1], qs[2], ks[1]
	if KVH < 1 || H%KVH != 0 {
		return fail(fmt.Errorf("cuda: naive attention: %d heads are not a multiple of %d KV heads", H, KVH))
	}
	G := H / KVH
	bs := kCache.layout.Shape()[1]
	dt := q.layout.DType()
	temp := func(shape ...int) (*DeviceTensor, error) {
		t, err := d.Empty(dt, shape...)
		if err == nil {
			temps = append(temps, t)
		}
		return t, err
	}
	narrow := func(x *DeviceTensor, start, n int) (*DeviceTensor, error) {
		return x.View(func(t *tensor.Tensor) (*tensor.Tensor, error) { return t.Narrow(0, start, n) })
	}
	for i := 0; i < s.Seqs.NumSeqs(); i++ {
		row, ql, C := s.Seqs.QueryStart[i], s.Seqs.QueryLen[i], s.Seqs.ContextLen[i]
		if ql == 0 {
			continue
		}
		qi, err := narrow(q, row, ql)
		if err != nil {
			return fail(err)
		}
		var ki, vi *DeviceTensor
		if C == ql {
			if ki, err = narrow(k, row, ql); err == nil {
				vi, err = narrow(v, row, ql)
			}
		} else {
			if ki, err = temp(C, KVH, D); err == nil {
				vi, err = temp(C, KVH, D)
			}
			if err == nil {
				var rows *DeviceInts
				if rows, err = d.UploadInts(s.Seqs.contextSlots(i, bs)); err == nil {
					ints = append(ints, rows)
					err = d.GatherKV(ki, vi, kCache, vCache, rows)
				}
			}
		}
		if err != nil {
			return fail(err)
		}
		if G > 1 {
			kr, err := temp(C, H, D)
			if err != nil {
				return fail(err)
			}
			vr, err := temp(C, H, D)
			if err != nil {
				return fail(err)
			}
			if err := d.RepeatInterleave(kr, ki, G); err != nil {
				return fail(err)
			}
			if err := d.RepeatInterleave(vr, vi, G); err != nil {
				return fail(err)
			}
			ki, vi = kr, vr
		}
		scores, err := temp(H, ql, C)
		if err != nil {
			return fail(err)
		}
		if err := d.NaiveScores(scores, qi, ki); err != nil {
			return fail(err)
		}
		if err := d.NaiveSoftmax(scores); err != nil {
			return fail(err)
		}
		ohd, err := temp(H, ql, D)
		if err != nil {
			return fail(err)
		}
		if err := d.NaiveAV(ohd, scores, vi); err != nil {
			return fail(err)
		}
		rows, err := out.View(func(t *tensor.Tensor) (*tensor.Tensor, error) {
			r, err := t.Narrow(0, row, ql)
			if err != nil {
				return nil, err
			}
			return r.View(ql, H, D)
		})
		if err != nil {
			return fail(err)
		}
		if err := d.TransposeContiguous(rows, ohd); err != nil {
			return fail(err)
		}
	}
	cleanup()
	return out, nil
}
