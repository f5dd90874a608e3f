package hf

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// OpenTokenizer reads a directory's tokenizer.json with the
// tokenizer_config.json beside it, the same as the file itself; a
// directory without one is an error naming the file.
func TestOpenTokenizer(t *testing.T) {
	dir := filepath.Join("..", "tokenizer", "testdata", "npm", "qwen3", "models")
	if _, err := os.Stat(filepath.Join(dir, TokenizerFile)); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but %v", err)
		}
		t.Skipf("skipping: %v (run scripts/fetch-test-tokenizers.sh)", err)
	}
	for _, p := range []string{dir, filepath.Join(dir, TokenizerFile)} {
		tok, err := OpenTokenizer(p)
		if err != nil {
			t.Fatal(err)
		}
		// transformers.js's recording (model/tokenizer/testdata/transformersjs.json):
		// Qwen3 adds no BOS, and "Hello world" is 9707 1879.
		ids, err := tok.Encode("Hello world", tok.AddBOS(), false)
		if err != nil || !slices.Equal(ids, []int{9707, 1879}) || tok.AddBOS() {
			t.Errorf("%s: ids %v (%v), add BOS %v", p, ids, err, tok.AddBOS())
		}
		if !strings.Contains(tok.ChatTemplate(), "<|im_start|>") {
			t.Errorf("%s: no chat template from %s", p, TokenizerConfigFile)
		}
	}
	if _, err := OpenTokenizer(t.TempDir()); err == nil || !strings.Contains(err.Error(), TokenizerFile) {
		t.Errorf("empty directory: %v", err)
	}
}
