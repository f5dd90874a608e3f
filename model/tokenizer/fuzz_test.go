package tokenizer

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The seeds of each fuzz target, also committed under testdata/fuzz/
// (TestFuzzCorpusCurrent keeps the two equal; STRIDE_WRITE_FUZZ_CORPUS=1
// rewrites the files).
var fuzzSeeds = map[string]map[string][]any{
	"FuzzFromJSON": {
		"tiny": {[]byte(tinyJSON), []byte(`{"add_bos_token": true}`), "ab aé<tool> x"},
		"bytelevel": {[]byte(`{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "Ġ": 3}, "merges": [["a", "b"]]},
 "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": true}}`), []byte(nil), "ab ab"},
		"split-regex": {[]byte(`{"model": {"type": "BPE", "vocab": {"a": 0, "1": 1}, "merges": []},
 "pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "\\p{N}"}, "behavior": "Isolated"},
  {"type": "Digits", "individual_digits": true}, {"type": "Metaspace", "replacement": "▁", "split": true}]}}`), []byte(nil), "a1 a"},
		"added": {[]byte(`{"model": {"vocab": {"x": 3}}, "added_tokens": [{"id": 9, "content": "<|e|>", "special": true, "lstrip": true}]}`),
			[]byte(`{"bos_token": {"content": "x"}, "eos_token": "<|e|>", "chat_template": "{{ x }}"}`), "x <|e|>x"},
		"replace-growth": {[]byte(`{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "normalizer": {"type": "Sequence", "normalizers": [
 {"type": "Replace", "pattern": {"String": "a"}, "content": "aaaa"}, {"type": "Replace", "pattern": {"String": "a"}, "content": "aaaa"},
 {"type": "Replace", "pattern": {"String": "a"}, "content": "aaaa"}, {"type": "Replace", "pattern": {"String": "a"}, "content": "aaaa"}]}}`), []byte(nil), "aaaa"},
		"replace-empty": {[]byte(`{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "normalizer": {"type": "Replace", "pattern": {"String": ""}, "content": "a"}}`), []byte(nil), "aa"},
		"nfc-lower-metaspace": {[]byte(`{"model": {"type": "BPE", "vocab": {"a": 0, "▁": 1}, "merges": []}, "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Lowercase"}]},
 "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": true}}`), []byte(nil), "A\u0301 a"},
	},
	"FuzzSplit": {
		"empty": {""}, "hello": {"Hello world"}, "spaces": {"  a\n\n b\t \r\n"}, "contractions": {"I'm 12345 OK'S?!"},
		"bad-utf8": {"\xff\x80é"}, "cjk-emoji": {"你好 😀 ½ ٣"},
	},
	"FuzzEncode": {
		"empty": {""}, "words": {"the abc"}, "cjk": {"你好 world"}, "emoji": {"😀!"}, "bad-utf8": {"\xff\x80a"},
		"story": {"Once upon a time, Lily"},
	},
}

func addSeeds(f *testing.F, name string) {
	for _, args := range fuzzSeeds[name] {
		f.Add(args...)
	}
}

// corpusFile renders a seed in the go test fuzz v1 corpus format.
func corpusFile(args []any) []byte {
	var b strings.Builder
	b.WriteString("go test fuzz v1\n")
	for _, a := range args {
		switch v := a.(type) {
		case []byte:
			fmt.Fprintf(&b, "[]byte(%s)\n", strconv.Quote(string(v)))
		case string:
			fmt.Fprintf(&b, "string(%s)\n", strconv.Quote(v))
		default:
			panic(fmt.Sprintf("seed type %T", a))
		}
	}
	return []byte(b.String())
}

func TestFuzzCorpusCurrent(t *testing.T) {
	for target, seeds := range fuzzSeeds {
		dir := filepath.Join("testdata", "fuzz", target)
		if os.Getenv("STRIDE_WRITE_FUZZ_CORPUS") == "1" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for name, args := range seeds {
				if err := os.WriteFile(filepath.Join(dir, name), corpusFile(args), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		for name, args := range seeds {
			got, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil || string(got) != string(corpusFile(args)) {
				t.Errorf("%s seed %s missing or stale (regenerate with STRIDE_WRITE_FUZZ_CORPUS=1 go test -run TestFuzzCorpusCurrent)", target, name)
			}
		}
	}
}

// FuzzFromJSON: any tokenizer.json (and config) either gives an error
// naming the file or a tokenizer whose ids stay inside its vocabulary.
func FuzzFromJSON(f *testing.F) {
	addSeeds(f, "FuzzFromJSON")
	f.Fuzz(func(t *testing.T, tj, cj []byte, text string) {
		if len(tj) > 1<<16 {
			return
		}
		tk, err := FromJSON(tj, cj, "fuzz")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "tokenizer fuzz: ") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		for _, ps := range []bool{false, true} {
			ids, err := tk.EncodeWith(text, EncodeOptions{ParseSpecial: ps})
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

// FuzzSplit: every pre-tokenizer cuts any text into non-empty pieces that
// concatenate back to it.
func FuzzSplit(f *testing.F) {
	addSeeds(f, "FuzzSplit")
	var pres [][]splitter
	for _, name := range []string{"gpt-2", "llama-bpe", "qwen2", "starcoder", "default"} {
		pre, _, err := preTokenizer(name)
		if err != nil {
			f.Fatal(err)
		}
		pres = append(pres, pre)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for k, pre := range pres {
			pieces := split(pre, s)
			if strings.Join(pieces, "") != s {
				t.Fatalf("pre %d: %q does not rejoin to %q", k, pieces, s)
			}
			if slices.Contains(pieces, "") {
				t.Fatalf("pre %d: empty piece in %q", k, pieces)
			}
		}
	})
}

func FuzzEncode(f *testing.F) {
	addSeeds(f, "FuzzEncode")
	// The fuzzer runs on tok512 when the shared fixtures are present and on
	// the synthetic vocabulary otherwise, rather than skipping.
	var tk *Tokenizer
	if dir, _ := findShared(); dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "models", "tok512.bin")); err == nil {
			tk = readBin(f, "models/tok512.bin", 512)
		}
	}
	if tk == nil {
		tk = synthTokenizer(f)
	}
	ref := newRefTok(tk)
	f.Fuzz(func(t *testing.T, text string) {
		got, err := tk.Encode(text, true, false)
		if err != nil {
			t.Fatal(err)
		}
		if want := ref.encode(text, true, false); !slices.Equal(got, want) {
			t.Fatalf("Encode(%q) = %v, reference %v", text, got, want)
		}
		// Decoding restores the text unless the text spells a byte piece
		// ("<0x41>") or BOS's piece, which SentencePiece decodes as such too.
		if !strings.Contains(text, "<0x") && !slices.Contains(got[1:], BOSID) {
			if back := decodeAll(tk, got); back != text {
				t.Fatalf("Decode(Encode(%q)) = %q", text, back)
			}
		}
	})
}
