package llama2c

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stride-lm/stride/tensor/testfixture"
)

// tokBinFile builds a tokenizer.bin: int32 max_token_length, then per piece
// float32 score, int32 length, bytes.
func tokBinFile(maxLen int32, pieces []string, scores []float32) []byte {
	var b bytes.Buffer
	le := binary.LittleEndian
	binary.Write(&b, le, maxLen)
	for i, p := range pieces {
		binary.Write(&b, le, scores[i])
		binary.Write(&b, le, int32(len(p)))
		b.WriteString(p)
	}
	return b.Bytes()
}

// tokSynthVocab is a small Llama-style vocabulary: the 3 specials, the 256
// byte pieces, then single characters and merges with rising scores.
func tokSynthVocab() ([]string, []float32) {
	pieces := []string{"<unk>", "\n<s>\n", "\n</s>\n"}
	for b := 0; b < 256; b++ {
		pieces = append(pieces, fmt.Sprintf("<0x%02X>", b))
	}
	scores := make([]float32, len(pieces))
	extra := []string{" ", "t", "h", "e", "a", "b", "c", "é", "你", "好", "th", "he", " t", " a", "ab",
		"the", " the", "abc", " ab", "你好", "  ", "é!", "!"}
	for i, p := range extra {
		pieces = append(pieces, p)
		scores = append(scores, float32(-len(extra)+i+len(p)))
	}
	return pieces, scores
}

func TestLoadTokenizerErrors(t *testing.T) {
	pieces, scores := tokSynthVocab()
	good := tokBinFile(8, pieces, scores)
	n := len(pieces)
	with := func(off int, v int32) []byte {
		out := append([]byte(nil), good...)
		binary.LittleEndian.PutUint32(out[off:], uint32(v))
		return out
	}
	// Byte offset of piece 3's length field: header 4, then pieces 0..2.
	lenOff := 4 + (8 + len(pieces[0])) + (8 + len(pieces[1])) + (8 + len(pieces[2])) + 4
	for _, tc := range []struct {
		name  string
		data  []byte
		vocab int
		want  string
	}{
		{"empty", nil, n, "cannot read max_token_length"},
		{"fewer entries than vocab", good, n + 1, fmt.Sprintf("file ends after %d pieces, but the model's vocab_size is %d", n, n+1)},
		{"more entries than vocab", good, n - 1, "more pieces than the model's vocab_size"},
		{"negative piece length", with(lenOff, -5), n, "piece 3: length -5 out of range"},
		{"piece longer than max", with(lenOff, 9), n, "piece 3: length 9 out of range"},
		{"huge piece length", with(lenOff, math.MaxInt32), n, "out of range"},
		{"zero max length", with(0, 0), n, "max_token_length 0 out of range"},
		{"negative max length", with(0, -1), n, "max_token_length -1 out of range"},
		{"absurd max length", with(0, 1<<30), n, "max_token_length 1073741824 out of range"},
		{"truncated in a piece", good[:lenOff+6], n, "piece 3: cannot read its 6 bytes"},
		{"truncated in a length", good[:lenOff+2], n, "piece 3: cannot read its length"},
		{"zero vocab", good, 0, "vocab size 0 out of range"},
		{"negative vocab", good, -3, "vocab size -3 out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadTokenizer(bytes.NewReader(tc.data), tc.vocab, "tok.bin")
			if err == nil || !strings.HasPrefix(err.Error(), "tokenizer tok.bin: ") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
	// The shared tokenizers with the wrong model vocabulary.
	path := tokSharedFile(t, "models/tok512.bin")
	if _, err := LoadTokenizer(path, 32000); err == nil || !strings.Contains(err.Error(), "ends after 512 pieces") {
		t.Fatalf("tok512 as 32000: %v", err)
	}
	if _, err := LoadTokenizer(path, 511); err == nil || !strings.Contains(err.Error(), "more pieces") {
		t.Fatalf("tok512 as 511: %v", err)
	}
	if _, err := LoadTokenizer(filepath.Join(t.TempDir(), "none.bin"), 512); err == nil || !strings.Contains(err.Error(), "none.bin") {
		t.Fatalf("missing file: %v", err)
	}
}

// tokFuzzSeeds are FuzzTokenizerRead's seeds, also committed under
// testdata/fuzz/FuzzTokenizerRead (TestTokenizerFuzzCorpusCurrent keeps
// them equal; STRIDE_WRITE_FUZZ_CORPUS=1 rewrites the files).
func tokFuzzSeeds() map[string][]byte {
	pieces, scores := tokSynthVocab()
	return map[string][]byte{
		"synth":       tokBinFile(8, pieces, scores),
		"small":       tokBinFile(5, []string{"<unk>", "<s>", "</s>", " ", "a"}, []float32{0, 0, 0, 0, 1}),
		"empty":       {},
		"huge-length": {1, 0, 0, 0, 0, 0, 0, 0, 255, 255, 255, 255},
	}
}

func TestTokenizerFuzzCorpusCurrent(t *testing.T) {
	pieces, _ := tokSynthVocab()
	vocab := map[string]uint16{"synth": uint16(len(pieces)), "small": 5, "empty": 1, "huge-length": 1}
	want := map[string][]byte{}
	for name, data := range tokFuzzSeeds() {
		want[name] = testfixture.CorpusEntry(data, vocab[name])
	}
	testfixture.CheckCorpus(t, filepath.Join("testdata", "fuzz", "FuzzTokenizerRead"), want, "TestTokenizerFuzzCorpusCurrent")
}

// FuzzTokenizerRead: any bytes give a clear error naming the file or a
// tokenizer of exactly the asked size whose ids stay in the vocabulary;
// reading to the end of the file (infer tokenize) never panics either.
func FuzzTokenizerRead(f *testing.F) {
	pieces, _ := tokSynthVocab()
	f.Add(tokFuzzSeeds()["synth"], uint16(len(pieces)))
	f.Add(tokFuzzSeeds()["small"], uint16(5))
	f.Add(tokFuzzSeeds()["empty"], uint16(1))
	f.Add(tokFuzzSeeds()["huge-length"], uint16(1))
	f.Fuzz(func(t *testing.T, data []byte, vocab uint16) {
		if all, err := readTokenizer(bytes.NewReader(data), -1, "fuzz"); err == nil {
			_, _ = all.Encode(string(data[:min(len(data), 16)]), true, false)
		} else if !strings.HasPrefix(err.Error(), "tokenizer fuzz: ") {
			t.Fatalf("error without the file name: %v", err)
		}
		tk, err := ReadTokenizer(bytes.NewReader(data), int(vocab), "fuzz")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "tokenizer fuzz: ") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		if tk.VocabSize() != int(vocab) {
			t.Fatalf("read %d pieces, asked for %d", tk.VocabSize(), vocab)
		}
		text := string(data[:min(len(data), 24)])
		toks, err := tk.Encode(text, true, true)
		if err != nil {
			return // a vocabulary too small for byte fallback
		}
		for i, id := range toks {
			if id < 0 || id >= tk.VocabSize() {
				t.Fatalf("token %d = %d outside the vocabulary", i, id)
			}
			_ = tk.Decode(max(i-1, 0), id)
		}
	})
}

// TestReadTokenizerGolden reads tok512.bin through the file reader and
// decodes run.c's golden ids with it into the text run.c printed.
func TestReadTokenizerGolden(t *testing.T) {
	tk, err := LoadTokenizer(tokSharedFile(t, "models/tok512.bin"), 512)
	if err != nil {
		t.Fatal(err)
	}
	txt, err := os.ReadFile(tokSharedFile(t, "models/golden/stories260K.greedy.txt"))
	if err != nil {
		t.Fatal(err)
	}
	prev := 1
	var sb strings.Builder
	for _, id := range testfixture.Ints(t, "models/golden/stories260K.greedy.ids") {
		sb.WriteString(tk.Decode(prev, id))
		prev = id
	}
	if got := sb.String() + "\n"; got != string(txt) {
		t.Fatalf("decoded golden ids:\n%q\nrun.c printed:\n%q", got, txt)
	}
	// A prompt encodes BOS first and decodes back to itself.
	ids, err := tk.Encode("Once upon a time", true, false)
	if err != nil || ids[0] != 1 || slices.Contains(ids[1:], 1) {
		t.Fatalf("Encode = %v, %v", ids, err)
	}
	sb.Reset()
	for i := 1; i < len(ids); i++ {
		sb.WriteString(tk.Decode(ids[i-1], ids[i]))
	}
	if sb.String() != "Once upon a time" {
		t.Fatalf("round trip gave %q", sb.String())
	}
}

// tokSharedFile returns a shared fixture's path, skipping with the reason
// when absent (failing under CI=true).
func tokSharedFile(t testing.TB, rel string) string {
	t.Helper()
	dir := os.Getenv("STRIDE_SHARED")
	if dir == "" {
		wd, _ := os.Getwd()
		for d := wd; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				dir = filepath.Join(filepath.Dir(d), "shared")
				break
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if _, err := os.Stat(p); dir == "" || err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but shared fixture %s is missing", p)
		}
		t.Skipf("skipping: shared fixture %s not available", p)
	}
	return p
}

// TestLoadTokenizerNotAFile: a FIFO (which a plain open would block on
// forever) or a directory as the tokenizer is one clear error at once.
func TestLoadTokenizerNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "tok.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFO: %v", err)
	}
	for path, want := range map[string]string{fifo: "a named pipe", dir: "a directory"} {
		done := make(chan error, 2)
		go func() {
			_, err := LoadTokenizer(path, 512)
			done <- err
			_, err = LoadTokenizerFile(path)
			done <- err
		}()
		for k := 0; k < 2; k++ {
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "not a regular file ("+want+")") || !strings.HasPrefix(err.Error(), "tokenizer "+path+": ") {
					t.Errorf("%s: got %v", path, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: open blocked", path)
			}
		}
	}
}
