package safetensors

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// fuzzSeeds are FuzzParseHeader's seeds, also committed under
// testdata/fuzz/FuzzParseHeader (TestFuzzCorpusCurrent keeps them equal;
// STRIDE_WRITE_FUZZ_CORPUS=1 rewrites the directory).
func fuzzSeeds(t testing.TB) map[string][]byte {
	return map[string][]byte{
		"small":    small(t),
		"scalar":   header(`{"s":{"dtype":"F64","shape":[],"data_offsets":[0,8]}}   `, 8),
		"zero":     header(`{"z":{"dtype":"BF16","shape":[4,0],"data_offsets":[0,0]},"__metadata__":{}}`, 0),
		"overlap":  header(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}`, 3),
		"metadata": header(`{"__metadata__":{"format":"pt"},"x":{"dtype":"I64","shape":[1,1],"data_offsets":[0,8]}}`, 8),
	}
}

// FuzzParseHeader feeds arbitrary bytes to the header parser. It must
// never panic, and a header it accepts must describe tensors that lie
// inside the file, tile its buffer, and survive a rewrite: writing the
// tensors again and parsing that gives the same entries.
func FuzzParseHeader(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := ParseHeader(data)
		if err != nil {
			return
		}
		var ts []WriterTensor
		var covered int64
		for _, ti := range h.Tensors {
			if ti.Begin < h.DataOffset || ti.End > int64(len(data)) || ti.End-ti.Begin != ti.Elements()*int64(ti.DType.Size()) {
				t.Fatalf("tensor %+v outside the file or of the wrong extent", ti)
			}
			covered += ti.End - ti.Begin
			ts = append(ts, WriterTensor{Name: ti.Name, DType: ti.DType, Shape: ti.Shape, Data: data[ti.Begin:ti.End]})
		}
		if covered != int64(len(data))-h.DataOffset {
			t.Fatalf("tensors cover %d of %d buffer bytes", covered, int64(len(data))-h.DataOffset)
		}
		var buf bytes.Buffer
		if err := Write(&buf, ts, h.Metadata); err != nil {
			t.Fatal(err)
		}
		h2, err := ParseHeader(buf.Bytes())
		if err != nil {
			t.Fatalf("rewritten file: %v", err)
		}
		if len(h2.Tensors) != len(h.Tensors) {
			t.Fatalf("rewrite has %d tensors, want %d", len(h2.Tensors), len(h.Tensors))
		}
		for i, ti := range h2.Tensors {
			a := h.Tensors[i]
			if ti.Name != a.Name || ti.DType != a.DType || fmt.Sprint(ti.Shape) != fmt.Sprint(a.Shape) ||
				!bytes.Equal(buf.Bytes()[ti.Begin:ti.End], data[a.Begin:a.End]) {
				t.Fatalf("tensor %d changed in the rewrite: %+v vs %+v", i, ti, a)
			}
		}
	})
}

// The committed seed corpus is the one fuzzSeeds builds.
func TestFuzzCorpusCurrent(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzParseHeader")
	seeds := fuzzSeeds(t)
	if os.Getenv("STRIDE_WRITE_FUZZ_CORPUS") == "1" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, data := range seeds {
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data)
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name, data := range seeds {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("seed %s: %v (STRIDE_WRITE_FUZZ_CORPUS=1 writes it)", name, err)
		}
		if want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data); string(raw) != want {
			t.Errorf("seed %s is stale (STRIDE_WRITE_FUZZ_CORPUS=1 rewrites it)", name)
		}
	}
}

// ParseHeader validates a whole file held in memory (data) and returns
// its header (ReadHeader over the bytes).
func ParseHeader(data []byte) (*Header, error) {
	return ReadHeader(bytes.NewReader(data), int64(len(data)))
}
