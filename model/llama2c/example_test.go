//go:build unix

package llama2c_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/llama2c"
)

// A llama2.c checkpoint is opened as a model.Source, and model.FromSource
// makes the runnable model: a mapped float32 file costs only the fused
// WQKV copy. (The output assumes mmap, hence the unix build tag.)
func ExampleOpen() {
	cfg := model.Config{Dim: 16, HiddenDim: 24, NLayers: 2, NHeads: 4, NKVHeads: 2, VocabSize: 300, SeqLen: 8,
		RopeTheta: 10000, NormEps: 1e-5, SharedClassifier: true}
	synth, _ := model.Synthesize(cfg, 1)
	var buf bytes.Buffer
	if err := llama2c.WriteLegacy(&buf, synth); err != nil {
		fmt.Println(err)
		return
	}
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "tiny.bin")
	os.WriteFile(path, buf.Bytes(), 0o644)

	f, err := llama2c.Open(path, model.LoadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(f.Header().Format, f.Header().Size, "bytes")
	m, err := model.FromSource(f, model.LoadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	mapped, copied := m.MappedBytes()
	fmt.Println("mapped", mapped, "copied", copied) // copied: 2 layers × 32 rows × 16 × 4 bytes of WQKV
	fmt.Println("tied classifier:", m.Weights.Classifier == m.Weights.TokenEmbedding)
	// Output:
	// llama2.c legacy 35036 bytes
	// mapped 35036 copied 4096
	// tied classifier: true
}
