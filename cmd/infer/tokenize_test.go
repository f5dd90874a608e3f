package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// vocabVectors reads llama.cpp's tokenizer vectors for vocab name: the
// texts and their ids without BOS (the oracle of these CLI tests).
func vocabVectors(t *testing.T, name string) (gguf string, texts []string, ids [][]int) {
	t.Helper()
	dir := filepath.Join(filepath.Dir(sharedModels(t)), "tokenizers", "llama.cpp-vocab")
	gguf = filepath.Join(dir, "ggml-vocab-"+name+".gguf")
	inp, err := os.ReadFile(gguf + ".inp")
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(gguf + ".out")
	if err != nil {
		t.Fatal(err)
	}
	texts = strings.Split(string(inp), "\n__ggml_vocab_test__\n")
	texts = texts[:len(texts)-1]
	for _, l := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		var row []int
		for _, f := range strings.Fields(l) {
			id, _ := strconv.Atoi(f)
			row = append(row, id)
		}
		ids = append(ids, row)
	}
	if len(ids) != len(texts) {
		t.Fatalf("%d texts, %d id lines", len(texts), len(ids))
	}
	return gguf, texts, ids
}

func idLine(ids []int) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(id)
	}
	return strings.Join(s, " ") + "\n"
}

// TestTokenizeVocabVectors: infer tokenize prints llama.cpp's ids for its
// vocab test texts, given as the argument and on stdin, with BOS as the
// file asks (llama-spm adds it, gpt-2 does not), and --no-bos leaves it
// out; --detokenize prints the text back.
func TestTokenizeVocabVectors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		bos   []int
		every int // the gpt-2 vocabulary takes longer to build: every third text
	}{{"llama-spm", []int{1}, 1}, {"gpt-2", nil, 3}} {
		gguf, texts, want := vocabVectors(t, tc.name)
		if testing.Short() {
			tc.every = 6 // the model/gguf table test checks every vector
		}
		for i, text := range texts {
			if text == "" || i%tc.every != 0 {
				continue // the empty text is the vocab tests' (model/gguf)
			}
			code, out, errs := cli(t, "tokenize", "--tokenizer", gguf, text)
			if code != 0 {
				t.Fatalf("%s text %d: exit %d: %s", tc.name, i, code, errs)
			}
			if w := idLine(append(slices.Clone(tc.bos), want[i]...)); out != w {
				t.Errorf("%s text %d %q: printed %q, want %q", tc.name, i, text, out, w)
			}
			code, out, _ = cliIn(t, text, "tokenize", "--tokenizer", gguf, "--no-bos")
			if w := idLine(want[i]); code != 0 || out != w {
				t.Errorf("%s text %d on stdin --no-bos: exit %d, %q, want %q", tc.name, i, code, out, w)
			}
			code, out, _ = cli(t, "tokenize", "--tokenizer", gguf, "--detokenize", strings.TrimSpace(idLine(want[i])))
			if code != 0 || out != text+"\n" {
				t.Errorf("%s text %d --detokenize: exit %d, %q, want %q", tc.name, i, code, out, text+"\n")
			}
		}
	}
}

// TestTokenizeJSONAndSpecial: --output json gives the ids and the raw
// pieces; special tokens are text unless --parse-special; stdin is read
// verbatim (the newline is a token).
func TestTokenizeJSONAndSpecial(t *testing.T) {
	gguf, _, _ := vocabVectors(t, "llama-spm")
	code, out, errs := cli(t, "tokenize", "--tokenizer", gguf, "--output", "json", "Hello world")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var got struct {
		IDs    []int    `json:"ids"`
		Pieces []string `json:"pieces"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	// "Hello world" is text 11 of the vectors: 15043 3186 (▁Hello ▁world).
	if !slices.Equal(got.IDs, []int{1, 15043, 3186}) || !slices.Equal(got.Pieces, []string{"<s>", "▁Hello", "▁world"}) {
		t.Fatalf("json: %+v", got)
	}
	if !strings.Contains(out, `"<s>"`) {
		t.Fatalf("pieces are HTML-escaped: %s", out)
	}
	_, plain, _ := cli(t, "tokenize", "--tokenizer", gguf, "--no-bos", "<s>")
	_, parsed, _ := cli(t, "tokenize", "--tokenizer", gguf, "--no-bos", "--parse-special", "<s>")
	if parsed != "1\n" || plain == parsed || strings.Fields(plain)[0] == "1" {
		t.Fatalf("<s> as text: %q, parsed: %q", plain, parsed)
	}
	_, withNL, _ := cliIn(t, "Hello world\n", "tokenize", "--tokenizer", gguf)
	if withNL != "1 15043 3186 13\n" { // 13 = <0x0A>
		t.Fatalf("stdin with a newline: %q", withNL)
	}
	// --detokenize prints control tokens only with --parse-special.
	if _, o, _ := cli(t, "tokenize", "--tokenizer", gguf, "--detokenize", "[1, 15043, 3186, 2]"); o != "Hello world\n" {
		t.Fatalf("detokenize: %q", o)
	}
	if _, o, _ := cli(t, "tokenize", "--tokenizer", gguf, "--detokenize", "--parse-special", "1 15043 3186 2"); o != "<s>Hello world</s>\n" {
		t.Fatalf("detokenize --parse-special: %q", o)
	}
}

// TestTokenizeFormats: the same command reads a llama2.c tokenizer.bin
// (no magic), a GGUF checkpoint's embedded vocabulary, and refuses a
// llama2.c checkpoint without --tokenizer.
func TestTokenizeFormats(t *testing.T) {
	models := sharedModels(t)
	_, bin, errs := cli(t, "tokenize", "--tokenizer", filepath.Join(models, "tok512.bin"), "Once upon a time")
	_, gg, _ := cli(t, "tokenize", "--checkpoint", filepath.Join(models, "gguf", "stories260K-f32.gguf"), "Once upon a time")
	if bin == "" || bin != gg || !strings.HasPrefix(bin, "1 ") {
		t.Fatalf("tok512.bin %q (%s) vs the GGUF's vocab %q", bin, errs, gg)
	}
	code, _, errs := cli(t, "tokenize", "--checkpoint", filepath.Join(models, "stories260K.bin"), "x")
	if code != 1 || !strings.Contains(errs, "carries no tokenizer") {
		t.Fatalf("llama2.c checkpoint alone: exit %d, %q", code, errs)
	}
	code, _, errs = cli(t, "tokenize", "--checkpoint", filepath.Join(models, "stories260K.bin"),
		"--tokenizer", filepath.Join(models, "tok512.bin"), "Once upon a time")
	if code != 0 {
		t.Fatalf("with --tokenizer: exit %d, %s", code, errs)
	}
}

func TestTokenizeErrors(t *testing.T) {
	models := sharedModels(t)
	tok := filepath.Join(models, "tok512.bin")
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"tokenize", "x"}, "needs --tokenizer FILE or --checkpoint FILE"},
		{[]string{"tokenize", "--tokenizer", tok, "--detokenize", "1 512"}, "512 is outside the 512-token vocabulary"},
		{[]string{"tokenize", "--tokenizer", tok, "--detokenize", "1 x"}, `"x" is not an integer`},
		{[]string{"tokenize", "--tokenizer", fifo, "x"}, "not a regular file"},
		{[]string{"tokenize", "--tokenizer", filepath.Join(models, "none.bin"), "x"}, "none.bin"},
		{[]string{"tokenize", "--tokenizer", tok, "--output", "xml", "x"}, "xml"},
		{[]string{"tokenize", "--tokenizer", tok, "a", "b"}, "accepts at most 1 arg"},
	} {
		code, out, errs := cli(t, tc.args...)
		if code != 1 || out != "" || !strings.Contains(errs, tc.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want one line with %q", tc.args, code, out, errs, tc.want)
		}
	}
}

// TestTokenizeTokenizerJSON: a tokenizer.json directory (the npm fixture
// of scripts/fetch-test-tokenizers.sh) works as for GGUF.
func TestTokenizeTokenizerJSON(t *testing.T) {
	dir := filepath.Join("..", "..", "model", "tokenizer", "testdata", "npm", "qwen3", "models")
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but %v", err)
		}
		t.Skipf("skipping: %v (run scripts/fetch-test-tokenizers.sh)", err)
	}
	// Qwen3 adds no BOS; "Hello world" is 9707 1879 in transformers.js's
	// recording (model/tokenizer/testdata/transformersjs.json).
	code, out, errs := cli(t, "tokenize", "--tokenizer", dir, "Hello world")
	if code != 0 || out != "9707 1879\n" {
		t.Fatalf("exit %d, %q, %s", code, out, errs)
	}
	code, out, _ = cli(t, "tokenize", "--tokenizer", filepath.Join(dir, "tokenizer.json"), "--parse-special", "<|im_start|>user")
	if code != 0 || !strings.HasPrefix(out, "151644 ") {
		t.Fatalf("special token: exit %d, %q", code, out)
	}
}
