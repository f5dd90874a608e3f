package kvcache

import (
	"slices"
	"testing"

	"github.com/stride-lm/stride/tensor"
)

func TestLayoutStridesMatchContiguousTensor(t *testing.T) {
	l := Layout{NumBlocks: 7, BlockSize: 16, NumKVHeads: 4, HeadDim: 8}
	// The tensor package's row-major strides are the oracle.
	want := tensor.ContiguousStrides(l.Shape())
	got := l.Strides()
	if !slices.Equal(got, want) {
		t.Fatalf("Strides() = %v, ContiguousStrides = %v", got, want)
	}
	if l.BlockStride() != 16*4*8 || l.TokenStride() != 4*8 || l.HeadStride() != 8 || l.NumSlots() != 7*16 {
		t.Fatalf("strides %d %d %d slots %d", l.BlockStride(), l.TokenStride(), l.HeadStride(), l.NumSlots())
	}
	// slot·kv_token_stride + h·kv_head_stride is the offset of element
	// (slot/bs, slot%bs, h, 0) computed with the 4-d strides.
	for _, slot := range []int32{0, 5, 16, 111} {
		for h := 0; h < 4; h++ {
			b, s := int(slot)/16, int(slot)%16
			if got, want := l.TokenOffset(slot, h), b*want[0]+s*want[1]+h*want[2]; got != want {
				t.Fatalf("TokenOffset(%d,%d) = %d, want %d", slot, h, got, want)
			}
		}
	}
}

func TestLayoutSlot(t *testing.T) {
	l := Layout{NumBlocks: 10, BlockSize: 4, NumKVHeads: 1, HeadDim: 1}
	table := []int32{7, 2, 9}
	for pos, want := range []int32{28, 29, 30, 31, 8, 9, 10, 11, 36, 37, 38, 39} {
		got, err := l.Slot(table, pos)
		if err != nil || got != want {
			t.Fatalf("Slot(pos %d) = %d, %v; want %d", pos, got, err, want)
		}
	}
	for _, pos := range []int{-1, 12, 100} {
		if _, err := l.Slot(table, pos); err == nil {
			t.Errorf("Slot(pos %d) beyond the table succeeded", pos)
		}
	}
	if _, err := l.Slot([]int32{10}, 0); err == nil {
		t.Error("block 10 of a 10-block pool accepted")
	}
	if _, err := l.Slot([]int32{-1}, 0); err == nil {
		t.Error("negative block accepted")
	}
	if _, err := (Layout{}).Slot(table, 0); err == nil {
		t.Error("zero block size accepted")
	}
	huge := Layout{NumBlocks: 1 << 30, BlockSize: 1 << 10, NumKVHeads: 1, HeadDim: 1}
	if _, err := huge.Slot([]int32{1 << 29}, 0); err == nil {
		t.Error("slot beyond int32 accepted")
	}
}
