package gguf

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/tensor/kernels"
)

// llama_quantize.json is written by scripts/ggml-oracle/record.py: stock
// llama-quantize (llama.cpp c392e50) run on synthetic-k256-f32.gguf, with
// every tensor's type and sha256 and llama-perplexity's figure for each
// output file, and gguf-py's quantize() of a few vectors.
type llamaQuantizeOracle struct {
	Source string
	Files  []struct {
		Name, Command, Perplexity string
		Tensors                   []struct{ Name, Type, Sha256 string }
	}
	Quantize []struct{ Type, X, Blocks string }
}

func loadLlamaQuantize(t *testing.T) *llamaQuantizeOracle {
	t.Helper()
	b, err := os.ReadFile("testdata/llama_quantize.json")
	if err != nil {
		t.Fatal(err)
	}
	var o llamaQuantizeOracle
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatal(err)
	}
	if len(o.Files) == 0 || len(o.Quantize) == 0 {
		t.Fatal("oracle file has no records")
	}
	return &o
}

var typeByName = map[string]kernels.GGMLType{"Q4_1": kernels.TypeQ4_1, "Q5_0": kernels.TypeQ5_0, "Q5_1": kernels.TypeQ5_1}

// TestQuantizeMatchesGGUFPy: the Go quantizers give gguf-py's blocks
// (bit-exact with ggml's quantize_row_*_ref) byte for byte.
func TestQuantizeMatchesGGUFPy(t *testing.T) {
	for _, r := range loadLlamaQuantize(t).Quantize {
		raw, err := hex.DecodeString(r.X)
		if err != nil {
			t.Fatal(err)
		}
		x := make([]float32, len(raw)/4)
		for i := range x {
			x[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		got, err := QuantizeBlocks(nil, typeByName[r.Type], x)
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := hex.DecodeString(r.Blocks); !bytes.Equal(got, want) {
			t.Errorf("%s of %d values: blocks differ from gguf-py's\n got %x\nwant %x", r.Type, len(x), got, want)
		}
	}
}

// TestQuantizePureMatchesLlamaQuantize: QuantizePure of the shared F32
// file gives, tensor for tensor, the bytes `llama-quantize --pure` wrote
// (their sha256), and the same types.
func TestQuantizePureMatchesLlamaQuantize(t *testing.T) {
	o := loadLlamaQuantize(t)
	f, err := Open(sharedFile(t, "models/gguf/"+o.Source))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	for _, rec := range o.Files {
		if !strings.HasPrefix(rec.Name, "pure-") {
			continue
		}
		n++
		typ := typeByName[strings.TrimPrefix(rec.Name, "pure-")]
		_, ts, err := QuantizePure(f, typ)
		if err != nil {
			t.Fatal(err)
		}
		if len(ts) != len(rec.Tensors) {
			t.Fatalf("%s: %d tensors, llama-quantize wrote %d", rec.Name, len(ts), len(rec.Tensors))
		}
		// llama-quantize orders the tensors its own way: match by name.
		byName := map[string]WriterTensor{}
		for _, wt := range ts {
			byName[wt.Name] = wt
		}
		for _, want := range rec.Tensors {
			got, ok := byName[want.Name]
			if !ok {
				t.Errorf("%s: no tensor %s", rec.Name, want.Name)
				continue
			}
			sum := sha256.Sum256(got.Data)
			if got.Type.String() != want.Type || hex.EncodeToString(sum[:]) != want.Sha256 {
				t.Errorf("%s %s: %s sha256 %x; llama-quantize: %s %s", rec.Name, want.Name, got.Type, sum, want.Type, want.Sha256)
			}
		}
	}
	if n != 3 {
		t.Errorf("%d --pure files in the oracle, want 3 (Q4_1, Q5_0, Q5_1)", n)
	}
}

// TestQuantizePureErrors: types without a Go quantizer, and matrices that
// are not F32, are one clear error.
func TestQuantizePureErrors(t *testing.T) {
	f := writeParse(t, nil, []WriterTensor{{Name: "a.weight", Type: kernels.TypeF16, Shape: []int{1, 32}, Data: make([]byte, 64)}})
	if _, _, err := QuantizePure(f, kernels.TypeQ4_K); err == nil || !strings.Contains(err.Error(), "no quantizer for Q4_K") {
		t.Errorf("Q4_K: %v", err)
	}
	if _, _, err := QuantizePure(f, kernels.TypeQ5_0); err == nil || !strings.Contains(err.Error(), `tensor "a.weight" is F16, not F32`) {
		t.Errorf("F16 source: %v", err)
	}
	if _, err := QuantizeBlocks(nil, kernels.TypeQ5_1, make([]float32, 33)); err == nil || !strings.Contains(err.Error(), "33 values") {
		t.Errorf("33 values: %v", err)
	}
}

// writeParse writes a GGUF with Write and parses it back.
func writeParse(t *testing.T, kvs []KV, ts []WriterTensor) *File {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, kvs, ts); err != nil {
		t.Fatal(err)
	}
	f, err := Parse(buf.Bytes(), "test.gguf")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// QuantizePure is `llama-quantize --pure` for an F32 file, the tests'
// reference for WriteModel's block types: it returns f's
// metadata (general.file_type set to typ's) and its tensors, with every
// 2-D *.weight tensor quantized to typ by QuantizeBlocks and the others
// (norms) copied as stored. Write(w, kvs, tensors) then writes the file.
// A matrix that is not F32, or whose rows are not whole blocks, is an
// error naming it (llama-quantize would fall back to another type).
func QuantizePure(f *File, typ kernels.GGMLType) ([]KV, []WriterTensor, error) {
	ft, ok := fileType[typ]
	if !ok || typ == kernels.TypeF32 || typ == kernels.TypeF16 {
		return nil, nil, fmt.Errorf("gguf: no quantizer for %s (Q8_0, Q4_1, Q5_0 and Q5_1 have one)", typ)
	}
	kvs := make([]KV, 0, len(f.Metadata)+1)
	seen := false
	for _, kv := range f.Metadata {
		if kv.Key == "general.file_type" {
			kv.Value, seen = MustValue(ft), true
		}
		kvs = append(kvs, kv)
	}
	if !seen {
		kvs = append(kvs, KV{Key: "general.file_type", Value: MustValue(ft)})
	}
	ts := make([]WriterTensor, 0, len(f.Tensors))
	for _, ti := range f.Tensors {
		data, err := f.Data(ti)
		if err != nil {
			return nil, nil, err
		}
		wt := WriterTensor{Name: ti.Name, Type: ti.Type, Shape: ti.Shape, Data: data}
		if len(ti.Shape) == 2 && len(ti.Name) > 7 && ti.Name[len(ti.Name)-7:] == ".weight" {
			if ti.Type != kernels.TypeF32 {
				return nil, nil, fmt.Errorf("gguf: %s: tensor %q is %s, not F32", f.name, ti.Name, ti.Type)
			}
			if ti.Shape[1]%32 != 0 {
				return nil, nil, fmt.Errorf("gguf: %s: tensor %q rows of %d are not whole %s blocks", f.name, ti.Name, ti.Shape[1], typ)
			}
			x := make([]float32, len(data)/4)
			for i := range x {
				x[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
			}
			q, err := QuantizeBlocks(make([]byte, 0, len(x)/32*typ.BlockBytes()), typ, x)
			if err != nil {
				return nil, nil, err
			}
			wt.Type, wt.Data = typ, q
		}
		ts = append(ts, wt)
	}
	return kvs, ts, nil
}

// TestExportMatchesLlamaQuantize: WriteModel's block types, from the
// model the shared F32 file holds, are tensor for tensor the bytes
// `llama-quantize --pure` wrote (their sha256), and the same types: what
// infer export --format gguf --type q4_1|q5_0|q5_1 writes.
func TestExportMatchesLlamaQuantize(t *testing.T) {
	o := loadLlamaQuantize(t)
	src, err := OpenSource(sharedFile(t, "models/gguf/"+o.Source))
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.FromSource(src, model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	n := 0
	for _, rec := range o.Files {
		typ, ok := typeByName[strings.TrimPrefix(rec.Name, "pure-")]
		if !strings.HasPrefix(rec.Name, "pure-") || !ok {
			continue
		}
		n++
		var buf bytes.Buffer
		if err := WriteModel(&buf, m, ExportOptions{Type: typ}); err != nil {
			t.Fatal(err)
		}
		f, err := Parse(buf.Bytes(), rec.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range rec.Tensors {
			ti, ok := f.Tensor(want.Name)
			if !ok {
				t.Errorf("%s: no tensor %s", rec.Name, want.Name)
				continue
			}
			data, err := f.Data(ti)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(data)
			if ti.Type.String() != want.Type || hex.EncodeToString(sum[:]) != want.Sha256 {
				t.Errorf("%s %s: %s sha256 %x; llama-quantize: %s %s", rec.Name, want.Name, ti.Type, sum, want.Type, want.Sha256)
			}
		}
	}
	if n != 3 {
		t.Errorf("%d --pure files in the oracle, want 3 (Q4_1, Q5_0, Q5_1)", n)
	}
}
