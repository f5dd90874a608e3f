package gguf

import (
	"errors"
	"fmt"

	"github.com/stride-lm/stride/model/tokenizer"
)

// Tokenizer builds the tokenizer a GGUF file carries in its
// tokenizer.ggml.* metadata (any GGUF, vocab-only files included):
// tokenizer.ggml.model "llama" is SentencePiece BPE over tokens and
// scores, "gpt2" byte-level BPE over tokens and merges with the
// pre-tokenizer tokenizer.ggml.pre names; token types mark control,
// user-defined and byte tokens; BOS/EOS/EOT/EOM/UNK/PAD ids and
// add_bos/add_eos come from the metadata with llama.cpp's defaults; the
// chat template (tokenizer.chat_template) is kept. See tokenizer.FromVocab.
func Tokenizer(f *File) (*tokenizer.Tokenizer, error) {
	var v tokenizer.Vocab
	var err error
	if v.Model, err = f.String("tokenizer.ggml.model"); err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, fmt.Errorf("gguf: %s: the file has no tokenizer (tokenizer.ggml.model is missing)", f.name)
		}
		return nil, err
	}
	if err := vocabPieces(f, &v); err != nil {
		return nil, err
	}
	if err := specialIDs(f, &v); err != nil {
		return nil, err
	}
	if err := vocabFlags(f, &v); err != nil {
		return nil, err
	}
	if f.Has("tokenizer.chat_template") {
		if v.ChatTemplate, err = f.String("tokenizer.chat_template"); err != nil {
			return nil, err
		}
	}
	t, err := tokenizer.FromVocab(v)
	if err != nil {
		return nil, fmt.Errorf("gguf: %s: tokenizer: %w", f.name, err)
	}
	return t, nil
}

// vocabPieces reads the tokens and, where present, the pre-tokenizer name,
// scores, token types and merges.
func vocabPieces(f *File, v *tokenizer.Vocab) error {
	var err error
	if v.Tokens, err = f.Strings("tokenizer.ggml.tokens"); err != nil {
		return err
	}
	if f.Has("tokenizer.ggml.pre") {
		if v.Pre, err = f.String("tokenizer.ggml.pre"); err != nil {
			return err
		}
	}
	if f.Has("tokenizer.ggml.scores") {
		if v.Scores, err = f.Float32s("tokenizer.ggml.scores"); err != nil {
			return err
		}
	}
	if f.Has("tokenizer.ggml.token_type") {
		tt, err := f.Int32s("tokenizer.ggml.token_type")
		if err != nil {
			return err
		}
		v.Types = make([]tokenizer.TokenType, len(tt))
		for i, x := range tt {
			v.Types[i] = tokenizer.TokenType(x)
		}
	}
	if f.Has("tokenizer.ggml.merges") {
		if v.Merges, err = f.Strings("tokenizer.ggml.merges"); err != nil {
			return err
		}
	}
	return nil
}

// specialIDs reads the BOS/EOS/EOT/EOM/UNK/PAD ids that are present. An
// id beyond the vocabulary (0xFFFFFFFF = none) becomes -1, so FromVocab
// keeps its default.
func specialIDs(f *File, v *tokenizer.Vocab) error {
	for _, k := range []struct {
		key string
		dst **int
	}{{"bos", &v.BOS}, {"eos", &v.EOS}, {"eot", &v.EOT}, {"eom", &v.EOM}, {"unknown", &v.UNK}, {"padding", &v.PAD}} {
		key := "tokenizer.ggml." + k.key + "_token_id"
		if !f.Has(key) {
			continue
		}
		u, err := f.Uint(key)
		if err != nil {
			return err
		}
		id := -1
		if u < uint64(len(v.Tokens)) {
			id = int(u)
		}
		*k.dst = &id
	}
	return nil
}

// vocabFlags reads add_bos_token, add_eos_token and add_space_prefix
// where present (absent ones keep FromVocab's defaults).
func vocabFlags(f *File, v *tokenizer.Vocab) error {
	for _, k := range []struct {
		key string
		dst **bool
	}{{"add_bos_token", &v.AddBOS}, {"add_eos_token", &v.AddEOS}, {"add_space_prefix", &v.AddSpacePrefix}} {
		key := "tokenizer.ggml." + k.key
		if !f.Has(key) {
			continue
		}
		b, err := f.Bool(key)
		if err != nil {
			return err
		}
		*k.dst = &b
	}
	return nil
}

// OpenTokenizer opens the GGUF file at path and returns its tokenizer.
// The tokenizer copies what it needs, so the file is closed again.
func OpenTokenizer(path string) (*tokenizer.Tokenizer, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Tokenizer(f)
}
