package gguf

import (
	"bytes"
	"encoding/binary"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/stride-lm/stride/tensor/kernels"
)

// setKVs replaces (or adds) one metadata key of a tinyModel.
func setKVs(key string, v any) func(*[]KV, *[]WriterTensor) {
	return func(kvs *[]KV, _ *[]WriterTensor) {
		for i := range *kvs {
			if (*kvs)[i].Key == key {
				(*kvs)[i].Value = MustValue(v)
				return
			}
		}
		*kvs = append(*kvs, KV{Key: key, Value: MustValue(v)})
	}
}

// Issue 25 rows 9 to 11: each file below is well formed, and each is
// refused with the key or tensor named.
func TestSourceStrict(t *testing.T) {
	addTensor := func(name string, shape ...int) func(*[]KV, *[]WriterTensor) {
		return func(_ *[]KV, ts *[]WriterTensor) {
			n := 1
			for _, d := range shape {
				n *= d
			}
			*ts = append(*ts, WriterTensor{Name: name, Type: kernels.TypeF32, Shape: shape, Data: make([]byte, 4*n)})
		}
	}
	tokens := func(n int) []string {
		s := make([]string, n)
		for i := range s {
			s[i] = string(rune('a' + i))
		}
		return s
	}
	cases := []struct {
		name string
		mod  func(*[]KV, *[]WriterTensor)
		want string
	}{
		{"layer past block_count", addTensor("blk.2.attn_norm.weight", 16), `tensor "blk.2.attn_norm.weight" belongs to layer 2, but llama.block_count is 2`},
		{"block_count too small", setKVs("llama.block_count", uint32(1)), `tensor "blk.1.attn_norm.weight" belongs to layer 1, but llama.block_count is 1`},
		{"unused tensor", addTensor("extra.weight", 4), `tensor "extra.weight" is not used`},
		{"bias in one layer only", addTensor("blk.1.attn_q.bias", 16), `tensor "blk.1.attn_q.bias" is not used`},
		{"vocab larger than embedding", setKVs("tokenizer.ggml.tokens", tokens(11)), "tokenizer.ggml.tokens has 11 tokens but token_embd.weight has 10 rows"},
		{"vocab smaller than embedding", setKVs("tokenizer.ggml.tokens", tokens(9)), "tokenizer.ggml.tokens has 9 tokens but token_embd.weight has 10 rows"},
		{"vocab_size key", setKVs("llama.vocab_size", uint32(12)), "llama.vocab_size = 12 but token_embd.weight has 10 rows"},
		{"scale_linear as a string", setKVs("llama.rope.scale_linear", "2"), `"llama.rope.scale_linear" is string`},
		{"key_length as a string", setKVs("llama.attention.key_length", "4"), `"llama.attention.key_length" is string`},
		{"misspelled key", setKVs("llama.rope.frequency_base", float32(1e6)), `metadata key "llama.rope.frequency_base" is not a key llama.cpp defines`},
		{"misspelled epsilon", setKVs("llama.attention.rms_norm_epsilon", float32(1e-5)), `"llama.attention.rms_norm_epsilon"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := OpenSource(tinyModel(t, "llama", c.mod))
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v, want one line containing %q", err, c.want)
			}
		})
	}
	// The same keys with the right types and a matching vocabulary load.
	ok := func(kvs *[]KV, ts *[]WriterTensor) {
		setKVs("tokenizer.ggml.tokens", tokens(10))(kvs, ts)
		setKVs("llama.vocab_size", uint32(10))(kvs, ts)
		setKVs("llama.rope.scale_linear", float32(1))(kvs, ts)
		setKVs("llama.attention.key_length", uint32(4))(kvs, ts)
		// A key outside rope.* and attention.* that llama.cpp does not
		// (yet) define is metadata a newer converter may add: ignored,
		// as llama.cpp ignores it.
		setKVs("llama.some_future_feature", uint32(1))(kvs, ts)
	}
	s, err := OpenSource(tinyModel(t, "llama", ok))
	if err != nil {
		t.Fatalf("a consistent file: %v", err)
	}
	s.Close()
}

// rawTensorFile writes a GGUF by hand with two F32 tensors of n floats at
// the given data offsets, which the writer would never produce.
func rawTensorFile(t *testing.T, n uint64, offA, offB uint64, typeB kernels.GGMLType) []byte {
	t.Helper()
	var b bytes.Buffer
	le := binary.LittleEndian
	b.WriteString(Magic)
	binary.Write(&b, le, uint32(3))
	binary.Write(&b, le, uint64(2)) // tensors
	binary.Write(&b, le, uint64(0)) // metadata
	for i, ti := range []struct {
		off uint64
		typ kernels.GGMLType
	}{{offA, kernels.TypeF32}, {offB, typeB}} {
		name := []string{"a", "b"}[i]
		binary.Write(&b, le, uint64(len(name)))
		b.WriteString(name)
		binary.Write(&b, le, uint32(1))
		binary.Write(&b, le, n)
		binary.Write(&b, le, uint32(ti.typ))
		binary.Write(&b, le, ti.off)
	}
	for b.Len()%32 != 0 {
		b.WriteByte(0)
	}
	b.Write(make([]byte, 4*n*2))
	return b.Bytes()
}

// Issue 25 row 8: overlapping ranges, a range past the file, and a type
// whose byte size does not fit the bytes stored for it.
func TestParseTensorRanges(t *testing.T) {
	if _, err := Parse(rawTensorFile(t, 8, 0, 32, kernels.TypeF32), "ok.gguf"); err != nil {
		t.Fatalf("disjoint tensors: %v", err)
	}
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"overlap", rawTensorFile(t, 8, 0, 0, kernels.TypeF32), `overlaps tensor`},
		{"partial overlap", rawTensorFile(t, 16, 0, 32, kernels.TypeF32), `tensor "a" (F32, 64 bytes at data offset 0) overlaps tensor "b" at data offset 32`},
		{"past the file", rawTensorFile(t, 8, 0, 64, kernels.TypeF32), `tensor "b" (F32, 32 bytes at data offset 64) ends at byte`},
		// b's 8 elements as F64 claim 64 bytes: more than were stored.
		{"type larger than its bytes", rawTensorFile(t, 8, 32, 0, kernels.TypeF64), `tensor "b" (F64, 64 bytes at data offset 0) overlaps tensor "a"`},
	} {
		_, err := Parse(c.data, "bad.gguf")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// Issue 25 row 13: an array whose declared count the file cannot hold is
// refused before its slice is allocated, naming the key; and the worst
// amplification a file can cause (arrays of empty arrays, of empty
// strings) stays a small multiple of its size.
func TestMetadataCountsAgainstFileSize(t *testing.T) {
	le := binary.LittleEndian
	header := func(b *bytes.Buffer, key string, et ValueType, n uint64) {
		b.WriteString(Magic)
		binary.Write(b, le, uint32(3))
		binary.Write(b, le, uint64(0))
		binary.Write(b, le, uint64(1))
		binary.Write(b, le, uint64(len(key)))
		b.WriteString(key)
		binary.Write(b, le, uint32(TypeArray))
		binary.Write(b, le, uint32(et))
		binary.Write(b, le, n)
	}
	for _, et := range []ValueType{TypeString, TypeArray, TypeUint64} {
		var b bytes.Buffer
		header(&b, "tokenizer.ggml.tokens", et, 1<<40)
		b.Write(make([]byte, 64))
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Parse(b.Bytes(), "huge.gguf")
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), "tokenizer.ggml.tokens") || !strings.Contains(err.Error(), "cannot fit") {
			t.Errorf("%s count 2^40: %v, want the key named and the count refused", et, err)
		}
		if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
			t.Errorf("%s count 2^40: allocated %d bytes before refusing", et, d)
		}
	}
	const n = 1 << 16
	for _, c := range []struct {
		et   ValueType
		elem []byte
	}{
		{TypeArray, append(le.AppendUint32(nil, uint32(TypeString)), make([]byte, 8)...)},
		{TypeString, make([]byte, 8)},
	} {
		var b bytes.Buffer
		header(&b, "general.junk", c.et, n)
		b.Write(bytes.Repeat(c.elem, n))
		// TotalAlloc is process-wide: a goroutine of an earlier test (or
		// the runtime) allocating meanwhile inflates one reading, never
		// deflates it, so the least of three readings is Parse's own.
		d := uint64(math.MaxUint64)
		for range 3 {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			f, err := Parse(b.Bytes(), "amplify.gguf")
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			d = min(d, after.TotalAlloc-before.TotalAlloc)
			runtime.KeepAlive(f)
		}
		// Parse keeps each element as a Go value: about 6× the file's
		// bytes for these 8-byte elements when measured alone. The same
		// check read 15× inside CI's full `go test ./...` run, a cause
		// not isolated (TotalAlloc is process-wide), so the bound is 32×:
		// still far below the amplification this guards against, an
		// allocation sized by a declared count rather than by the bytes.
		if d > uint64(32*b.Len()) {
			t.Errorf("array of %s: %d bytes allocated for a %d-byte file, more than 32×", c.et, d, b.Len())
		}
	}
}
