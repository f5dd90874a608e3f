package chat

import (
	"context"
	"fmt"
	"strings"

	"github.com/stride-lm/stride/model/tokenizer"
)

// Options are what a rendering needs beside the messages.
type Options struct {
	// AddGenerationPrompt ends the text with the header of the
	// assistant's turn (add_generation_prompt).
	AddGenerationPrompt bool
	// BOS is the bos_token text the template sees. Encode sets it from
	// the vocabulary.
	BOS string
	// Budget bounds the rendering; its zero fields take the defaults (64 MiB output, 2^20 iterations,
	// range 65 536, strings 32 MiB).
	Budget Budget
}

// Prompt is a rendered conversation and its token ids.
//
// The rule: text the template's own markup writes is tokenized with the
// vocabulary's control tokens recognized ("<|im_start|>" is one id);
// text that came from a message is plain text, so a user who types
// "<|im_end|>" gets the ids of those characters and cannot end a turn.
type Prompt struct {
	// Text is the rendered conversation.
	Text string
	// IDs are Text's token ids, BOS first when the tokenizer adds one.
	IDs []int

	segs  []tokenizer.Segment
	codec tokenizer.Codec
}

// Encode renders msgs with t and tokenizes the result for codec by the
// rule on Prompt. The template sees the vocabulary's BOS text as
// bos_token; when addBOS (the tokenizer's add_bos_token) and the text
// does not already start with BOS, the BOS id is put first. A tokenizer
// without BOS (Qwen's) gets no BOS, as generate feeds it none.
func Encode(ctx context.Context, t *Template, msgs []Message, codec tokenizer.Codec, addBOS bool, o Options) (Prompt, error) {
	tok, _ := codec.(*tokenizer.Tokenizer)
	bos := -1
	if tok != nil {
		bos = tok.BOS()
		if bos >= 0 && tok.Type(bos) == tokenizer.TypeControl {
			o.BOS = tok.Piece(bos)
		}
	}
	var controls []string
	if tok != nil {
		controls = controlTexts(tok)
	}
	text, segs, err := t.renderMarked(ctx, msgs, o, controls)
	if err != nil {
		return Prompt{}, err
	}
	p := Prompt{Text: text, segs: segs, codec: codec}
	if p.IDs, err = p.encode(segs); err != nil {
		return Prompt{}, err
	}
	if addBOS && tok == nil {
		p.IDs = append([]int{bytesBOS}, p.IDs...)
	} else if addBOS && bos >= 0 && (len(p.IDs) == 0 || p.IDs[0] != bos) {
		p.IDs = append([]int{bos}, p.IDs...)
	}
	return p, nil
}

// bytesBOS is the BOS id of the byte codec (tokenizer.Bytes).
const bytesBOS = 1

// IDsAfter tokenizes Text[n:] by the same rule, without BOS: the ids a
// conversation adds to a prefix of n bytes the model has already seen.
func (p Prompt) IDsAfter(n int) ([]int, error) {
	if n < 0 || n > len(p.Text) {
		return nil, fmt.Errorf("chat: offset %d outside the prompt's %d bytes", n, len(p.Text))
	}
	var rest []tokenizer.Segment
	for _, s := range p.segs {
		switch {
		case n >= len(s.Text):
			n -= len(s.Text)
		case n > 0:
			rest = append(rest, tokenizer.Segment{Text: s.Text[n:], Literal: s.Literal})
			n = 0
		default:
			rest = append(rest, s)
		}
	}
	return p.encode(rest)
}

// encode tokenizes segs: control tokens only outside literal segments.
func (p Prompt) encode(segs []tokenizer.Segment) ([]int, error) {
	if tok, ok := p.codec.(*tokenizer.Tokenizer); ok {
		return tok.EncodeSegments(segs, tokenizer.EncodeOptions{ParseSpecial: true})
	}
	var b strings.Builder
	for _, s := range segs {
		b.WriteString(s.Text)
	}
	return p.codec.Encode(b.String(), false, false)
}

// controlTexts are the texts of tok's control tokens, longest first.
func controlTexts(tok *tokenizer.Tokenizer) []string {
	var out []string
	for id := 0; id < tok.VocabSize(); id++ {
		if tok.Type(id) == tokenizer.TypeControl && tok.Piece(id) != "" {
			out = append(out, tok.Piece(id))
		}
	}
	return out
}
