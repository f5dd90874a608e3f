package checkpoint

import (
	"fmt"

	"github.com/stride-lm/stride/model/gguf"
	"github.com/stride-lm/stride/model/tokenizer"
)

// GGUFVocab sets the vocabulary a GGUF export embeds (llama.cpp loads no
// model file without one) for a model of vocabSize ids: the tokenizer.*
// keys of tokPath when it is a GGUF, copied as they are (rebuilt from a
// codec's pieces and scores, a byte-level BPE vocabulary would become a
// SentencePiece one without its merges, pre-tokenizer or special token
// ids); else, when tokPath is another tokenizer file, the pieces and
// scores of tok, the codec opened from it; else the tokenizer keys (and
// general.name) of ckptPath when it is a GGUF being re-exported.
func GGUFVocab(opts *gguf.ExportOptions, tokPath, ckptPath string, tok tokenizer.Codec, vocabSize int) error {
	if tokPath != "" && isGGUF(tokPath) {
		kvs, err := ggufTokenizerKV(tokPath, vocabSize)
		opts.TokenizerKV = kvs
		return err
	}
	if t, ok := tok.(*tokenizer.Tokenizer); ok && tokPath != "" {
		n := t.VocabSize()
		pieces, scores := make([]string, n), make([]float32, n)
		for i := range pieces {
			pieces[i], scores[i] = t.Piece(i), t.Score(i)
		}
		v, err := gguf.VocabFromLlama2c(pieces, scores)
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		opts.Vocab = v
		return nil
	}
	if ckptPath != "" && isGGUF(ckptPath) {
		f, err := gguf.Open(ckptPath)
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		defer f.Close()
		opts.TokenizerKV = f.Metadata
		if name, err := f.String("general.name"); err == nil {
			opts.Name = name
		}
		return nil
	}
	return fmt.Errorf("export: --format gguf needs a vocabulary: give --tokenizer (a llama2.c tokenizer.bin) or a GGUF --checkpoint")
}

// ggufTokenizerKV is the metadata of the GGUF at path (WriteModel keeps
// its tokenizer.* keys), after checking that its vocabulary has one token
// per row of the model's embedding, as llama.cpp's loader requires.
func ggufTokenizerKV(path string, vocabSize int) ([]gguf.KV, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	defer f.Close()
	tokens, err := f.Strings("tokenizer.ggml.tokens")
	if err != nil {
		return nil, fmt.Errorf("export: --tokenizer %s: %w", path, err)
	}
	if len(tokens) != vocabSize {
		return nil, fmt.Errorf("export: --tokenizer %s has %d tokens, the model's vocab_size is %d", path, len(tokens), vocabSize)
	}
	return f.Metadata, nil
}

// isGGUF reports whether the file at path is a GGUF file.
func isGGUF(path string) bool {
	kind, err := Sniff(path)
	return err == nil && kind == GGUF
}
