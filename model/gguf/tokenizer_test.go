package gguf

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stride-lm/stride/model/tokenizer"
	"github.com/stride-lm/stride/tensor/testfixture"
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
	txt, err := os.ReadFile(sharedFile(t, "models/golden/stories260K.greedy.txt"))
	if err != nil {
		t.Fatal(err)
	}
	ids := append([]int{1}, goldenIDs(t)...)
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

// tokenizerFuzzSeeds are FuzzTokenizer's seeds: vocab-only files of both
// tokenizer models, also committed under testdata/fuzz/FuzzTokenizer
// (TestTokenizerFuzzCorpusCurrent keeps them equal;
// STRIDE_WRITE_FUZZ_CORPUS=1 rewrites the files).
func tokenizerFuzzSeeds(t testing.TB) map[string][]byte {
	seeds := map[string][]byte{}
	write := func(name string, kvs []KV) {
		var buf bytes.Buffer
		if err := Write(&buf, kvs, nil); err != nil {
			t.Fatal(err)
		}
		seeds[name] = buf.Bytes()
	}
	write("llama", []KV{
		{Key: "general.architecture", Value: MustValue("llama")},
		{Key: "tokenizer.ggml.model", Value: MustValue("llama")},
		{Key: "tokenizer.ggml.tokens", Value: MustValue([]string{"<unk>", "<s>", "</s>", "<0x0A>", "▁", "a", "▁a", "<|im_end|>"})},
		{Key: "tokenizer.ggml.scores", Value: MustValue([]float32{0, 0, 0, 0, -3, -2, -1, 0})},
		{Key: "tokenizer.ggml.token_type", Value: MustValue([]int32{2, 3, 3, 6, 1, 1, 1, 4})},
		{Key: "tokenizer.ggml.bos_token_id", Value: MustValue(uint32(1))},
		{Key: "tokenizer.ggml.add_space_prefix", Value: MustValue(true)},
	})
	write("gpt2", []KV{
		{Key: "tokenizer.ggml.model", Value: MustValue("gpt2")},
		{Key: "tokenizer.ggml.pre", Value: MustValue("llama-bpe")},
		{Key: "tokenizer.ggml.tokens", Value: MustValue([]string{"a", "b", "ab", "Ġ", "Ġab", "<|eot_id|>"})},
		{Key: "tokenizer.ggml.token_type", Value: MustValue([]int32{1, 1, 1, 1, 1, 3})},
		{Key: "tokenizer.ggml.merges", Value: MustValue([]string{"a b", "Ġ ab"})},
		{Key: "tokenizer.ggml.eos_token_id", Value: MustValue(uint32(0xFFFFFFFF))},
	})
	return seeds
}

func TestTokenizerFuzzCorpusCurrent(t *testing.T) {
	want := map[string][]byte{}
	for name, b := range tokenizerFuzzSeeds(t) {
		want[name] = testfixture.CorpusEntry(b, "a ab\n<|eot_id|>")
	}
	testfixture.CheckCorpus(t, filepath.Join("testdata", "fuzz", "FuzzTokenizer"), want, "TestTokenizerFuzzCorpusCurrent")
}

// TestTokenizerSeeds checks the seed vocabularies themselves: specials,
// defaults and merges behave as llama.cpp's loader would.
func TestTokenizerSeeds(t *testing.T) {
	seeds := tokenizerFuzzSeeds(t)
	f, err := Parse(seeds["llama"], "llama")
	if err != nil {
		t.Fatal(err)
	}
	tk, err := Tokenizer(f)
	if err != nil {
		t.Fatal(err)
	}
	// "a a\n": ▁a ▁a <0x0A>. <|im_end|> is stored user-defined, but as an
	// end-of-generation text llama.cpp makes it a control token: parsed
	// only when asked, and otherwise characters without pieces or byte
	// pieces, so <unk>. EOS defaults to 2.
	if got, _ := tk.EncodeWith("a a\n<|im_end|>", tokenizer.EncodeOptions{BOS: true, ParseSpecial: true}); !slices.Equal(got, []int{1, 6, 6, 3, 7}) {
		t.Errorf("llama seed: %v", got)
	}
	if got, _ := tk.Encode("a<|im_end|>", false, false); tk.Type(7) != tokenizer.TypeControl || !slices.Equal(got, []int{6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}) {
		t.Errorf("llama seed, <|im_end|> unparsed: %v (type %d)", got, tk.Type(7))
	}
	if tk.EOS() != 2 || tk.EOT() != 7 || !slices.Equal(tk.EndOfGeneration(), []int{2, 7}) {
		t.Errorf("EOS %d EOT %d EOG %v", tk.EOS(), tk.EOT(), tk.EndOfGeneration())
	}
	g, err := Parse(seeds["gpt2"], "gpt2")
	if err != nil {
		t.Fatal(err)
	}
	if tk, err = Tokenizer(g); err != nil {
		t.Fatal(err)
	}
	// llama-bpe: BOS added by default, but the default BOS (11) is outside
	// this 6-token vocabulary: none. EOS 0xFFFFFFFF keeps the default 11:
	// none either. <|eot_id|> is control: text unless parsed.
	if tk.BOS() != -1 || tk.EOS() != -1 || tk.EOT() != 5 {
		t.Errorf("BOS %d EOS %d EOT %d", tk.BOS(), tk.EOS(), tk.EOT())
	}
	if got, err := tk.EncodeWith(" ab<|eot_id|>", tokenizer.EncodeOptions{ParseSpecial: true}); err != nil || !slices.Equal(got, []int{4, 5}) {
		t.Errorf("gpt2 seed: %v, %v", got, err)
	}
	if _, err := tk.Encode("ab", true, false); err == nil {
		t.Error("BOS requested without a BOS id: no error")
	}
}

// FuzzTokenizer: any GGUF bytes give an error or a tokenizer whose ids
// stay inside its vocabulary.
func FuzzTokenizer(f *testing.F) {
	for _, b := range tokenizerFuzzSeeds(f) {
		f.Add(b, "a ab\n<|eot_id|>")
	}
	f.Fuzz(func(t *testing.T, data []byte, text string) {
		g, err := Parse(data, "fuzz")
		if err != nil {
			return
		}
		tk, err := Tokenizer(g)
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		for _, ps := range []bool{false, true} {
			ids, err := tk.EncodeWith(text, tokenizer.EncodeOptions{ParseSpecial: ps})
			if err != nil {
				continue
			}
			for _, id := range ids {
				if id < 0 || id >= tk.VocabSize() {
					t.Fatalf("id %d outside the %d-token vocabulary", id, tk.VocabSize())
				}
			}
			_ = tk.DecodeAll(ids, ps)
		}
	})
}

// TestLlama2StyleTokenizerJSON turns the llama-spm GGUF vocabulary into a
// Llama 2 style tokenizer.json, the way Hugging Face converts SentencePiece
// models (merges = every split of a piece into two pieces, ranked by the
// merged piece's score; Prepend "▁" and Replace " " → "▁" normalizers,
// byte fallback, the Replace/ByteFallback/Fuse/Strip decoder), and checks
// that the merges-with-byte-fallback BPE gives llama.cpp's SentencePiece
// vectors too.
func TestLlama2StyleTokenizerJSON(t *testing.T) {
	base := sharedFile(t, "tokenizers/llama.cpp-vocab/ggml-vocab-llama-spm.gguf")
	f, err := Open(base)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tokens, err := f.Strings("tokenizer.ggml.tokens")
	if err != nil {
		t.Fatal(err)
	}
	scores, err := f.Float32s("tokenizer.ggml.scores")
	if err != nil {
		t.Fatal(err)
	}
	types, err := f.Int32s("tokenizer.ggml.token_type")
	if err != nil {
		t.Fatal(err)
	}
	vocab := map[string]int{}
	for i, p := range tokens {
		vocab[p] = i
	}
	type mg struct {
		a, b   string
		score  float32
		ia, ib int
	}
	var merges []mg
	for i, p := range tokens {
		if types[i] != 1 {
			continue
		}
		for k := 1; k < len(p); k++ {
			ia, ok1 := vocab[p[:k]]
			ib, ok2 := vocab[p[k:]]
			if ok1 && ok2 {
				merges = append(merges, mg{p[:k], p[k:], scores[i], ia, ib})
			}
		}
	}
	slices.SortStableFunc(merges, func(x, y mg) int {
		switch {
		case x.score != y.score:
			if x.score > y.score {
				return -1
			}
			return 1
		case x.ia != y.ia:
			return x.ia - y.ia
		}
		return x.ib - y.ib
	})
	pairs := make([][2]string, len(merges))
	for i, m := range merges {
		pairs[i] = [2]string{m.a, m.b}
	}
	doc := map[string]any{
		"added_tokens": []map[string]any{{"id": 0, "content": "<unk>", "special": true},
			{"id": 1, "content": "<s>", "special": true}, {"id": 2, "content": "</s>", "special": true}},
		"normalizer": map[string]any{"type": "Sequence", "normalizers": []any{
			map[string]any{"type": "Prepend", "prepend": "▁"},
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "▁"}}},
		"pre_tokenizer": nil,
		"decoder": map[string]any{"type": "Sequence", "decoders": []any{
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": "▁"}, "content": " "},
			map[string]any{"type": "ByteFallback"}, map[string]any{"type": "Fuse"},
			map[string]any{"type": "Strip", "content": " ", "start": 1, "stop": 0}}},
		"model": map[string]any{"type": "BPE", "vocab": vocab, "merges": pairs, "byte_fallback": true,
			"unk_token": "<unk>", "fuse_unk": true},
	}
	js, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	tk, err := tokenizer.FromJSON(js, []byte(`{"add_bos_token": true, "bos_token": "<s>", "eos_token": "</s>"}`), "llama-spm.json")
	if err != nil {
		t.Fatal(err)
	}
	if tk.Kind() != tokenizer.MergesBPE {
		t.Fatalf("kind %v", tk.Kind())
	}
	texts, want := readVectors(t, base)
	for i, text := range texts {
		got, err := tk.Encode(text, false, false)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want[i]) {
			t.Errorf("text %d %q:\n got %v\nwant %v", i, text, got, want[i])
			continue
		}
		if back := tk.DecodeAll(got, false); back != text {
			t.Errorf("text %d %q: decodes to %q", i, text, back)
		}
	}
}

// BenchmarkEncodeLongBPE encodes a 300 KB text with the GPT-2 and Llama 2
// vocabularies of llama.cpp's vocab files: the pair queue keeps both
// merge loops O(n log n).
//
//	go test ./model/gguf -run '^$' -bench EncodeLong -benchtime 3x
func BenchmarkEncodeLong(b *testing.B) {
	words := []string{"Once", " upon", " a", " time", ",", " there", " was", " a", " little", " girl", " named",
		" Lily", ".", " She", " liked", " to", " play", " in", " the", " park", "\n", " 😀", " 你好", " 123456"}
	var sb strings.Builder
	for i := 0; sb.Len() < 300<<10; i++ {
		sb.WriteString(words[(i*7+i/5)%len(words)])
	}
	text := sb.String()
	for _, name := range []string{"gpt-2", "llama-spm"} {
		b.Run(name, func(b *testing.B) {
			tk, err := OpenTokenizer(sharedFile(b, "tokenizers/llama.cpp-vocab/ggml-vocab-"+name+".gguf"))
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				if _, err := tk.Encode(text, false, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
