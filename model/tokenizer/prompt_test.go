package tokenizer

import (
	"errors"
	"slices"
	"testing"
)

func TestPromptEncoder(t *testing.T) {
	b, err := NewBytes(300) // ids 259..299 decode to "<id>": 5 bytes at most
	if err != nil {
		t.Fatal(err)
	}
	p := NewPromptEncoder(b, true)
	if got := p.MaxPieceBytes(); got != 5 {
		t.Errorf("MaxPieceBytes %d, want 5 (\"<299>\")", got)
	}
	ids, err := p.Encode("ab", 3)
	if err != nil || !slices.Equal(ids, []int{1, 3 + 'a', 3 + 'b'}) {
		t.Errorf("Encode(ab, 3) = %v, %v", ids, err)
	}
	if ids, err := p.Encode("", 1); err != nil || !slices.Equal(ids, []int{1}) {
		t.Errorf("an empty prompt with BOS: %v, %v", ids, err)
	}
	// 6 bytes may be 1 + 2 tokens, so the estimate lets it through; it is
	// 7, longer than 5.
	var le *PromptLengthError
	if _, err := p.Encode("abcdef", 5); !errors.As(err, &le) || le.Estimated || le.Tokens != 7 || le.Limit != 5 {
		t.Errorf("abcdef in 5 positions: %v (%+v)", err, le)
	}
	// 100 bytes are at least 1 + 20 tokens: refused before encoding.
	text := string(make([]byte, 100))
	if _, err := p.Encode(text, 20); !errors.As(err, &le) || !le.Estimated || le.Tokens != 21 || le.Bytes != 100 || le.MaxPiece != 5 {
		t.Errorf("100 bytes in 20 positions: %v (%+v)", err, le)
	}
	if _, err := NewPromptEncoder(b, false).Encode("", 4); !errors.Is(err, ErrNothingToStart) {
		t.Errorf("an empty prompt without BOS: %v", err)
	}
	if ids, err := NewPromptEncoder(b, false).Encode("a", 1); err != nil || !slices.Equal(ids, []int{3 + 'a'}) {
		t.Errorf("without BOS: %v, %v", ids, err)
	}
}
