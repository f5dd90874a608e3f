package checkpoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stride-lm/stride/model/gguf"
	"github.com/stride-lm/stride/model/tokenizer"
)

// TestGGUFVocabNeedsOne: with no GGUF to copy the tokenizer keys from
// and no llama2.c tokenizer to rebuild them from (no --tokenizer, or one
// whose codec has no pieces and scores, beside a checkpoint that is not a
// GGUF), GGUFVocab refuses in one line naming the flags, and sets nothing.
func TestGGUFVocabNeedsOne(t *testing.T) {
	dir := t.TempDir()
	notGGUF := filepath.Join(dir, "model.bin")
	if err := os.WriteFile(notGGUF, []byte("not a gguf file"), 0o644); err != nil {
		t.Fatal(err)
	}
	codec, err := tokenizer.NewBytes(259)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, tok, ckpt string }{
		{"nothing given", "", ""},
		{"a checkpoint that is not a GGUF", "", notGGUF},
		{"a tokenizer file without pieces", notGGUF, notGGUF},
	} {
		var opts gguf.ExportOptions
		err := GGUFVocab(&opts, c.tok, c.ckpt, codec, 259)
		if err == nil || !strings.Contains(err.Error(), "needs a vocabulary") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line saying a vocabulary is needed", c.name, err)
		}
		if opts.Vocab != nil || opts.TokenizerKV != nil {
			t.Errorf("%s: options set anyway: %+v", c.name, opts)
		}
	}
}
