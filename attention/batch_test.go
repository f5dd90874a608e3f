package attention

import (
	"slices"
	"strings"
	"testing"

	"github.com/stride-lm/stride/tensor"
)

func TestNewLinearBatch(t *testing.T) {
	b, nb, err := NewLinearBatch([]int{3, 1}, []int{3, 6}, 4)
	if err != nil {
		t.Fatal(err)
	}
	// Sequence 0: positions 0-2 in block 0. Sequence 1: 6 positions in
	// blocks 1, 2; its new token is position 5 → block 2, slot 1 → 9.
	want := &Batch{
		QueryStart: []int{0, 3}, QueryLen: []int{3, 1}, ContextLen: []int{3, 6},
		BlockTables: [][]int32{{0}, {1, 2}}, SlotMapping: []int32{0, 1, 2, 9},
	}
	if nb != 3 || !equalBatch(b, want) {
		t.Fatalf("got %+v (%d blocks), want %+v (3 blocks)", b, nb, want)
	}
	if err := b.Validate(4, nb, 4); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		q, c []int
		bs   int
	}{{[]int{1}, []int{1, 2}, 4}, {[]int{2}, []int{1}, 4}, {[]int{0}, []int{0}, 4}, {[]int{1}, []int{1}, 0}} {
		if _, _, err := NewLinearBatch(c.q, c.c, c.bs); err == nil {
			t.Errorf("NewLinearBatch(%v, %v, %d) succeeded", c.q, c.c, c.bs)
		}
	}
}

func equalBatch(a, b *Batch) bool {
	if !slices.Equal(a.QueryStart, b.QueryStart) || !slices.Equal(a.QueryLen, b.QueryLen) || !slices.Equal(a.ContextLen, b.ContextLen) ||
		len(a.BlockTables) != len(b.BlockTables) || len(a.SlotMapping) != len(b.SlotMapping) {
		return false
	}
	for i := range a.BlockTables {
		if len(a.BlockTables[i]) != len(b.BlockTables[i]) {
			return false
		}
		for j := range a.BlockTables[i] {
			if a.BlockTables[i][j] != b.BlockTables[i][j] {
				return false
			}
		}
	}
	for i := range a.SlotMapping {
		if a.SlotMapping[i] != b.SlotMapping[i] {
			return false
		}
	}
	return true
}

// Each broken batch is refused with a message naming what is wrong, by
// both paths, before anything is written.
func TestBatchValidateErrors(t *testing.T) {
	good := func() *Batch {
		b, _, _ := NewLinearBatch([]int{2, 1}, []int{2, 5}, 4)
		return b
	}
	cases := []struct {
		name  string
		edit  func(b *Batch)
		T, nb int
		want  string
	}{
		{"nil", nil, 3, 4, "nil batch"},
		{"lengths", func(b *Batch) { b.ContextLen = b.ContextLen[:1] }, 3, 4, "one of each per sequence"},
		{"slots", func(b *Batch) { b.SlotMapping = b.SlotMapping[:2] }, 3, 4, "slot mapping has 2 entries"},
		{"qlen>ctx", func(b *Batch) { b.QueryLen[0] = 3 }, 3, 4, "want 1 ≤ query ≤ context"},
		{"zero qlen", func(b *Batch) { b.QueryLen[1] = 0 }, 3, 4, "want 1 ≤ query ≤ context"},
		{"rows outside", func(b *Batch) { b.QueryStart[1] = 3 }, 3, 4, "outside the 3 token rows"},
		{"negative start", func(b *Batch) { b.QueryStart[0] = -1 }, 3, 4, "outside"},
		{"overlap", func(b *Batch) { b.QueryStart[1] = 1 }, 3, 4, "belongs to sequences 0 and 1"},
		{"short table", func(b *Batch) { b.BlockTables[1] = b.BlockTables[1][:1] }, 3, 4, "need 2"},
		{"block range", func(b *Batch) { b.BlockTables[1][1] = 9 }, 3, 4, "is block 9"},
		{"negative block", func(b *Batch) { b.BlockTables[0][0] = -2 }, 3, 4, "is block -2"},
		{"wrong slot", func(b *Batch) { b.SlotMapping[2] = 5 }, 3, 4, "has slot 5 but its block table puts position 4 in slot 8"},
		{"padding slot", func(b *Batch) { b.QueryStart[1] = 3; b.SlotMapping = append(b.SlotMapping[:2], 7, 8) }, 4, 4, "belongs to no sequence but has slot 7"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b *Batch
			if c.edit != nil {
				b = good()
				c.edit(b)
			}
			err := b.Validate(c.T, c.nb, 4)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
			// Through Attend: refused by both paths, cache untouched.
			for _, p := range []Path{NewFused(Options{}), NewNaive(Options{})} {
				kc := tensor.Must(tensor.Zeros(nil, tensor.F32, c.nb, 4, 1, 2))
				vc := tensor.Must(tensor.Zeros(nil, tensor.F32, c.nb, 4, 1, 2))
				q := tensor.Must(full(nil, tensor.F32, 1, c.T, 2, 2))
				k := tensor.Must(full(nil, tensor.F32, 1, c.T, 1, 2))
				if _, err := p.Attend(q, k, k, kc, vc, b, nil); err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("%s: got %v", p.Name(), err)
				}
				if data, _ := kc.Float32s(); anyNonZero(data) {
					t.Fatalf("%s wrote the cache before refusing the batch", p.Name())
				}
			}
		})
	}
}

func anyNonZero(x []float32) bool {
	for _, v := range x {
		if v != 0 {
			return true
		}
	}
	return false
}

func TestAttendShapeErrors(t *testing.T) {
	mk := func(shape ...int) *tensor.Tensor { return tensor.Must(tensor.Zeros(nil, tensor.F32, shape...)) }
	meta := func(shape ...int) *tensor.Tensor { return tensor.Must(tensor.Meta(tensor.F32, shape...)) }
	b, _, _ := NewLinearBatch([]int{2}, []int{2}, 4)
	cache := mk(2, 4, 2, 8)
	transposed := tensor.Must(mk(2, 4, 8, 2).Transpose(2, 3))
	cases := []struct {
		name            string
		q, k, v, kc, vc *tensor.Tensor
		want            string
	}{
		{"nil q", nil, mk(2, 2, 8), mk(2, 2, 8), cache, cache, "q is nil"},
		{"2-D q", mk(2, 32), mk(2, 2, 8), mk(2, 2, 8), cache, cache, "must be [T, H, D]"},
		{"k/v differ", mk(2, 4, 8), mk(2, 2, 8), mk(2, 1, 8), cache, cache, "must both be"},
		{"T differs", mk(2, 4, 8), mk(3, 2, 8), mk(3, 2, 8), cache, cache, "must both be"},
		{"D differs", mk(2, 4, 8), mk(2, 2, 4), mk(2, 2, 4), cache, cache, "must both be"},
		{"heads", mk(2, 3, 8), mk(2, 2, 8), mk(2, 2, 8), cache, cache, "multiple of KVH"},
		{"cache rank", mk(2, 4, 8), mk(2, 2, 8), mk(2, 2, 8), mk(8, 2, 8), mk(8, 2, 8), "[num_blocks, block_size, KVH, D]"},
		{"cache heads", mk(2, 4, 8), mk(2, 2, 8), mk(2, 2, 8), mk(2, 4, 1, 8), mk(2, 4, 1, 8), "holds 1 heads"},
		{"cache layout", mk(2, 4, 8), mk(2, 2, 8), mk(2, 2, 8), transposed, transposed, "must be contiguous"},
		{"mixed meta", meta(2, 4, 8), mk(2, 2, 8), mk(2, 2, 8), cache, cache, "meta and real tensors mixed"},
	}
	for _, c := range cases {
		for _, p := range []Path{NewFused(Options{}), NewNaive(Options{})} {
			_, err := p.Attend(c.q, c.k, c.v, c.kc, c.vc, b, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s/%s: got %v, want an error containing %q", p.Name(), c.name, err, c.want)
			}
		}
	}
}

// full is torch.full: a contiguous tensor of shape with every element v.
func full(led *tensor.Ledger, dt tensor.DType, v float32, shape ...int) (*tensor.Tensor, error) {
	n := 1
	for _, s := range shape {
		n *= s
	}
	data := make([]float32, n)
	for i := range data {
		data[i] = v
	}
	return tensor.FromFloat32(led, dt, data, shape...)
}
