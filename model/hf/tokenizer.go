package hf

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/stride-lm/stride/model/mapfile"
	"github.com/stride-lm/stride/model/tokenizer"
)

// The tokenizer files of a checkpoint directory.
const (
	TokenizerFile       = "tokenizer.json"
	TokenizerConfigFile = "tokenizer_config.json"
)

// maxTokenizerJSON caps a tokenizer.json read (Llama 3's is 9 MB), so a
// wrong file cannot exhaust memory.
const maxTokenizerJSON = 256 << 20

// OpenTokenizer opens the tokenizer at path: a checkpoint directory's
// tokenizer.json, or a tokenizer.json file itself, with the
// tokenizer_config.json beside it when there is one (its added tokens,
// add_bos_token and chat_template). It is gguf.OpenTokenizer's and
// llama2c.LoadTokenizer's Hugging Face twin.
func OpenTokenizer(path string) (*tokenizer.Tokenizer, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, TokenizerFile)
	}
	tj, err := readCapped(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	var cj []byte
	cpath := filepath.Join(filepath.Dir(path), TokenizerConfigFile)
	if _, err := os.Stat(cpath); err == nil {
		if cj, err = readCapped(cpath); err != nil {
			return nil, fmt.Errorf("tokenizer: %w", err)
		}
	}
	return tokenizer.FromJSON(tj, cj, path)
}

// readCapped reads the regular file at p, at most maxTokenizerJSON bytes
// (a FIFO or a device is refused at once).
func readCapped(p string) ([]byte, error) {
	f, _, err := mapfile.Open(p, false)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, err
		}
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxTokenizerJSON+1))
	if err == nil && len(b) > maxTokenizerJSON {
		err = fmt.Errorf("%s is larger than %d bytes", p, maxTokenizerJSON)
	}
	return b, err
}
