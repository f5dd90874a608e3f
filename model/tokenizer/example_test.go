package tokenizer_test

import (
	"fmt"

	"github.com/stride-lm/stride/model/tokenizer"
)

// A SentencePiece vocabulary as GGUF stores it: pieces spell the space as
// "▁", and the pair whose merged piece scores highest merges first.
func ExampleFromVocab_sentencePiece() {
	tk, err := tokenizer.FromVocab(tokenizer.Vocab{
		Model:  "llama",
		Tokens: []string{"<unk>", "<s>", "</s>", "▁", "h", "i", "hi", "▁hi"},
		Scores: []float32{0, 0, 0, -4, -3, -3, -2, -1},
		Types: []tokenizer.TokenType{tokenizer.TypeUnknown, tokenizer.TypeControl, tokenizer.TypeControl,
			tokenizer.TypeNormal, tokenizer.TypeNormal, tokenizer.TypeNormal, tokenizer.TypeNormal, tokenizer.TypeNormal},
	})
	if err != nil {
		panic(err)
	}
	// "hi hi" becomes "▁hi▁hi": ▁ h i ▁ h i → (h,i) merges first (-2 beats
	// ▁h, which is no piece), then (▁,hi) into ▁hi (-1).
	ids, _ := tk.EncodeWith("hi hi", tokenizer.EncodeOptions{BOS: tk.AddBOS()})
	fmt.Println(ids)
	fmt.Printf("%q\n", tk.DecodeAll(ids, false))
	// Output:
	// [1 7 7]
	// "hi hi"
}

// A byte-level BPE vocabulary (GGUF "gpt2"): the GPT-2 pre-tokenizer cuts
// the text into words, each word's bytes are spelled in GPT-2's byte
// alphabet ("Ġ" is the space), and merges apply by rank.
func ExampleFromVocab_byteLevel() {
	tk, err := tokenizer.FromVocab(tokenizer.Vocab{
		Model:  "gpt2",
		Pre:    "gpt-2",
		Tokens: []string{"a", "b", "Ġ", "ab", "Ġab", "<|endoftext|>"},
		Types: []tokenizer.TokenType{tokenizer.TypeNormal, tokenizer.TypeNormal, tokenizer.TypeNormal,
			tokenizer.TypeNormal, tokenizer.TypeNormal, tokenizer.TypeControl},
		Merges: []string{"a b", "Ġ ab"},
	})
	if err != nil {
		panic(err)
	}
	ids, _ := tk.EncodeWith("ab ab<|endoftext|>", tokenizer.EncodeOptions{ParseSpecial: true})
	for _, id := range ids {
		fmt.Printf("%d %q\n", id, tk.Piece(id))
	}
	// Output:
	// 3 "ab"
	// 4 "Ġab"
	// 5 "<|endoftext|>"
}
