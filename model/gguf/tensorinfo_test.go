package gguf

import (
	"bytes"
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/stride-lm/stride/tensor/kernels"
)

// Tensor infos whose extents, type, offset or size do not fit the file.
func TestCorruptTensorInfos(t *testing.T) {
	build := func(mod func(*[]KV, *[]WriterTensor)) []byte {
		kvs := []KV{{Key: "general.architecture", Value: MustValue("llama")}}
		ts := []WriterTensor{{Name: "w", Type: kernels.TypeF32, Shape: []int{2, 32}, Data: make([]byte, 256)}}
		if mod != nil {
			mod(&kvs, &ts)
		}
		var buf bytes.Buffer
		if err := Write(&buf, kvs, ts); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	base := build(nil)
	f, err := Parse(base, "base")
	if err != nil {
		t.Fatal(err)
	}
	// The tensor info follows the metadata: name length, "w", n_dims,
	// ne[0], ne[1], type, offset.
	infoStart := 4 + 4 + 8 + 8 + 8 + len("general.architecture") + 4 + 8 + len("llama")
	nDims := infoStart + 8 + 1
	ne0 := nDims + 4
	ne1 := ne0 + 8
	typ := ne1 + 8
	off := typ + 4
	if f.Tensors[0].Ne[0] != binary.LittleEndian.Uint64(base[ne0:]) {
		t.Fatal("test layout arithmetic is off")
	}
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"n_dims 0", patch32(base, nDims, 0), "0 dimensions"},
		{"n_dims 5", patch32(base, nDims, 5), "5 dimensions"},
		{"extent overflow", patch64(patch64(base, ne0, 1<<40), ne1, 1<<40), "overflow"},
		{"too big for file", patch64(base, ne1, 1000), "beyond the file"},
		{"block multiple", patch32(patch64(base, ne0, 33), typ, uint32(kernels.TypeQ8_0)), "not a multiple of the block size 32"},
		{"misaligned", patch64(base, off, 4), "not a multiple of the alignment"},
		{"offset beyond", patch64(base, off, 1<<20), "beyond the file"},
		{"offset huge", patch64(base, off, math.MaxUint64-31), "beyond any file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(c.data, "bad.gguf")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
	// Duplicates and a bad alignment. Write refuses duplicates itself:
	var buf bytes.Buffer
	if err := Write(&buf, nil, []WriterTensor{{Name: "w", Type: kernels.TypeF32, Shape: []int{1}, Data: make([]byte, 4)}, {Name: "w", Type: kernels.TypeF32, Shape: []int{1}, Data: make([]byte, 4)}}); err == nil {
		t.Error("Write accepted a duplicate tensor name")
	}
	// A second tensor named like the first, patched in by renaming "v".
	two := build(func(_ *[]KV, ts *[]WriterTensor) {
		*ts = append(*ts, WriterTensor{Name: "v", Type: kernels.TypeF32, Shape: []int{1}, Data: make([]byte, 4)})
	})
	i := bytes.Index(two[infoStart+20:], []byte{1, 0, 0, 0, 0, 0, 0, 0, 'v'})
	two[infoStart+20+i+8] = 'w'
	if _, err := Parse(two, "dup"); err == nil || !strings.Contains(err.Error(), "appears twice") {
		t.Errorf("duplicate tensor: %v", err)
	}
	align := build(func(kvs *[]KV, _ *[]WriterTensor) {
		*kvs = append(*kvs, KV{Key: KeyAlignment, Value: MustValue(uint32(16))})
	})
	j := bytes.Index(align, []byte(KeyAlignment)) + len(KeyAlignment) + 4
	if _, err := Parse(patch32(align, j, 24), "align"); err == nil || !strings.Contains(err.Error(), "power of two") {
		t.Errorf("alignment 24: %v", err)
	}
}

// An unknown tensor type does not stop the file from opening (it may
// still serve as a tokenizer), but its data is an error naming it.
func TestUnknownTensorType(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, nil, []WriterTensor{{Name: "w", Type: kernels.TypeF32, Shape: []int{8}, Data: make([]byte, 32)}}); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	typ := 4 + 4 + 8 + 8 + 8 + 1 + 4 + 8
	f, err := Parse(patch32(b, typ, 39), "new.gguf")
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.TensorData("w")
	if err == nil || !strings.Contains(err.Error(), `"w"`) || !strings.Contains(err.Error(), "39") {
		t.Errorf("unknown type data: %v", err)
	}
}
