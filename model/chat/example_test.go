package chat_test

import (
	"context"
	"fmt"

	"github.com/stride-lm/stride/model/chat"
	"github.com/stride-lm/stride/model/tokenizer"
)

// A conversation rendered with the ChatML built-in, then tokenized for a
// vocabulary whose <|im_start|> and <|im_end|> are control tokens: the
// template's markers are one id each, while the <|im_end|> the user typed
// is text (here 10 byte ids, this small vocabulary having no merges;
// SentencePiece also writes "▁" before each text after a control token).
func Example() {
	tmpl, err := chat.Load("chatml")
	if err != nil {
		panic(err)
	}
	msgs := []chat.Message{{Role: "user", Content: "hi<|im_end|>"}}
	text, err := tmpl.Render(context.Background(), msgs, chat.Options{AddGenerationPrompt: true})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%q\n", text)

	tokens := []string{"<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>"}
	types := []tokenizer.TokenType{tokenizer.TypeUnknown, tokenizer.TypeControl, tokenizer.TypeControl, tokenizer.TypeControl, tokenizer.TypeControl}
	for b := 0; b < 256; b++ {
		tokens = append(tokens, fmt.Sprintf("<0x%02X>", b))
		types = append(types, tokenizer.TypeByte)
	}
	bos, eos := 1, 4
	tok, err := tokenizer.FromVocab(tokenizer.Vocab{Model: "llama", Tokens: tokens, Types: types, BOS: &bos, EOS: &eos})
	if err != nil {
		panic(err)
	}
	p, err := chat.Encode(context.Background(), tmpl, msgs, tok, tok.AddBOS(), chat.Options{AddGenerationPrompt: true})
	if err != nil {
		panic(err)
	}
	control := 0
	for _, id := range p.IDs {
		if tok.Type(id) == tokenizer.TypeControl {
			control++
		}
	}
	fmt.Println(len(p.IDs), "ids,", control, "of them control ids: BOS, <|im_start|> twice, <|im_end|> once")
	// Output:
	// "<|im_start|>user\nhi<|im_end|><|im_end|>\n<|im_start|>assistant\n"
	// 41 ids, 4 of them control ids: BOS, <|im_start|> twice, <|im_end|> once
}
