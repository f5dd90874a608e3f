package tokenizer

import (
	"errors"
	"fmt"
	"strconv"
)

// Bytes is the codec of a model without a tokenizer: ids 0, 1, 2 are
// <unk>, BOS and EOS, and ids 3..258 are the bytes 0x00..0xFF, the same
// numbering as the byte pieces of the Llama vocabulary. Ids from 259 up
// have no text; they decode to "<id>" so generated output stays visible.
type Bytes struct {
	vocab int
}

// NewBytes returns a byte codec for a vocabulary of vocab ids, which must
// hold the 259 byte and special ids.
func NewBytes(vocab int) (*Bytes, error) {
	if vocab < byteOffset+256 {
		return nil, fmt.Errorf("byte tokenizer: vocab size %d is below the %d ids it needs", vocab, byteOffset+256)
	}
	return &Bytes{vocab: vocab}, nil
}

// VocabSize returns the vocabulary size.
func (b *Bytes) VocabSize() int { return b.vocab }

// BOS is llama2.c's BOS id, 1.
func (b *Bytes) BOS() int { return llama2cBOS }

// EOS is llama2.c's EOS id, 2.
func (b *Bytes) EOS() int { return llama2cEOS }

// AddBOS is true: prompts start with BOS, as run.c's do.
func (b *Bytes) AddBOS() bool { return true }

// Encode returns BOS (if bos), one id per byte of text, EOS (if eos).
func (b *Bytes) Encode(text string, bos, eos bool) ([]int, error) {
	if b == nil || b.vocab < byteOffset+256 {
		return nil, errors.New("byte tokenizer: not initialized (use NewBytes)")
	}
	toks := make([]int, 0, len(text)+2)
	if bos {
		toks = append(toks, llama2cBOS)
	}
	for i := 0; i < len(text); i++ {
		toks = append(toks, byteOffset+int(text[i]))
	}
	if eos {
		toks = append(toks, llama2cEOS)
	}
	return toks, nil
}

// Decode returns the byte of a byte id, "" for the special ids and for ids
// outside the vocabulary, and "<id>" for the ids above the bytes.
func (b *Bytes) Decode(prev, tok int) string {
	switch {
	case tok >= byteOffset && tok < byteOffset+256:
		return byteStrings[tok-byteOffset]
	case tok > byteOffset+255 && tok < b.vocab:
		return "<" + strconv.Itoa(tok) + ">"
	}
	return ""
}
