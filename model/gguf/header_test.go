package gguf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stride-lm/stride/tensor/kernels"
)

// validFile is a small well-formed file for the corruption tests.
func validFile(t testing.TB) []byte {
	var buf bytes.Buffer
	kvs := []KV{
		{Key: "general.architecture", Value: MustValue("llama")},
		{Key: "tokenizer.ggml.tokens", Value: MustValue([]string{"a", "b"})},
		{Key: "x.nested", Value: MustValue([]Value{MustValue([]uint8{1})})},
	}
	ts := []WriterTensor{{Name: "w", Type: kernels.TypeF32, Shape: []int{2, 2}, Data: make([]byte, 16)}}
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

// rawKVs is a GGUF v3 file with no tensors and the given raw key/value
// entries (each a key already encoded with its type tag and value), for
// values the writer refuses to produce.
func rawKVs(entries ...[]byte) []byte {
	b := []byte(Magic)
	b = binary.LittleEndian.AppendUint32(b, 3)
	b = binary.LittleEndian.AppendUint64(b, 0)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(entries)))
	for _, e := range entries {
		b = append(b, e...)
	}
	return b
}

// rawKV encodes key, the value type tag t and the value's bytes.
func rawKV(key string, t ValueType, value []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(key)))
	b = append(b, key...)
	b = binary.LittleEndian.AppendUint32(b, uint32(t))
	return append(b, value...)
}

// rawArray encodes an array header (element type, length) and its body.
func rawArray(et ValueType, n uint64, body []byte) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(et))
	b = binary.LittleEndian.AppendUint64(b, n)
	return append(b, body...)
}

// Malformed values and keys are refused with one line saying what was
// wrong and where.
func TestCorruptValues(t *testing.T) {
	nested := rawArray(TypeUint8, 0, nil)
	for i := 0; i < maxNesting; i++ {
		nested = rawArray(TypeArray, 1, nested)
	}
	u32 := binary.LittleEndian.AppendUint32(nil, 64)
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"bool byte", rawKVs(rawKV("k", TypeBool, []byte{2})), `metadata key "k": bool byte is 2, not 0 or 1`},
		{"bool array byte", rawKVs(rawKV("k", TypeArray, rawArray(TypeBool, 2, []byte{1, 3}))), "array element 1: bool byte is 3"},
		{"nesting", rawKVs(rawKV("k", TypeArray, nested)), fmt.Sprintf("arrays nested deeper than %d", maxNesting)},
		{"mixed nested arrays", rawKVs(rawKV("k", TypeArray, rawArray(TypeArray, 2,
			append(rawArray(TypeUint8, 0, nil), rawArray(TypeInt8, 0, nil)...)))), "array element 1 holds int8, element 0 uint8"},
		{"duplicate key", rawKVs(rawKV("k", TypeUint8, []byte{1}), rawKV("k", TypeUint8, []byte{2})), `metadata key "k" appears twice`},
		{"empty key", rawKVs(rawKV("", TypeUint8, []byte{1}), rawKV("k", TypeUint32, u32)), "metadata key 0: empty name"},
		{"key not UTF-8", rawKVs(rawKV("k\xff", TypeUint8, []byte{1})), `metadata key 0: name "k\xff" is not valid UTF-8`},
		{"alignment type", rawKVs(rawKV(KeyAlignment, TypeUint64, append(u32, 0, 0, 0, 0))), KeyAlignment + " is uint64, not uint32"},
		{"alignment value", rawKVs(rawKV(KeyAlignment, TypeUint32, binary.LittleEndian.AppendUint32(nil, 48))), KeyAlignment + " = 48 is not a power of two"},
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
	// The same bytes with a valid value parse, so each case fails for the
	// reason it names.
	if _, err := Parse(rawKVs(rawKV("k", TypeBool, []byte{1}), rawKV(KeyAlignment, TypeUint32, u32)), "good.gguf"); err != nil {
		t.Errorf("well-formed raw file: %v", err)
	}
}
