package tokenizer

import (
	"errors"
	"fmt"
)

// ErrNothingToStart is PromptEncoder's error for an empty text when the
// tokenizer adds no BOS: a sequence needs at least one id to start from.
var ErrNothingToStart = errors.New("empty, and the tokenizer adds no BOS: there is nothing to start from")

// A PromptLengthError is a prompt that cannot fit the Limit positions of
// its context. When Estimated it was refused before it was encoded,
// from its byte length: it needs at least Tokens ids because no token
// stands for more than MaxPiece bytes of its Bytes.
type PromptLengthError struct {
	Tokens, Limit   int
	Estimated       bool
	Bytes, MaxPiece int
}

// Error says how long the prompt is against the limit.
func (e *PromptLengthError) Error() string {
	if e.Estimated {
		return fmt.Sprintf("its %d bytes are at least %d tokens (no token is longer than %d bytes), longer than %d positions",
			e.Bytes, e.Tokens, e.MaxPiece, e.Limit)
	}
	return fmt.Sprintf("%d tokens, longer than %d positions", e.Tokens, e.Limit)
}

// PromptEncoder encodes prompts for one model, as a front end must
// before it submits them: BOS first when the tokenizer's file asks for
// it, and a text that cannot fit its context refused early, from its
// byte length alone, so a huge text is never tokenized only to be
// refused. It is not safe for concurrent use until its first Encode.
type PromptEncoder struct {
	codec    Codec
	addBOS   bool
	maxPiece int // MaxPieceBytes, 0 until computed
}

// NewPromptEncoder encodes with c, starting every prompt with BOS when
// addBOS (checkpoint.Generation's AddBOS).
func NewPromptEncoder(c Codec, addBOS bool) *PromptEncoder {
	return &PromptEncoder{codec: c, addBOS: addBOS}
}

// Encode returns text's ids for a context of limit positions, or a
// *PromptLengthError when they cannot fit, or ErrNothingToStart.
func (p *PromptEncoder) Encode(text string, limit int) ([]int, error) {
	mp := p.MaxPieceBytes()
	// Every token but BOS stands for at most mp bytes of the text.
	n := (len(text) + mp - 1) / mp
	if p.addBOS {
		n++
	}
	if n > limit {
		return nil, &PromptLengthError{Tokens: n, Limit: limit, Estimated: true, Bytes: len(text), MaxPiece: mp}
	}
	ids, err := p.codec.Encode(text, p.addBOS, false)
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, ErrNothingToStart
	}
	if len(ids) > limit {
		return nil, &PromptLengthError{Tokens: len(ids), Limit: limit}
	}
	return ids, nil
}

// MaxPieceBytes is the longest text any token decodes to (at least 1),
// computed at the first call.
func (p *PromptEncoder) MaxPieceBytes() int {
	if p.maxPiece == 0 {
		p.maxPiece = 1
		for id := 0; id < p.codec.VocabSize(); id++ {
			// prev 0 is not BOS: the piece keeps its leading space.
			p.maxPiece = max(p.maxPiece, len(p.codec.Decode(0, id)))
		}
	}
	return p.maxPiece
}
