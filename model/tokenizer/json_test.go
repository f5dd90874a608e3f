package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// oracle is testdata/transformersjs.json, recorded by
// scripts/tokenizer-oracle/record.mjs: transformers.js's ids for each text
// with add_special_tokens false (ids) and true (ids_special), and the
// pieces V8's regex engine cuts each text into with the raw patterns.
type oracle struct {
	Texts      []string `json:"texts"`
	NFC        []string `json:"nfc"`
	Tokenizers map[string]struct {
		IDs        [][]int `json:"ids"`
		IDsSpecial [][]int `json:"ids_special"`
	} `json:"tokenizers"`
	Splits map[string][][]string `json:"splits"`
}

func readOracle(t *testing.T) *oracle {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "transformersjs.json"))
	if err != nil {
		t.Fatal(err)
	}
	var o oracle
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatal(err)
	}
	if len(o.Texts) < 50 {
		t.Fatalf("oracle has only %d texts", len(o.Texts))
	}
	return &o
}

// npmTokenizer loads a tokenizer.json fetched by
// scripts/fetch-test-tokenizers.sh, skipping when absent (failing under
// CI=true, where .ci/run fetches them).
func npmTokenizer(t *testing.T, name string) *Tokenizer {
	t.Helper()
	dir := filepath.Join("testdata", "npm", name, "models")
	tj, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but %v (run scripts/fetch-test-tokenizers.sh)", err)
		}
		t.Skipf("skipping: %v (run scripts/fetch-test-tokenizers.sh)", err)
	}
	cj, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	tk, err := FromJSON(tj, cj, name)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// TestNFCMatchesJS: nfc gives what JavaScript's String.normalize("NFC")
// (ICU) gives on every recorded text.
func TestNFCMatchesJS(t *testing.T) {
	o := readOracle(t)
	if len(o.NFC) != len(o.Texts) {
		t.Fatalf("%d NFC rows for %d texts", len(o.NFC), len(o.Texts))
	}
	changed := 0
	for i, text := range o.Texts {
		if got := nfc(text); got != o.NFC[i] {
			t.Errorf("nfc(%q) = %q, want %q", text, got, o.NFC[i])
		}
		if o.NFC[i] != text {
			changed++
		}
	}
	if changed < 4 {
		t.Fatalf("only %d texts change under NFC: the oracle does not test composition", changed)
	}
	// Bytes that are not UTF-8 stay, and the text around them is normalized.
	if got := nfc("e\u0301\xffe\u0301"); got != "\u00e9\xff\u00e9" {
		t.Errorf("nfc with an invalid byte = %q", got)
	}
}

// TestTokenizerJSONMatchesTransformersJS: the Llama 3 and Qwen3
// tokenizer.json files give transformers.js's ids on every recorded text,
// with and without the special tokens added, and decode back to the text.
func TestTokenizerJSONMatchesTransformersJS(t *testing.T) {
	o := readOracle(t)
	for _, name := range []string{"llama3", "qwen3"} {
		t.Run(name, func(t *testing.T) {
			tk := npmTokenizer(t, name)
			rec := o.Tokenizers[name]
			if len(rec.IDs) != len(o.Texts) || len(rec.IDsSpecial) != len(o.Texts) {
				t.Fatalf("oracle for %s has %d/%d rows for %d texts", name, len(rec.IDs), len(rec.IDsSpecial), len(o.Texts))
			}
			nfcNorm := slices.ContainsFunc(tk.norm, func(n normalizer) bool { return n.op == "nfc" })
			for i, text := range o.Texts {
				// transformers.js always matches added tokens in the text.
				got, err := tk.EncodeWith(text, EncodeOptions{ParseSpecial: true})
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, rec.IDs[i]) {
					t.Errorf("text %d %q:\n got %v\nwant %v", i, text, got, rec.IDs[i])
					continue
				}
				got, err = tk.EncodeWith(text, EncodeOptions{BOS: tk.AddBOS(), EOS: tk.AddEOS(), ParseSpecial: true})
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, rec.IDsSpecial[i]) {
					t.Errorf("text %d %q with special tokens added:\n got %v\nwant %v", i, text, got, rec.IDsSpecial[i])
				}
				want := text
				if nfcNorm {
					want = o.NFC[i] // what the normalizer made of it
				}
				if back := tk.DecodeAll(rec.IDs[i], true); back != want {
					t.Errorf("text %d %q decodes to %q", i, text, back)
				}
			}
		})
	}
}

// TestSplittersMatchRegex: the hand-written pre-tokenizers cut every
// recorded text exactly where V8 cuts it running the real patterns
// (lookahead included), and llama.cpp's pattern lists (starcoder, default)
// applied in turn.
func TestSplittersMatchRegex(t *testing.T) {
	o := readOracle(t)
	for _, name := range []string{"gpt-2", "llama-bpe", "qwen2", "starcoder", "default"} {
		pre, _, err := preTokenizer(name)
		if err != nil {
			t.Fatal(err)
		}
		want := o.Splits[name]
		if len(want) != len(o.Texts) {
			t.Fatalf("%s: %d splits for %d texts", name, len(want), len(o.Texts))
		}
		for i, text := range o.Texts {
			got := split(pre, text)
			if len(want[i]) == 0 {
				want[i] = nil
			}
			if !slices.Equal(got, want[i]) {
				t.Errorf("%s: text %d %q:\n got %q\nwant %q", name, i, text, got, want[i])
			}
		}
	}
}

// tinyJSON is a small Llama 2 style tokenizer.json (merges with byte
// fallback, Prepend/Replace normalizers, the SentencePiece decoder chain)
// for the fuzz seeds and the unit tests.
const tinyJSON = `{
 "added_tokens": [{"id": 0, "content": "<unk>", "special": true}, {"id": 1, "content": "<s>", "special": true},
  {"id": 2, "content": "</s>", "special": true}, {"id": 12, "content": "<tool>", "special": false, "rstrip": true}],
 "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"},
  {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
 "pre_tokenizer": null,
 "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
  "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
 "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
  {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
 "model": {"type": "BPE", "byte_fallback": true, "unk_token": "<unk>", "fuse_unk": true,
  "vocab": {"<unk>": 0, "<s>": 1, "</s>": 2, "<0x0A>": 3, "<0xC3>": 4, "<0xA9>": 5, "▁": 6, "a": 7, "b": 8, "▁a": 9, "ab": 10, "▁ab": 11},
  "merges": ["▁ a", "a b", "▁ ab", "▁a b"]}
}`

func TestTokenizerJSONTiny(t *testing.T) {
	tk, err := FromJSON([]byte(tinyJSON), []byte(`{"add_eos_token": false, "chat_template": [{"name": "x", "template": "X"}, {"name": "default", "template": "D"}]}`), "tiny")
	if err != nil {
		t.Fatal(err)
	}
	if tk.Kind() != MergesBPE || !tk.AddBOS() || tk.AddEOS() || tk.BOS() != 1 || tk.ChatTemplate() != "D" {
		t.Fatalf("kind %v add_bos %v add_eos %v bos %d template %q", tk.Kind(), tk.AddBOS(), tk.AddEOS(), tk.BOS(), tk.ChatTemplate())
	}
	for _, tc := range []struct {
		text    string
		special bool
		want    []int
	}{
		// "▁ab" by the merges "▁ a" (rank 0) then "▁a b" (rank 3).
		{"ab", false, []int{1, 11}},
		// é has no piece: its UTF-8 bytes C3 A9 by byte fallback; \n is <0x0A>.
		{"aé\n", false, []int{1, 9, 4, 5, 3}},
		// x: neither a piece nor byte pieces: <unk>.
		{"x", false, []int{1, 6, 0}},
		// <tool> is user-defined: matched without ParseSpecial, and it
		// swallows the spaces after it (rstrip); <s> is text unless parsed.
		{"a<tool>  b", false, []int{1, 9, 12, 6, 8}},
		{"<s>", true, []int{1, 1}},
	} {
		got, err := tk.EncodeWith(tc.text, EncodeOptions{BOS: true, ParseSpecial: tc.special})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("Encode(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
	if got := tk.DecodeAll([]int{1, 9, 4, 5, 3, 11}, false); got != "aé\n ab" {
		t.Errorf("DecodeAll = %q", got)
	}
	for _, bad := range []struct{ json, want string }{
		{`{`, "not a tokenizer.json"},
		{`{"model": {"type": "Unigram"}}`, `model type "Unigram"`},
		{`{"model": {"type": "BPE", "vocab": {"a": -1}}}`, "out of range"},
		{`{"model": {"type": "BPE", "vocab": {"a": 4000000}}}`, "ids reach 4000000 but only 1 tokens are defined"},
		{`{"model": {"type": "BPE", "vocab": {"a": 0}}, "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "a(?!b)"}, "behavior": "Isolated"}}`, "Go's regexp cannot run it"},
		{`{"model": {"type": "BPE", "vocab": {"a": 0}}, "pre_tokenizer": {"type": "Whitespace"}}`, `"Whitespace" is not supported`},
		{`{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["ab"]}}`, "not two pieces"},
		{`{"model": {"type": "BPE", "vocab": {"a": 0}, "unk_token": "<unk>"}}`, "unk_token"},
	} {
		if _, err := FromJSON([]byte(bad.json), nil, "bad"); err == nil || !strings.Contains(err.Error(), bad.want) || !strings.HasPrefix(err.Error(), "tokenizer bad: ") {
			t.Errorf("%s: got %v, want %q", bad.json, err, bad.want)
		}
	}
}

// Every refusal of FromJSON is one line that starts with the file's name
// and says which part of tokenizer.json or tokenizer_config.json is wrong.
func TestFromJSONErrors(t *testing.T) {
	const vocab = `"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}}`
	for _, bad := range []struct{ name, json, config, want string }{
		{"dropout", `{"model": {"type": "BPE", "vocab": {"a": 0}, "dropout": 0.1}}`, "", "BPE dropout 0.1 is not supported"},
		{"subword prefix", `{"model": {"type": "BPE", "vocab": {"a": 0}, "continuing_subword_prefix": "##"}}`, "", "continuing_subword_prefix / end_of_word_suffix are not supported"},
		{"word suffix", `{"model": {"type": "BPE", "vocab": {"a": 0}, "end_of_word_suffix": "</w>"}}`, "", "continuing_subword_prefix / end_of_word_suffix are not supported"},
		{"added id", `{` + vocab + `, "added_tokens": [{"id": -2, "content": "x"}]}`, "", `added token id -2 of "x" out of range`},
		{"added content", `{` + vocab + `, "added_tokens": [{"id": 2, "content": ""}]}`, "", "added token 2 has no content"},
		{"shared id", `{"model": {"type": "BPE", "vocab": {"a": 0, "b": 0}}}`, "", "vocab id 0 is used by both"},
		{"empty vocabulary", `{"model": {"type": "BPE", "vocab": {}}}`, "", "empty vocabulary"},
		{"merge pairs", `{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [["a", "b", "c"]]}}`, "", "merge 0 has 3 parts, not 2"},
		{"merge kind", `{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [1]}}`, "", "merges are neither strings nor pairs"},
		{"normalizer", `{` + vocab + `, "normalizer": {"type": "NFKD"}}`, "", `normalizer: "NFKD" is not supported`},
		{"normalizer Replace", `{` + vocab + `, "normalizer": {"type": "Replace", "pattern": {"Regex": " "}, "content": "_"}}`, "", "normalizer: Replace supports only a String pattern"},
		{"Split invert", `{` + vocab + `, "pre_tokenizer": {"type": "Split", "pattern": {"String": " "}, "behavior": "Isolated", "invert": true}}`, "", "Split with invert is not supported"},
		{"Split behavior", `{` + vocab + `, "pre_tokenizer": {"type": "Split", "pattern": {"String": " "}, "behavior": "Removed"}}`, "", `Split behavior "Removed" is not supported (only Isolated)`},
		{"Split pattern", `{` + vocab + `, "pre_tokenizer": {"type": "Split", "pattern": {}, "behavior": "Isolated"}}`, "", "Split without a pattern"},
		{"decoder", `{` + vocab + `, "decoder": {"type": "WordPiece"}}`, "", `decoder: "WordPiece" is not supported`},
		{"decoder Replace", `{` + vocab + `, "decoder": {"type": "Replace", "pattern": {"Regex": "_"}, "content": " "}}`, "", "decoder: Replace supports only a String pattern"},
		{"decoder Strip", `{` + vocab + `, "decoder": {"type": "Strip", "content": " ", "start": 2, "stop": 0}}`, "", "Strip supports only removing one leading character"},
		{"bos token kind", `{` + vocab + `}`, `{"bos_token": 3}`, "tokenizer_config.json: bos_token is neither a string nor a token object"},
		{"bos token", `{` + vocab + `}`, `{"bos_token": "<s>"}`, `tokenizer_config.json: bos_token "<s>" is not in the vocabulary`},
		{"eos token object", `{` + vocab + `}`, `{"eos_token": {"content": "</s>"}}`, `tokenizer_config.json: eos_token "</s>" is not in the vocabulary`},
		{"add_bos", `{` + vocab + `}`, `{"add_bos_token": true}`, "add_bos_token is set but there is no bos_token"},
		{"add_eos", `{` + vocab + `}`, `{"add_eos_token": true}`, "add_eos_token is set but there is no eos_token"},
		{"chat_template", `{` + vocab + `}`, `{"chat_template": 7}`, "chat_template is neither a string nor a list of named templates"},
	} {
		var config []byte
		if bad.config != "" {
			config = []byte(bad.config)
		}
		_, err := FromJSON([]byte(bad.json), config, "bad")
		if err == nil || !strings.Contains(err.Error(), bad.want) || !strings.HasPrefix(err.Error(), "tokenizer bad: ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v, want one line containing %q", bad.name, err, bad.want)
		}
	}
	// The shared vocabulary with a valid config is accepted, so each case
	// fails for the key it changes.
	if _, err := FromJSON([]byte(`{`+vocab+`}`), []byte(`{"bos_token": "a", "eos_token": {"content": "b"}, "add_bos_token": true, "chat_template": "T"}`), "good"); err != nil {
		t.Errorf("valid control: %v", err)
	}
}

// TestMetaspace: a Metaspace pre-tokenizer (TinyLlama, Mistral style)
// writes spaces as ▁, prepends one to the first fragment ("first") or to
// every fragment ("always"), and splits before each ▁.
func TestMetaspace(t *testing.T) {
	for _, tc := range []struct {
		scheme string
		want   []int // "a b<s>a"
		text   string
	}{{"first", []int{3, 6, 1, 2}, "a ba"}, {"always", []int{3, 6, 1, 3}, "a b a"}, {"never", []int{2, 6, 1, 2}, "a ba"}} {
		js := `{"added_tokens": [{"id": 1, "content": "<s>", "special": true}],
 "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "` + tc.scheme + `", "split": true},
 "decoder": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "` + tc.scheme + `"},
 "model": {"type": "BPE", "vocab": {"<unk>": 0, "<s>": 1, "a": 2, "▁a": 3, "▁": 4, "b": 5, "▁b": 6}, "merges": ["▁ a", "▁ b"], "unk_token": "<unk>"}}`
		tk, err := FromJSON([]byte(js), nil, "metaspace")
		if err != nil {
			t.Fatal(err)
		}
		got, err := tk.EncodeWith("a b<s>a", EncodeOptions{ParseSpecial: true})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.scheme, got, tc.want)
		}
		if back := tk.DecodeAll(got, false); back != tc.text {
			t.Errorf("%s: decodes to %q, want %q", tc.scheme, back, tc.text)
		}
	}
}

// vocabOf writes a tokenizer.json tokenizer as the GGUF metadata
// llama.cpp's converter would (tokens, token types, "a b" merges by rank).
func vocabOf(t *testing.T, tk *Tokenizer, pre string) Vocab {
	t.Helper()
	merges := make([]string, len(tk.ranks))
	for k, m := range tk.ranks {
		merges[m.rank] = tk.pieces[k[0]] + " " + tk.pieces[k[1]]
	}
	for i, m := range merges {
		if m == "" {
			t.Fatalf("merge rank %d missing (a merge was skipped at load)", i)
		}
	}
	bos, eos := tk.bos, tk.eos
	return Vocab{Model: "gpt2", Pre: pre, Tokens: tk.pieces, Types: tk.types, Merges: merges,
		BOS: &bos, EOS: &eos, AddBOS: &tk.addBOS, AddEOS: &tk.addEOS}
}

// TestGGUFPreTokenizersOnRealVocabs: the GGUF byte-level path
// (FromVocab with tokenizer.ggml.pre "llama-bpe" and "qwen2") gives
// transformers.js's ids for the Llama 3 and Qwen3 vocabularies, except on
// texts that NFC changes: llama.cpp does not normalize, and neither does
// the GGUF path.
func TestGGUFPreTokenizersOnRealVocabs(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: loading both vocabularies twice is slow under -race; the full run covers it")
	}
	o := readOracle(t)
	for _, tc := range []struct{ name, pre string }{{"llama3", "llama-bpe"}, {"qwen3", "qwen2"}} {
		t.Run(tc.pre, func(t *testing.T) {
			js := npmTokenizer(t, tc.name)
			tk, err := FromVocab(vocabOf(t, js, tc.pre))
			if err != nil {
				t.Fatal(err)
			}
			if tk.ignoreMerges != (tc.pre == "llama-bpe") {
				t.Fatalf("ignore_merges %v for %s", tk.ignoreMerges, tc.pre)
			}
			n := 0
			for i, text := range o.Texts {
				if o.NFC[i] != text {
					continue
				}
				got, err := tk.EncodeWith(text, EncodeOptions{ParseSpecial: true})
				if err != nil {
					t.Fatal(err)
				}
				if want := o.Tokenizers[tc.name].IDs[i]; !slices.Equal(got, want) {
					t.Errorf("text %d %q:\n got %v\nwant %v", i, text, got, want)
				}
				n++
			}
			if n < 60 {
				t.Fatalf("only %d texts compared", n)
			}
		})
	}
}
