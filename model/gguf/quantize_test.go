package gguf

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"

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
