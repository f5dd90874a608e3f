package gguf

import (
	"bytes"
	"os"
	"testing"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/llama2c"
	"github.com/stride-lm/stride/tensor/kernels"
)

// stories260K loads the llama2.c checkpoint and its tokenizer's GGUF vocab.
func stories260K(t *testing.T) (*model.Model, *Vocab) {
	t.Helper()
	src, err := llama2c.Open(sharedFile(t, "models/stories260K.bin"), model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.FromSource(src, model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	tok, err := llama2c.LoadTokenizer(sharedFile(t, "models/tok512.bin"), 512)
	if err != nil {
		t.Fatal(err)
	}
	pieces, scores := make([]string, 512), make([]float32, 512)
	for i := range pieces {
		pieces[i], scores[i] = tok.Piece(i), tok.Score(i)
	}
	v, err := VocabFromLlama2c(pieces, scores)
	if err != nil {
		t.Fatal(err)
	}
	return m, v
}

// Exporting stories260K.bin with tok512.bin as F32 gives, byte for byte,
// the file llama.cpp's own llama-convert-llama2c-to-ggml wrote.
func TestExportF32IsLlamaCppsConversion(t *testing.T) {
	want, err := os.ReadFile(sharedFile(t, "models/gguf/stories260K-f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	m, v := stories260K(t)
	var buf bytes.Buffer
	if err := WriteModel(&buf, m, ExportOptions{Type: kernels.TypeF32, Vocab: v}); err != nil {
		t.Fatal(err)
	}
	if got := buf.Bytes(); !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Fatalf("export differs from llama.cpp's conversion at byte %d (lengths %d, %d)", i, len(got), len(want))
	}
}

// Q8_0 export quantizes as llama-quantize does: every tensor of its
// stories260K Q8_0 file (Q8_0 blocks, the F16 fallback of ffn_down's 172
// columns, F32 norms) has the same type and the same bytes.
func TestExportQ8_0IsLlamaQuantize(t *testing.T) {
	ref, err := Open(sharedFile(t, "models/gguf/stories260K-q8_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	m, v := stories260K(t)
	var buf bytes.Buffer
	if err := WriteModel(&buf, m, ExportOptions{Type: kernels.TypeQ8_0, Vocab: v}); err != nil {
		t.Fatal(err)
	}
	got, err := Parse(buf.Bytes(), "export")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Tensors) != len(ref.Tensors) {
		t.Fatalf("%d tensors, llama-quantize wrote %d", len(got.Tensors), len(ref.Tensors))
	}
	for _, rt := range ref.Tensors {
		gt, ok := got.Tensor(rt.Name)
		if !ok {
			t.Errorf("no %s", rt.Name)
			continue
		}
		a, _ := got.Data(gt)
		b, _ := ref.Data(rt)
		if gt.Type != rt.Type || !bytes.Equal(a, b) {
			t.Errorf("%s: %s, bytes equal %v; llama-quantize: %s", rt.Name, gt.Type, bytes.Equal(a, b), rt.Type)
		}
	}
	for _, k := range []string{"general.file_type", "general.quantization_version"} {
		a, _ := got.Uint(k)
		b, _ := ref.Uint(k)
		if a != b {
			t.Errorf("%s = %d, llama-quantize wrote %d", k, a, b)
		}
	}
}

// A written F16 or Q8_0 file reads back as the model it was written from:
// re-exporting what was read gives the same bytes again, and it runs.
func TestExportRoundTrip(t *testing.T) {
	m, v := stories260K(t)
	for _, typ := range []kernels.GGMLType{kernels.TypeF32, kernels.TypeF16, kernels.TypeQ8_0} {
		var first bytes.Buffer
		if err := WriteModel(&first, m, ExportOptions{Type: typ, Vocab: v, Name: "stories260K"}); err != nil {
			t.Fatal(err)
		}
		f, err := Parse(first.Bytes(), "first")
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewSource(f)
		if err != nil {
			t.Fatal(err)
		}
		back, err := model.FromSource(s, model.LoadOptions{AsStored: true})
		if err != nil {
			t.Fatal(err)
		}
		var second bytes.Buffer
		if err := WriteModel(&second, back, ExportOptions{Type: typ, Vocab: v, Name: "stories260K"}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first.Bytes(), second.Bytes()) {
			t.Errorf("%s: writing the file read back changed it", typ)
		}
		if name, _ := f.String("general.name"); name != "stories260K" {
			t.Errorf("general.name %q", name)
		}
		back.Close()
	}
}
