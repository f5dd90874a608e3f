package tokenizer

import (
	"slices"
	"strings"
	"testing"
)

// spmVocab is a small GGUF-style SentencePiece vocabulary.
func spmVocab() Vocab {
	toks := []string{"<unk>", "<s>", "</s>", "<0x0A>", "<0xC3>", "<0xA9>", "▁", "a", "▁a", "b", "ab", "▁ab"}
	types := make([]TokenType, len(toks))
	for i := range types {
		types[i] = TypeNormal
	}
	types[0], types[1], types[2] = TypeUnknown, TypeControl, TypeControl
	types[3], types[4], types[5] = TypeByte, TypeByte, TypeByte
	scores := []float32{0, 0, 0, 0, 0, 0, -9, -8, -3, -7, -2, -1}
	return Vocab{Model: "llama", Tokens: toks, Scores: scores, Types: types}
}

// TestFromVocabSentencePiece: llama.cpp's SentencePiece rules: the dummy
// prefix "▁" at the start and after every special token (unless
// add_space_prefix is false), byte pieces for characters outside the
// vocabulary, BOS/EOS and add_bos/add_eos from the metadata.
func TestFromVocabSentencePiece(t *testing.T) {
	tk, err := FromVocab(spmVocab())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		text string
		o    EncodeOptions
		want []int
	}{
		{"ab", EncodeOptions{BOS: true}, []int{1, 11}},
		{"a\né", EncodeOptions{}, []int{8, 3, 4, 5}},
		{"", EncodeOptions{BOS: true, EOS: true}, []int{1, 2}},
		// After a parsed special token the prefix comes again.
		{"ab</s>ab", EncodeOptions{ParseSpecial: true}, []int{11, 2, 11}},
		// Unparsed, "</s>" is text: its characters have no pieces or byte
		// pieces here, so <unk>.
		{"a</s>", EncodeOptions{}, []int{8, 0, 0, 0, 0}},
	} {
		got, err := tk.EncodeWith(tc.text, tc.o)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("EncodeWith(%q, %+v) = %v, want %v", tc.text, tc.o, got, tc.want)
		}
	}
	if got := tk.DecodeAll([]int{1, 11, 8, 3, 4, 5, 2}, false); got != "ab a\né" {
		t.Errorf("DecodeAll = %q", got)
	}
	if got := tk.DecodeAll([]int{1, 11, 2}, true); got != "<s>ab</s>" {
		t.Errorf("DecodeAll special = %q", got)
	}

	v := spmVocab()
	no, yes, eos := false, true, 9
	v.AddSpacePrefix, v.AddEOS, v.EOS = &no, &yes, &eos
	tk, err = FromVocab(v)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := tk.EncodeWith("ab", EncodeOptions{EOS: tk.AddEOS()}); !slices.Equal(got, []int{10, 9}) {
		t.Errorf("no space prefix, EOS 9: %v", got)
	}
	if !tk.AddBOS() || tk.EOS() != 9 || !slices.Contains(tk.EndOfGeneration(), 9) {
		t.Errorf("add_bos %v EOS %d EOG %v", tk.AddBOS(), tk.EOS(), tk.EndOfGeneration())
	}
}

func TestFromVocabErrors(t *testing.T) {
	bad := func(mut func(*Vocab)) Vocab {
		v := spmVocab()
		mut(&v)
		return v
	}
	for _, tc := range []struct {
		v    Vocab
		want string
	}{
		{Vocab{Model: "llama"}, "no tokens"},
		{bad(func(v *Vocab) { v.Scores = v.Scores[:3] }), "but 3 scores"},
		{bad(func(v *Vocab) { v.Types = v.Types[:2] }), "but 2 token types"},
		{bad(func(v *Vocab) { v.Model = "" }), "tokenizer.ggml.model is missing"},
		{bad(func(v *Vocab) { v.Model = "t5" }), `tokenizer model "t5" is not supported`},
		{bad(func(v *Vocab) { v.Model, v.Pre = "gpt2", "tekken" }), `pre-tokenizer "tekken" is not supported`},
		{bad(func(v *Vocab) { v.Model, v.Pre = "gpt2", "gpt-2" }), "needs merges"},
	} {
		if _, err := FromVocab(tc.v); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
}
