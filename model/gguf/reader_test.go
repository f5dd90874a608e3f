package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The stories260K GGUF was written by llama.cpp's converter from
// stories260K.bin, so the legacy file is an independent oracle for what
// the reader must find in it.
func TestOpenStories260K(t *testing.T) {
	path := sharedFile(t, "models/gguf/stories260K-f32.gguf")
	bin, err := os.ReadFile(sharedFile(t, "models/stories260K.bin"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Version != 3 {
		t.Errorf("version %d, want 3", f.Version)
	}
	if s, err := f.String("general.architecture"); err != nil || s != "llama" {
		t.Errorf("general.architecture = %q, %v", s, err)
	}
	// The legacy header: dim, hidden_dim, n_layers, n_heads, n_kv_heads,
	// vocab_size, seq_len as int32.
	hdr := make([]int, 7)
	for i := range hdr {
		hdr[i] = int(int32(binary.LittleEndian.Uint32(bin[4*i:])))
	}
	for key, want := range map[string]int{
		"llama.embedding_length":        hdr[0],
		"llama.feed_forward_length":     hdr[1],
		"llama.block_count":             hdr[2],
		"llama.attention.head_count":    hdr[3],
		"llama.attention.head_count_kv": hdr[4],
		"llama.context_length":          hdr[6],
	} {
		got, err := f.Uint(key)
		if err != nil || int(got) != want {
			t.Errorf("%s = %d, %v; want %d", key, got, err, want)
		}
	}
	tokens, err := f.Strings("tokenizer.ggml.tokens")
	if err != nil || len(tokens) != 512 {
		t.Fatalf("tokens: %d, %v", len(tokens), err)
	}
	scores, err := f.Float32s("tokenizer.ggml.scores")
	if err != nil || len(scores) != 512 {
		t.Fatalf("scores: %d, %v", len(scores), err)
	}
	if _, err := f.Int32s("tokenizer.ggml.token_type"); err != nil {
		t.Error(err)
	}
	if _, err := f.String("llama.embedding_length"); err == nil || !strings.Contains(err.Error(), "uint32, not string") {
		t.Errorf("type mismatch error = %v", err)
	}
	if _, err := f.Uint("no.such.key"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing key error = %v, want ErrNotFound", err)
	}

	emb, ok := f.Tensor("token_embd.weight")
	if !ok {
		t.Fatal("no token_embd.weight")
	}
	if emb.Type != TypeF32 || !reflect.DeepEqual(emb.Shape, []int{512, 64}) || !reflect.DeepEqual(emb.Ne, []uint64{64, 512}) {
		t.Fatalf("token_embd: %s %v (ne %v)", emb.Type, emb.Shape, emb.Ne)
	}
	data, err := f.Data(emb)
	if err != nil {
		t.Fatal(err)
	}
	// The legacy file's embedding table follows its 28-byte header.
	if !bytes.Equal(data, bin[28:28+512*64*4]) {
		t.Error("token_embd.weight bytes differ from the embedding table of stories260K.bin")
	}
	if cap(data) != len(data) {
		t.Errorf("tensor view has capacity %d beyond its %d bytes", cap(data), len(data))
	}
	// Zero copy: the view lies inside the mapping.
	if &data[0] != &f.data[f.DataOffset+emb.Offset] {
		t.Error("tensor data is not a view of the mapping")
	}
	q, _ := f.Tensor("blk.0.attn_q.weight")
	k, _ := f.Tensor("blk.0.attn_k.weight")
	if !reflect.DeepEqual(q.Shape, []int{64, 64}) || !reflect.DeepEqual(k.Shape, []int{32, 64}) {
		t.Errorf("attn_q %v, attn_k %v; want [64 64], [32 64] (GQA 8/4 heads)", q.Shape, k.Shape)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Data(emb); err == nil {
		t.Error("Data after Close succeeded")
	}
}

// Rewriting a file the reader parsed gives back llama.cpp's bytes
// exactly: the header, metadata, tensor infos, padding and data of every
// reference file, including the quantized and vocab-only ones.
func TestRewriteReferenceFilesBitForBit(t *testing.T) {
	var paths []string
	for _, rel := range []string{
		"models/gguf/stories260K-f32.gguf", "models/gguf/stories260K-q8_0.gguf",
		"models/gguf/synthetic-k256-q4_k_m.gguf", "models/gguf/synthetic-k256-q4_0.gguf",
		"tokenizers/llama.cpp-vocab/ggml-vocab-llama-spm.gguf", "tokenizers/llama.cpp-vocab/ggml-vocab-gpt-2.gguf",
		"tokenizers/llama.cpp-vocab/ggml-vocab-starcoder.gguf",
	} {
		paths = append(paths, sharedFile(t, rel))
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			orig, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			f, err := Parse(orig, p)
			if err != nil {
				t.Fatal(err)
			}
			var ts []WriterTensor
			for _, ti := range f.Tensors {
				d, err := f.Data(ti)
				if err != nil {
					t.Fatal(err)
				}
				ts = append(ts, WriterTensor{Name: ti.Name, Type: ti.Type, Shape: ti.Shape, Data: d})
			}
			var buf bytes.Buffer
			if err := Write(&buf, f.Metadata, ts); err != nil {
				t.Fatal(err)
			}
			got := buf.Bytes()
			if !bytes.Equal(got, orig) {
				i := 0
				for i < len(got) && i < len(orig) && got[i] == orig[i] {
					i++
				}
				t.Fatalf("rewrite differs from the original at byte %d (lengths %d, %d)", i, len(got), len(orig))
			}
		})
	}
}

// everyType is metadata holding each value type, scalar and array,
// including an array of arrays.
func everyType() []KV {
	vals := []any{
		uint8(200), int8(-100), uint16(60000), int16(-30000), uint32(4000000000), int32(-2000000000),
		float32(1.5), true, "héllo", uint64(1 << 63), int64(-1 << 62), float64(math.Pi),
		[]uint8{1, 2, 255}, []int8{-1, 0, 127}, []uint16{0, 65535}, []int16{-32768, 1}, []uint32{7, 8, 9},
		[]int32{-5, 5}, []uint64{1, 1 << 63}, []int64{-9, 9}, []float32{float32(math.Inf(-1)), 0.25},
		[]float64{-0.5, 1e300}, []bool{true, false, true}, []string{"", "▁a", "Ġb"}, []string{},
		[]Value{MustValue([]int32{1, 2}), MustValue([]int32{3})},
	}
	kvs := []KV{{Key: KeyAlignment, Value: MustValue(uint32(64))}}
	for i, v := range vals {
		kvs = append(kvs, KV{Key: "test.k" + string(rune('a'+i)), Value: MustValue(v)})
	}
	return kvs
}

func TestWriteReadEveryValueType(t *testing.T) {
	kvs := everyType()
	tensors := []WriterTensor{
		{Name: "a", Type: TypeF32, Shape: []int{2, 3}, Data: make([]byte, 24)},
		{Name: "b", Type: TypeQ8_0, Shape: []int{1, 64}, Data: bytes.Repeat([]byte{7}, 68)},
		{Name: "c", Type: TypeF16, Shape: []int{5}, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
	}
	var buf bytes.Buffer
	if err := Write(&buf, kvs, tensors); err != nil {
		t.Fatal(err)
	}
	f, err := Parse(buf.Bytes(), "mem")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.Metadata, kvs) {
		for i := range kvs {
			if !reflect.DeepEqual(f.Metadata[i], kvs[i]) {
				t.Errorf("key %s: read %#v, wrote %#v", kvs[i].Key, f.Metadata[i].Value, kvs[i].Value)
			}
		}
	}
	if f.Alignment != 64 || f.DataOffset%64 != 0 {
		t.Errorf("alignment %d, data offset %d", f.Alignment, f.DataOffset)
	}
	for _, w := range tensors {
		ti, ok := f.Tensor(w.Name)
		if !ok || ti.Type != w.Type || !reflect.DeepEqual(ti.Shape, w.Shape) || ti.Offset%64 != 0 {
			t.Errorf("tensor %s: %+v", w.Name, ti)
			continue
		}
		d, err := f.Data(ti)
		if err != nil || !bytes.Equal(d, w.Data) {
			t.Errorf("tensor %s data %v, %v", w.Name, d, err)
		}
	}
	// Accessors across integer widths.
	if v, err := f.Uint("test.ke"); err != nil || v != 4000000000 {
		t.Errorf("Uint(uint32) = %d, %v", v, err)
	}
	if v, err := f.Int("test.kb"); err != nil || v != -100 {
		t.Errorf("Int(int8) = %d, %v", v, err)
	}
	if _, err := f.Uint("test.kb"); err == nil {
		t.Error("Uint of a negative int8 succeeded")
	}
	if _, err := f.Int("test.kj"); err == nil {
		t.Error("Int of 1<<63 succeeded")
	}
	if v, err := f.Float("test.kg"); err != nil || v != 1.5 {
		t.Errorf("Float(float32) = %g, %v", v, err)
	}
	if v, err := f.Bool("test.kh"); err != nil || !v {
		t.Errorf("Bool = %v, %v", v, err)
	}
	if v, err := f.Ints("test.km"); err != nil || !reflect.DeepEqual(v, []int64{1, 2, 255}) {
		t.Errorf("Ints([]uint8) = %v, %v", v, err)
	}
}

// validFile is a small well-formed file for the corruption tests.
func validFile(t testing.TB) []byte {
	var buf bytes.Buffer
	kvs := []KV{
		{Key: "general.architecture", Value: MustValue("llama")},
		{Key: "tokenizer.ggml.tokens", Value: MustValue([]string{"a", "b"})},
		{Key: "x.nested", Value: MustValue([]Value{MustValue([]uint8{1})})},
	}
	ts := []WriterTensor{{Name: "w", Type: TypeF32, Shape: []int{2, 2}, Data: make([]byte, 16)}}
	if err := Write(&buf, kvs, ts); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Every truncation of a valid file before the end of its last tensor is
// an error, never a panic (only the trailing padding may go).
func TestTruncatedFiles(t *testing.T) {
	full := validFile(t)
	f, err := Parse(full, "full")
	if err != nil {
		t.Fatal(err)
	}
	last := f.Tensors[len(f.Tensors)-1]
	end := int(f.DataOffset + last.Offset + last.Size)
	for n := 0; n < end; n++ {
		if _, err := Parse(full[:n], "cut"); err == nil {
			t.Fatalf("a file cut to %d of %d bytes parsed", n, len(full))
		}
	}
}

// le64 patches a uint64 into a copy of b at off.
func patch64(b []byte, off int, v uint64) []byte {
	c := append([]byte(nil), b...)
	binary.LittleEndian.PutUint64(c[off:], v)
	return c
}

func patch32(b []byte, off int, v uint32) []byte {
	c := append([]byte(nil), b...)
	binary.LittleEndian.PutUint32(c[off:], v)
	return c
}

// Corrupt counts, lengths and offsets are refused with an error that
// says what was wrong, before any allocation they would size.
func TestCorruptHeaders(t *testing.T) {
	full := validFile(t)
	// Layout of validFile: magic 0, version 4, n_tensors 8, n_kv 16, first
	// key length 24, key "general.architecture" 32..52, type 52, string
	// length 56, "llama" 64..69, second key length 69.
	tokensKey := 69
	tokensArrLen := tokensKey + 8 + len("tokenizer.ggml.tokens") + 4 + 4
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"magic", append([]byte("GGUX"), full[4:]...), "not a GGUF file"},
		{"version 1", patch32(full, 4, 1), "version 1"},
		{"version 4", patch32(full, 4, 4), "version 4 is not supported"},
		{"big endian", patch32(full, 4, 3<<24), "big-endian"},
		{"tensor count", patch64(full, 8, 1<<60), "tensor count"},
		{"kv count", patch64(full, 16, 1<<40), "metadata count"},
		{"key length", patch64(full, 24, 1<<50), "length"},
		{"value type", patch32(full, 52, 99), "unknown value type 99"},
		{"string length", patch64(full, 56, math.MaxUint64), "length"},
		{"array length", patch64(full, tokensArrLen, 1<<40), "array length"},
		{"array elem type", patch32(full, tokensArrLen-4, 77), "unknown value type 77"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(c.data, "bad.gguf")
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "bad.gguf") {
				t.Fatalf("error %v, want one naming the file and containing %q", err, c.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
}

// Tensor infos whose extents, type, offset or size do not fit the file.
func TestCorruptTensorInfos(t *testing.T) {
	build := func(mod func(*[]KV, *[]WriterTensor)) []byte {
		kvs := []KV{{Key: "general.architecture", Value: MustValue("llama")}}
		ts := []WriterTensor{{Name: "w", Type: TypeF32, Shape: []int{2, 32}, Data: make([]byte, 256)}}
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
		{"block multiple", patch32(patch64(base, ne0, 33), typ, uint32(TypeQ8_0)), "not a multiple of the block size 32"},
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
	if err := Write(&buf, nil, []WriterTensor{{Name: "w", Type: TypeF32, Shape: []int{1}, Data: make([]byte, 4)}, {Name: "w", Type: TypeF32, Shape: []int{1}, Data: make([]byte, 4)}}); err == nil {
		t.Error("Write accepted a duplicate tensor name")
	}
	// A second tensor named like the first, patched in by renaming "v".
	two := build(func(_ *[]KV, ts *[]WriterTensor) {
		*ts = append(*ts, WriterTensor{Name: "v", Type: TypeF32, Shape: []int{1}, Data: make([]byte, 4)})
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
	if err := Write(&buf, nil, []WriterTensor{{Name: "w", Type: TypeF32, Shape: []int{8}, Data: make([]byte, 32)}}); err != nil {
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
