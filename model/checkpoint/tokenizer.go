package checkpoint

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/stride-lm/stride/model/checkpoint/stories260k"
	"github.com/stride-lm/stride/model/gguf"
	"github.com/stride-lm/stride/model/hf"
	"github.com/stride-lm/stride/model/llama2c"
	"github.com/stride-lm/stride/model/tokenizer"
)

// OpenTokenizer opens a tokenizer file of any supported format, by what
// it is (Sniff): a GGUF file's vocabulary, a tokenizer.json or a
// directory holding one (hf.OpenTokenizer), else a llama2.c tokenizer.bin
// read to its end. Open uses the checkpoint's own tokenizer instead; this
// is for a tokenizer on its own (infer tokenize).
func OpenTokenizer(path string) (*tokenizer.Tokenizer, error) {
	kind, err := Sniff(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	switch kind {
	case GGUF:
		return gguf.OpenTokenizer(path)
	case Dir, JSON:
		return hf.OpenTokenizer(path)
	}
	return llama2c.LoadTokenizerFile(path)
}

// ErrNoTokenizer is what TokenizerOf's error wraps for a checkpoint that
// carries no tokenizer (a llama2.c checkpoint).
var ErrNoTokenizer = errors.New("carries no tokenizer")

// TokenizerOf opens the tokenizer the checkpoint at path carries, without
// its weights, for a front end that needs the vocabulary alone (infer
// tokenize): a GGUF's, a Hugging Face directory's tokenizer.json, or the
// tokenizer file path itself (OpenTokenizer). A llama2.c checkpoint
// carries none, and its error wraps ErrNoTokenizer.
func TokenizerOf(path string) (*tokenizer.Tokenizer, error) {
	kind, err := Sniff(path)
	if err != nil {
		return nil, err
	}
	if kind == Llama2c {
		return nil, fmt.Errorf("checkpoint %s is a llama2.c checkpoint, which %w", path, ErrNoTokenizer)
	}
	return OpenTokenizer(path)
}

// ownTokenizer is the tokenizer the checkpoint at path carries, or ""
// when it carries none: a GGUF file's, a Hugging Face directory's
// tokenizer.json.
func ownTokenizer(path string, kind Kind) string {
	switch kind {
	case GGUF:
		return path
	case Dir:
		if _, err := os.Stat(filepath.Join(path, hf.TokenizerFile)); err == nil {
			return path
		}
	}
	return ""
}

// openTokenizer sets c's tokenizer: the file tokPath, else the one the
// checkpoint at path carries (the built-in tok512 for the built-in
// model), else the byte codec; and the generation settings it holds.
func (c *Checkpoint) openTokenizer(path, tokPath string) error {
	vocab := c.Source.Config().VocabSize
	if tokPath == "" && path == "" {
		tok, err := llama2c.ReadTokenizer(bytes.NewReader(stories260k.Tokenizer), vocab, stories260k.Name)
		if err != nil {
			return err
		}
		c.Tokenizer = tok
		c.Generation.setTokenizer(tok)
		return nil
	}
	if tokPath == "" {
		tokPath = ownTokenizer(path, c.Kind)
	}
	tok, gen, err := OpenCodec(tokPath, vocab)
	if err != nil {
		return err
	}
	c.Tokenizer = tok
	c.Generation.BOS, c.Generation.AddBOS = gen.BOS, gen.AddBOS
	c.Generation.ChatTemplate, c.Generation.EOSText = gen.ChatTemplate, gen.EOSText
	return nil
}

// OpenCodec opens the tokenizer file at path for a model of vocab ids
// (Open's choice, for a model that comes from no checkpoint, such as
// model.Synthesize's): a GGUF's, a tokenizer.json's (with the chat
// template and EOS text it names), a llama2.c tokenizer.bin of exactly
// vocab pieces; with an empty path, the byte codec. The Generation it
// returns holds what the tokenizer says: BOS, AddBOS, EOSText and
// ChatTemplate.
func OpenCodec(path string, vocab int) (tokenizer.Codec, Generation, error) {
	var gen Generation
	if path == "" {
		bt, err := tokenizer.NewBytes(vocab)
		if err != nil {
			return nil, gen, fmt.Errorf("model has a vocabulary of %d and no tokenizer was given: %w", vocab, err)
		}
		gen.setTokenizer(bt)
		return bt, gen, nil
	}
	kind, err := Sniff(path)
	if err != nil {
		return nil, gen, fmt.Errorf("tokenizer: %w", err)
	}
	if kind == Llama2c {
		tok, err := llama2c.LoadTokenizer(path, vocab)
		if err != nil {
			return nil, gen, err
		}
		gen.setTokenizer(tok)
		return tok, gen, nil
	}
	tok, err := OpenTokenizer(path)
	if err != nil {
		return nil, gen, err
	}
	if tok.VocabSize() > vocab {
		return nil, gen, fmt.Errorf("tokenizer %s has %d tokens, the model only %d", path, tok.VocabSize(), vocab)
	}
	gen.setTokenizer(tok)
	gen.ChatTemplate = tok.ChatTemplate()
	if eos := tok.EOS(); eos >= 0 && eos < tok.VocabSize() {
		gen.EOSText = tok.Piece(eos)
	}
	return tok, gen, nil
}

// setTokenizer sets the BOS rule tok answers.
func (g *Generation) setTokenizer(tok tokenizer.Codec) {
	g.BOS = tok.BOS()
	g.AddBOS = tok.AddBOS() && tok.BOS() >= 0
}
