package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The Q4_1, Q5_0 and Q5_1 figures: llama.cpp's perplexity of
// `llama-quantize --pure` files, recorded by scripts/ggml-oracle/record.py
// with the files' tensor hashes. The files are not fixtures; the test
// makes them with infer export --format gguf --type q4_1|q5_0|q5_1 from
// the shared F32 file (its tensors are llama-quantize's byte for byte,
// which model/gguf's TestExportMatchesLlamaQuantize checks against the
// same hashes).
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
	n := 0
	for _, rec := range o.Files {
		typ := strings.TrimPrefix(rec.Name, "pure-")
		if !strings.HasPrefix(rec.Name, "pure-") || (typ != "Q4_1" && typ != "Q5_0" && typ != "Q5_1") {
			continue
		}
		n++
		t.Run(rec.Name, func(t *testing.T) {
			want := finalRE.FindStringSubmatch(rec.Perplexity)
			if want == nil {
				t.Fatalf("oracle line %q", rec.Perplexity)
			}
			path := filepath.Join(t.TempDir(), rec.Name+".gguf")
			if code, _, errs := cli(t, "export", "--checkpoint", filepath.Join(models, "gguf", o.Source),
				"--format", "gguf", "--type", strings.ToLower(typ), "--out", path); code != 0 {
				t.Fatalf("export: exit %d: %s", code, errs)
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
