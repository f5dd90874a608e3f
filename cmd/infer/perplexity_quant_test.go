package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stride-lm/stride/model/gguf"
	"github.com/stride-lm/stride/tensor/kernels"
)

// The Q4_1, Q5_0 and Q5_1 figures: llama.cpp's perplexity of
// `llama-quantize --pure` files, recorded by scripts/ggml-oracle/record.py
// with the files' tensor hashes. The files are not fixtures; the test
// makes them with gguf.QuantizePure from the shared F32 file (its tensors
// are llama-quantize's byte for byte, which model/gguf's
// TestQuantizePureMatchesLlamaQuantize checks against the same hashes).
func TestPerplexityMatchesLlamaCppPureQuants(t *testing.T) {
	models := sharedModels(t)
	raw, err := os.ReadFile("../../model/gguf/testdata/llama_quantize.json")
	if err != nil {
		t.Fatal(err)
	}
	var o struct {
		Source string
		Files  []struct{ Name, Perplexity string }
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		t.Fatal(err)
	}
	src, err := gguf.Open(filepath.Join(models, "gguf", o.Source))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	types := map[string]kernels.GGMLType{"Q4_1": kernels.TypeQ4_1, "Q5_0": kernels.TypeQ5_0, "Q5_1": kernels.TypeQ5_1}
	n := 0
	for _, rec := range o.Files {
		typ, ok := types[strings.TrimPrefix(rec.Name, "pure-")]
		if !strings.HasPrefix(rec.Name, "pure-") || !ok {
			continue
		}
		n++
		t.Run(rec.Name, func(t *testing.T) {
			want := finalRE.FindStringSubmatch(rec.Perplexity)
			if want == nil {
				t.Fatalf("oracle line %q", rec.Perplexity)
			}
			kvs, ts, err := gguf.QuantizePure(src, typ)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), rec.Name+".gguf")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := gguf.Write(f, kvs, ts); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			code, out, errs := cli(t, "perplexity", "--kv-dtype", "f16", "--checkpoint", path,
				"--tokenizer", filepath.Join(models, "tok512.bin"), "--ctx", "128",
				filepath.Join(models, "golden", "stories260K.sampled-text.txt"))
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			got := finalRE.FindStringSubmatch(lines[len(lines)-1])
			if got == nil {
				t.Fatalf("last line %q", lines[len(lines)-1])
			}
			ppl, _ := strconv.ParseFloat(got[1], 64)
			se, _ := strconv.ParseFloat(got[2], 64)
			wppl, _ := strconv.ParseFloat(want[1], 64)
			wse, _ := strconv.ParseFloat(want[2], 64)
			if rel := math.Abs(ppl-wppl) / wppl; rel > 0.0005 {
				t.Errorf("PPL %.4f, llama.cpp %.4f: %.3f%% apart (bound 0.05%%)", ppl, wppl, 100*rel)
			}
			if rel := math.Abs(se-wse) / wse; rel > 0.01 {
				t.Errorf("± %.5f, llama.cpp %.5f", se, wse)
			}
		})
	}
	if n != 3 {
		t.Errorf("%d --pure records, want 3", n)
	}
}
