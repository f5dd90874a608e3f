package gguf

import (
	"bytes"
	"encoding/binary"
	"math"
	"strings"
	"testing"
)

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
