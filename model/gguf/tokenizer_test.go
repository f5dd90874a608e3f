package gguf

import (
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stride-lm/stride/model/tokenizer"
)

// readVectors reads llama.cpp's tokenizer test vectors: the .inp texts,
// each followed by a "\n__ggml_vocab_test__\n" line, and the .out ids, one
// line per text, without BOS.
func readVectors(t *testing.T, base string) (texts []string, ids [][]int) {
	t.Helper()
	inp, err := os.ReadFile(base + ".inp")
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(base + ".out")
	if err != nil {
		t.Fatal(err)
	}
	texts = strings.Split(string(inp), "\n__ggml_vocab_test__\n")
	if texts[len(texts)-1] == "" {
		texts = texts[:len(texts)-1]
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(texts) {
		t.Fatalf("%s: %d texts but %d id lines", base, len(texts), len(lines))
	}
	for _, l := range lines {
		var row []int
		for _, f := range strings.Fields(l) {
			id, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			row = append(row, id)
		}
		ids = append(ids, row)
	}
	return texts, ids
}

// TestTokenizerVocabVectors: every llama.cpp vocab vector must match
// exactly (llama-spm: SentencePiece; gpt-2 and starcoder: byte-level BPE
// with their pre-tokenizers). The .out ids are those of the reference
// tokenizers the vocabularies come from (recorded by llama.cpp's
// convert_hf_to_gguf_update.py), without BOS and without parsing special
// tokens.
func TestTokenizerVocabVectors(t *testing.T) {
	for _, name := range []string{"llama-spm", "gpt-2", "starcoder"} {
		t.Run(name, func(t *testing.T) {
			base := sharedFile(t, "tokenizers/llama.cpp-vocab/ggml-vocab-"+name+".gguf")
			tk, err := OpenTokenizer(base)
			if err != nil {
				t.Fatal(err)
			}
			texts, want := readVectors(t, base)
			for i, text := range texts {
				got, err := tk.Encode(text, false, false)
				if err != nil {
					t.Fatalf("text %d %q: %v", i, text, err)
				}
				if !slices.Equal(got, want[i]) {
					t.Errorf("text %d %q:\n got %v\nwant %v", i, text, got, want[i])
					continue
				}
				// Decoding gives the text back (SentencePiece drops the
				// dummy prefix it added).
				if back := tk.DecodeAll(got, false); back != text {
					t.Errorf("text %d %q: decodes to %q", i, text, back)
				}
			}
		})
	}
}

// TestTokenizerStories260KMatchesRunC: the SentencePiece vocabulary that
// llama.cpp's converter embedded from tok512.bin gives run.c's ids on
// tok512 (the run.c transliteration lives with the tokenizer package's
// tests; here the ids of the tokenizer.bin reading are the oracle, and they
// are themselves checked against run.c there).
func TestTokenizerStories260KMatchesRunC(t *testing.T) {
	tk, err := OpenTokenizer(sharedFile(t, "models/gguf/stories260K-f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	bin := readTok512(t)
	if tk.BOS() != 1 || tk.EOS() != 2 || !tk.AddBOS() || tk.Kind() != tokenizer.SentencePiece {
		t.Fatalf("BOS %d EOS %d add_bos %v kind %v", tk.BOS(), tk.EOS(), tk.AddBOS(), tk.Kind())
	}
	for _, text := range []string{"Once upon a time", "Lily and Ben went to the park.", "", " ", "  two  spaces ",
		"😀 emoji, 你好 CJK, é", "line\nbreak\ttab", "\xff\x80 bad bytes", "<s> is not parsed", "The cat sat on the mat."} {
		want, err := bin.Encode(text, true, false)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tk.Encode(text, true, false)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%q:\n gguf %v\n  bin %v", text, got, want)
		}
	}
	// run.c's golden greedy ids decode to the golden text, apart from the
	// leading space that run.c strips after BOS and llama.cpp prints.
	raw, err := os.ReadFile(sharedFile(t, "models/golden/stories260K.greedy.ids"))
	if err != nil {
		t.Fatal(err)
	}
	txt, err := os.ReadFile(sharedFile(t, "models/golden/stories260K.greedy.txt"))
	if err != nil {
		t.Fatal(err)
	}
	ids := []int{1}
	for _, f := range strings.Fields(string(raw)) {
		id, _ := strconv.Atoi(f)
		ids = append(ids, id)
	}
	var sb strings.Builder
	for i := 1; i < len(ids); i++ {
		sb.WriteString(tokenizer.RunCPrintable(tk.Decode(ids[i-1], ids[i])))
	}
	if got := sb.String() + "\n"; got != string(txt) {
		t.Fatalf("golden ids decode to\n%q\nrun.c printed\n%q", got, txt)
	}
}

// readTok512 reads the tok512.bin fixture (llama2c.ReadTokenizer is the
// validating reader; gguf does not import llama2c).
func readTok512(t *testing.T) *tokenizer.Tokenizer {
	t.Helper()
	b, err := os.ReadFile(sharedFile(t, "models/tok512.bin"))
	if err != nil {
		t.Fatal(err)
	}
	le := func(o int) uint32 { return uint32(b[o]) | uint32(b[o+1])<<8 | uint32(b[o+2])<<16 | uint32(b[o+3])<<24 }
	maxLen, off := int(le(0)), 4
	var pieces []string
	var scores []float32
	for off < len(b) {
		n := int(le(off + 4))
		scores = append(scores, math.Float32frombits(le(off)))
		pieces = append(pieces, string(b[off+8:off+8+n]))
		off += 8 + n
	}
	tk, err := tokenizer.NewLlama2c(pieces, scores, maxLen)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}
