package tokenizer

import (
	"context"
	"testing"
)

// PromptCounter counts BOS when the codec adds one, and the text's ids.
func TestPromptCounter(t *testing.T) {
	b, err := NewBytes(259)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := PromptCounter(b)(context.Background(), "héllo"); n != 1+6 || err != nil {
		t.Errorf("bytes codec: %d, %v; want BOS and 6 bytes", n, err)
	}
	tok, err := NewLlama2c([]string{"<unk>", "<s>", "</s>", " ", "a", " a"}, []float32{0, 0, 0, 0, 0, 1}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := PromptCounter(tok)(context.Background(), "a"); n != 2 || err != nil {
		t.Errorf("llama2.c vocabulary: %d, %v; want BOS and \" a\"", n, err)
	}
	tok.addBOS = false
	if n, err := PromptCounter(tok)(context.Background(), "a"); n != 1 || err != nil {
		t.Errorf("without add_bos: %d, %v; want \" a\" alone", n, err)
	}
}
