package safetensors

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// small is a two-tensor file written by Write.
func small(t testing.TB) []byte {
	t.Helper()
	f32 := make([]byte, 4*6)
	for i := range 6 {
		binary.LittleEndian.PutUint32(f32[4*i:], math.Float32bits(float32(i)+0.5))
	}
	var buf bytes.Buffer
	if err := Write(&buf, []WriterTensor{
		{Name: "w", DType: F32, Shape: []int{2, 3}, Data: f32},
		{Name: "b", DType: BF16, Shape: []int{3}, Data: []byte{1, 2, 3, 4, 5, 6}},
	}, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestWriteRead(t *testing.T) {
	data := small(t)
	h, err := ParseHeader(data)
	if err != nil {
		t.Fatal(err)
	}
	if h.DataOffset%8 != 0 {
		t.Errorf("data buffer starts at %d, not a multiple of 8", h.DataOffset)
	}
	if len(h.Tensors) != 2 || h.Tensors[0].Name != "w" || h.Tensors[1].Name != "b" || h.Metadata["format"] != "pt" {
		t.Fatalf("header %+v", h)
	}
	w := h.Tensors[0]
	if w.DType != F32 || len(w.Shape) != 2 || w.Shape[0] != 2 || w.Shape[1] != 3 || w.End-w.Begin != 24 {
		t.Errorf("w = %+v", w)
	}
	if got := math.Float32frombits(binary.LittleEndian.Uint32(data[w.Begin+4*5:])); got != 5.5 {
		t.Errorf("w[1][2] = %g, want 5.5", got)
	}
	if b := h.Tensors[1]; !bytes.Equal(data[b.Begin:b.End], []byte{1, 2, 3, 4, 5, 6}) {
		t.Errorf("b's bytes are %v", data[b.Begin:b.End])
	}

	path := filepath.Join(t.TempDir(), "m.safetensors")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, noMmap := range []bool{false, true} {
		f, err := Open(path, noMmap)
		if err != nil {
			t.Fatal(err)
		}
		ti, ok := f.Tensor("b")
		if !ok {
			t.Fatal("no tensor b")
		}
		d, err := f.Data(ti)
		if err != nil || !bytes.Equal(d, []byte{1, 2, 3, 4, 5, 6}) {
			t.Errorf("noMmap=%v: Data(b) = %v, %v", noMmap, d, err)
		}
		if _, ok := f.Tensor("c"); ok {
			t.Error("Tensor(c) found a tensor the file lacks")
		}
		if err := f.Close(); err != nil {
			t.Error(err)
		}
		if _, err := f.Data(ti); err == nil {
			t.Error("Data after Close succeeded")
		}
	}
}

// header builds a file from a raw JSON header and a buffer of n bytes.
func header(js string, n int) []byte {
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(js)))
	return append(append(lenBuf[:], js...), make([]byte, n)...)
}

// Every malformed header is refused with an error that says what is
// wrong, before any tensor is read.
func TestBadHeaders(t *testing.T) {
	huge := make([]byte, 8)
	binary.LittleEndian.PutUint64(huge, 1<<62)
	past := make([]byte, 16)
	binary.LittleEndian.PutUint64(past, 9)
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "too short"},
		{"header length over the cap", huge, "exceeds the limit"},
		{"header length past the file", past, "exceeds the 8 bytes"},
		{"not an object", header(`[1,2]  `, 0), "does not start with '{'"},
		{"bad JSON", header(`{"a":`, 0), "tensor \"a\""},
		{"trailing junk", header(`{} x`, 0), "not padding"},
		{"unknown dtype", header(`{"a":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}}`, 4), "unknown dtype"},
		{"missing field", header(`{"a":{"dtype":"F32","shape":[1]}}`, 4), "needs dtype"},
		{"negative dimension", header(`{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`, 4), "out of range"},
		{"huge shape", header(`{"a":{"dtype":"F32","shape":[1099511627776,1099511627776],"data_offsets":[0,4]}}`, 4), "more elements"},
		{"wrong extent", header(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, 4), "needs 8"},
		{"offsets past the buffer", header(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 4), "outside"},
		{"reversed offsets", header(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[4,0]}}`, 4), "outside"},
		{"negative offset", header(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}}`, 4), "tensor \"a\""},
		{"three offsets", header(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}}`, 8), "data_offsets has 3"},
		{"duplicate name", header(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, 2), "twice"},
		{"overlap", header(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}`, 3), "overlaps"},
		{"hole", header(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, 2), "hole"},
		{"uncovered tail", header(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, 2), "cover 1 of the 2"},
		{"bad metadata", header(`{"__metadata__":{"a":1}}`, 0), "__metadata__"},
		{"empty name", header(`{"":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, 1), "empty tensor name"},
		{"invalid UTF-8", header("{\"\xff\":1}", 0), "UTF-8"},
		{"header length 1", header("{", 0), "header length 1 is too short for a JSON object"},
		{"bad JSON token", header(`{,}`, 0), "header JSON: invalid character ','"},
		{"unclosed object", header(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}`, 0), "header JSON object is not closed"},
	} {
		_, err := ParseHeader(c.data)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	// Trailing JSON whitespace is padding too.
	if _, err := ParseHeader(header("{}\n\t ", 0)); err != nil {
		t.Errorf("newline padding: %v", err)
	}
	// A valid header with padding and a scalar passes.
	if _, err := ParseHeader(header(`{"s":{"dtype":"F64","shape":[],"data_offsets":[0,8]}}   `, 8)); err != nil {
		t.Errorf("scalar with padding: %v", err)
	}
}

// Write refuses a tensor whose dtype or byte count is wrong, naming it.
func TestWriteErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		t    WriterTensor
		want string
	}{
		{"unknown dtype", WriterTensor{Name: "a", DType: "F33", Shape: []int{1}, Data: make([]byte, 4)}, `tensor "a": unknown dtype "F33"`},
		{"short data", WriterTensor{Name: "b", DType: F32, Shape: []int{2, 3}, Data: make([]byte, 20)}, `tensor "b": 20 bytes for F32 of shape [2 3], want 24`},
	} {
		err := Write(io.Discard, []WriterTensor{c.t}, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// A reader that ends before the size it was given is an error, not a
// short header.
func TestReadHeaderShortReader(t *testing.T) {
	data := small(t)
	if _, err := ReadHeader(bytes.NewReader(data[:4]), int64(len(data))); err == nil || !strings.Contains(err.Error(), "reading the header length") {
		t.Errorf("length cut: error %v", err)
	}
	if _, err := ReadHeader(bytes.NewReader(data[:12]), int64(len(data))); err == nil || !strings.Contains(err.Error(), "-byte header") {
		t.Errorf("header cut: error %v", err)
	}
}

// A file that is not a regular file is refused by Open.
func TestOpenDirectory(t *testing.T) {
	if _, err := Open(t.TempDir(), false); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("Open(dir) = %v", err)
	}
}

// The shared stories260K checkpoint, as Python's json module reads its
// header: 47 tensors, the embedding first at offsets [0, 131072).
func TestStories260KHeader(t *testing.T) {
	f, err := Open(sharedFile(t, "models/hf/stories260K/model.safetensors"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if len(f.Tensors) != 47 || f.Metadata["format"] != "pt" || f.DataOffset != 8+4856 {
		t.Fatalf("%d tensors, metadata %v, data at %d", len(f.Tensors), f.Metadata, f.DataOffset)
	}
	e, ok := f.Tensor("model.embed_tokens.weight")
	if !ok || e.DType != F32 || e.Shape[0] != 512 || e.Shape[1] != 64 || e.Begin != f.DataOffset || e.End != f.DataOffset+131072 {
		t.Errorf("embed_tokens = %+v", e)
	}
	k, ok := f.Tensor("model.layers.0.self_attn.k_proj.weight")
	if !ok || k.Shape[0] != 32 || k.Begin-f.DataOffset != 263680 || k.End-f.DataOffset != 271872 {
		t.Errorf("k_proj = %+v", k)
	}
}

// Tensors with a zero dimension take no bytes and are valid anywhere.
func TestZeroSizedTensor(t *testing.T) {
	h, err := ParseHeader(header(`{"z":{"dtype":"BF16","shape":[4,0],"data_offsets":[0,0]},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, 1))
	if err != nil {
		t.Fatal(err)
	}
	if h.Tensors[0].Elements() != 0 {
		t.Errorf("z has %d elements", h.Tensors[0].Elements())
	}
}
