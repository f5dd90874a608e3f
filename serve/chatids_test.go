package serve

import (
	"context"
	"slices"
	"testing"

	"github.com/stride-lm/stride/model/chat"
	"github.com/stride-lm/stride/model/checkpoint"
	"github.com/stride-lm/stride/model/tokenizer"
	"github.com/stride-lm/stride/tensor/testfixture"
)

// chatTurns is a multi-turn conversation: a system prompt, two user
// turns and the reply between them.
var chatTurns = []Message{{"system", "You are kind."}, {"user", "Hi there"},
	{"assistant", "Hello! How can I help?"}, {"user", "Tell me a story."}}

// inferChatIDs is the prompt infer chat feeds after chatTurns: its
// chat.Conversation built turn by turn, the reply fed as the model
// generated it (its text's ids, then the token it stopped at, end).
func inferChatIDs(t *testing.T, tmpl *chat.Template, codec tokenizer.Codec, addBOS bool, end int) []int {
	t.Helper()
	conv := chat.NewConversation(tmpl, codec, addBOS, chatTurns[0].Content)
	ctx := context.Background()
	if _, err := conv.AddUser(ctx, chatTurns[1].Content); err != nil {
		t.Fatal(err)
	}
	reply, err := codec.Encode(chatTurns[2].Content, false, false)
	if err != nil {
		t.Fatal(err)
	}
	conv.AddReply(append(reply, end), chatTurns[2].Content)
	if _, err := conv.AddUser(ctx, chatTurns[3].Content); err != nil {
		t.Fatal(err)
	}
	return conv.IDs()
}

// The server's chat prompt is infer chat's for the same conversation: in
// run.c's format on stories260K (each reply closed by EOS, id 2 there),
// on a vocabulary whose EOS is not 2 (GPT-2's), and through a Jinja
// template on a SentencePiece vocabulary with control tokens.
func TestChatPromptIsInferChats(t *testing.T) {
	ck, err := checkpoint.Open("", checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	zephyr, err := chat.Load("zephyr")
	if err != nil {
		t.Fatal(err)
	}
	type vocab struct {
		name  string
		codec tokenizer.Codec
		gen   checkpoint.Generation
	}
	vocabs := []vocab{{"stories260K", ck.Tokenizer, ck.Generation}}
	for _, f := range []string{"gpt-2", "llama-spm"} {
		codec, gen, err := checkpoint.OpenCodec(testfixture.File(t, "tokenizers/llama.cpp-vocab/ggml-vocab-"+f+".gguf"), 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		vocabs = append(vocabs, vocab{f, codec, gen})
	}
	for _, c := range []struct {
		vocab int
		tmpl  *chat.Template
	}{{0, chat.Fallback()}, {1, chat.Fallback()}, {2, zephyr}} {
		v := vocabs[c.vocab]
		eos := v.codec.EOS()
		if c.vocab == 1 && eos == 2 {
			t.Fatalf("%s: EOS %d, want a vocabulary whose EOS is not run.c's 2", v.name, eos)
		}
		want := inferChatIDs(t, c.tmpl, v.codec, v.gen.AddBOS, eos)
		b := &EngineBackend{codec: v.codec, tmpl: c.tmpl}
		got, err := b.TokenizeChat(chatTurns)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s, template %v: the server's chat prompt\n%v\nis not infer chat's\n%v", v.name, c.tmpl.RunC(), got, want)
		}
		if c.tmpl.RunC() && !slices.Contains(got, eos) {
			t.Errorf("%s: the earlier reply is not closed by EOS %d: %v", v.name, eos, got)
		}
	}
}
