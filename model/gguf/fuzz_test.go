package gguf

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/stride-lm/stride/tensor/kernels"
	"github.com/stride-lm/stride/tensor/testfixture"
)

// fuzzSeeds are the seed inputs of FuzzParse, also committed under
// testdata/fuzz/FuzzParse (TestFuzzCorpusCurrent keeps the two equal;
// STRIDE_WRITE_FUZZ_CORPUS=1 rewrites the directory).
func fuzzSeeds(t testing.TB) map[string][]byte {
	seeds := map[string][]byte{"small": validFile(t)}
	write := func(name string, kvs []KV, ts []WriterTensor) {
		var buf bytes.Buffer
		if err := Write(&buf, kvs, ts); err != nil {
			t.Fatal(err)
		}
		seeds[name] = buf.Bytes()
	}
	write("every-type", everyType(), []WriterTensor{
		{Name: "q", Type: kernels.TypeQ8_0, Shape: []int{2, 32}, Data: make([]byte, 68)},
		{Name: "k", Type: kernels.TypeQ4_K, Shape: []int{256}, Data: make([]byte, 144)},
	})
	write("vocab-only", []KV{
		{Key: "general.architecture", Value: MustValue("llama")},
		{Key: "tokenizer.ggml.model", Value: MustValue("llama")},
		{Key: "tokenizer.ggml.tokens", Value: MustValue([]string{"<unk>", "<s>", "</s>", "▁a"})},
		{Key: "tokenizer.ggml.scores", Value: MustValue([]float32{0, 0, 0, -1})},
		{Key: "tokenizer.ggml.token_type", Value: MustValue([]int32{2, 3, 3, 1})},
	}, nil)
	v2 := append([]byte(nil), seeds["small"]...)
	v2[4] = 2
	seeds["version2"] = v2
	return seeds
}

// FuzzParse feeds arbitrary bytes to the parser. It must never panic, and
// a file it accepts must have readable tensors and survive a rewrite:
// writing what was read and reading it again gives the same bytes again.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := Parse(data, "fuzz")
		if err != nil {
			return
		}
		var ts []WriterTensor
		for _, ti := range g.Tensors {
			d, err := g.Data(ti)
			if !ti.Type.Known() {
				if err == nil {
					t.Fatalf("tensor %q of unknown type has data", ti.Name)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(d)) != ti.Size {
				t.Fatalf("tensor %q: %d bytes, size %d", ti.Name, len(d), ti.Size)
			}
			ts = append(ts, WriterTensor{Name: ti.Name, Type: ti.Type, Shape: ti.Shape, Data: d})
		}
		var once bytes.Buffer
		if err := Write(&once, g.Metadata, ts); err != nil {
			t.Fatalf("rewrite of an accepted file failed: %v", err)
		}
		g2, err := Parse(once.Bytes(), "rewrite")
		if err != nil {
			t.Fatalf("rewritten file does not parse: %v", err)
		}
		ts = ts[:0]
		for _, ti := range g2.Tensors {
			d, _ := g2.Data(ti)
			ts = append(ts, WriterTensor{Name: ti.Name, Type: ti.Type, Shape: ti.Shape, Data: d})
		}
		var twice bytes.Buffer
		if err := Write(&twice, g2.Metadata, ts); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(once.Bytes(), twice.Bytes()) {
			t.Fatal("writing a rewritten file changed it")
		}
	})
}

// The committed seed corpus is exactly what fuzzSeeds generates.
func TestFuzzCorpusCurrent(t *testing.T) {
	want := map[string][]byte{}
	for name, b := range fuzzSeeds(t) {
		want[name] = testfixture.CorpusEntry(b)
	}
	testfixture.CheckCorpus(t, filepath.Join("testdata", "fuzz", "FuzzParse"), want, "TestFuzzCorpusCurrent")
}
