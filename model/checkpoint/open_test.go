package checkpoint_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/checkpoint"
	"github.com/stride-lm/stride/model/checkpoint/stories260k"
	"github.com/stride-lm/stride/model/internal/formattest"
	"github.com/stride-lm/stride/model/tokenizer"
	"github.com/stride-lm/stride/tensor/testfixture"
)

// The embedded files are llama2.c's, byte for byte: their sha256 are the
// ones the shared fixtures' README records for the downloaded originals.
func TestBuiltInFilesAreLlama2c(t *testing.T) {
	for _, f := range []struct {
		name, sum string
		data      []byte
	}{
		{"stories260K.bin", "b0a507e7ad0f626624f17112325e66691f9076d622e1d3274d103d00299f2696", stories260k.Checkpoint},
		{"tok512.bin", "037cb335abb25d1fa9e8ecae30ed2a3a8ace9302862ebcdc05d51a6bbb10c312", stories260k.Tokenizer},
	} {
		if h := sha256.Sum256(f.data); hex.EncodeToString(h[:]) != f.sum {
			t.Errorf("%s: sha256 %x, want %s", f.name, h, f.sum)
		}
	}
}

// Open("") is the built-in stories260K with tok512, and greedy generation
// from BOS gives run.c's golden ids, which its tokenizer decodes to run.c's
// printed story.
func TestOpenEmptyPathIsStories260K(t *testing.T) {
	golden := testfixture.Ints(t, "models/golden/stories260K.greedy.ids")
	text, err := os.ReadFile(testfixture.File(t, "models/golden/stories260K.greedy.txt"))
	if err != nil {
		t.Fatal(err)
	}
	ck, err := checkpoint.Open("", checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g := ck.Generation
	if ck.Kind != checkpoint.Llama2c || g.BOS != model.BOSID || !g.AddBOS || g.StopTokens != nil || g.GGML || g.ChatTemplate != "" {
		t.Fatalf("kind %v, generation %+v: want llama2.c, BOS 1 added, run.c's stop rule", ck.Kind, g)
	}
	m, err := ck.Load()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if c := m.Config; c.Dim != 64 || c.NLayers != 5 || c.NHeads != 8 || c.NKVHeads != 4 || c.VocabSize != 512 {
		t.Fatalf("config %+v is not stories260K's", c)
	}
	got := formattest.Generate(t, m, []int{g.BOS}, len(golden), 0, 0.9, 1, g.StopTokens)
	if !slices.Equal(got, golden) {
		t.Fatalf("greedy ids\n got %v\nwant %v", got, golden)
	}
	var b strings.Builder
	prev := g.BOS
	for _, id := range golden {
		b.WriteString(ck.Tokenizer.Decode(prev, id))
		prev = id
	}
	// run.c prints a newline after the last token.
	if want := strings.TrimSuffix(string(text), "\n"); b.String() != want {
		t.Fatalf("decoded story\n got %q\nwant %q", b.String(), want)
	}
}

// A llama2.c checkpoint without a tokenizer gets the byte codec, and an
// explicit Tokenizer wins; Close releases an unloaded checkpoint, and Load
// twice is an error instead of a second owner of the file.
func TestOpenTokenizerChoice(t *testing.T) {
	path := testfixture.File(t, "models/stories260K.bin")
	ck, err := checkpoint.Open(path, checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ck.Tokenizer.(*tokenizer.Bytes); !ok {
		t.Fatalf("tokenizer %T, want the byte codec", ck.Tokenizer)
	}
	if err := ck.Close(); err != nil {
		t.Fatal(err)
	}
	ck, err = checkpoint.Open(path, checkpoint.Options{Tokenizer: testfixture.File(t, "models/tok512.bin")})
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	ids, err := ck.Tokenizer.Encode("Once upon a time", ck.Generation.AddBOS, false)
	if err != nil {
		t.Fatal(err)
	}
	// run.c's first four story tokens are "Once upon a time".
	golden := testfixture.Ints(t, "models/golden/stories260K.greedy.ids")
	if want := append([]int{model.BOSID}, golden[:4]...); !slices.Equal(ids, want) {
		t.Fatalf("ids %v, want %v", ids, want)
	}
	m, err := ck.Load()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := ck.Load(); err == nil || !strings.Contains(err.Error(), "already loaded") {
		t.Fatalf("second Load: %v", err)
	}
}

// TokenizerOf opens the vocabulary a GGUF checkpoint carries, the same
// ids as its full Open, and refuses a llama2.c
// checkpoint, which carries none, with ErrNoTokenizer.
func TestTokenizerOf(t *testing.T) {
	for _, p := range []string{"models/gguf/stories260K-q8_0.gguf", "models/gguf/stories260K-f32.gguf"} {
		path := testfixture.File(t, p)
		tk, err := checkpoint.TokenizerOf(path)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		ck, err := checkpoint.Open(path, checkpoint.Options{})
		if err != nil {
			t.Fatal(err)
		}
		want, err := ck.Tokenizer.Encode("Once upon a time", true, false)
		ck.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got, err := tk.Encode("Once upon a time", true, false); err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: TokenizerOf encodes %v (%v), Open's tokenizer %v", p, got, err, want)
		}
	}
	bin := testfixture.File(t, "models/stories260K.bin")
	_, err := checkpoint.TokenizerOf(bin)
	if !errors.Is(err, checkpoint.ErrNoTokenizer) || !strings.Contains(err.Error(), bin) {
		t.Errorf("llama2.c checkpoint: %v, want ErrNoTokenizer naming it", err)
	}
}

// The GGUF and Hugging Face checkpoints report their stop ids, and run
// as stored only when asked.
func TestOpenGenerationPerFormat(t *testing.T) {
	gg := testfixture.File(t, "models/gguf/stories260K-q8_0.gguf")
	for _, asStored := range []bool{false, true} {
		ck, err := checkpoint.Open(gg, checkpoint.Options{AsStored: asStored})
		if err != nil {
			t.Fatal(err)
		}
		g := ck.Generation
		if ck.Kind != checkpoint.GGUF || !g.GGML || g.StopTokens == nil || g.BOS != 1 || !g.AddBOS {
			t.Errorf("gguf: kind %v generation %+v", ck.Kind, g)
		}
		if (g.StoredTypes != "") != asStored || (asStored && !strings.Contains(g.StoredTypes, "Q8_0")) {
			t.Errorf("gguf AsStored=%v: stored types %q", asStored, g.StoredTypes)
		}
		ck.Close()
	}
	ck, err := checkpoint.Open(testfixture.File(t, "models/hf/stories260K"), checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	if ck.Kind != checkpoint.Dir || ck.Generation.GGML || ck.Generation.StopTokens == nil {
		t.Errorf("hf: kind %v generation %+v", ck.Kind, ck.Generation)
	}
}

// Sniff tells the kinds apart by content; the one sniffer serves Open,
// OpenTokenizer and the CLI.
func TestSniff(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []struct {
		data string
		want checkpoint.Kind
	}{{"GGUF\x03\x00\x00\x00", checkpoint.GGUF}, {"  \n{\"model\":{}}", checkpoint.JSON}, {"\x40\x00\x00\x00", checkpoint.Llama2c}, {"", checkpoint.Llama2c}} {
		p := dir + "/f"
		if err := os.WriteFile(p, []byte(f.data), 0o644); err != nil {
			t.Fatal(err)
		}
		if k, err := checkpoint.Sniff(p); err != nil || k != f.want {
			t.Errorf("%q: %v %v, want %v", f.data, k, err, f.want)
		}
	}
	if k, err := checkpoint.Sniff(dir); err != nil || k != checkpoint.Dir {
		t.Errorf("dir: %v %v", k, err)
	}
	if _, err := checkpoint.Sniff(dir + "/missing"); err == nil {
		t.Error("missing file: no error")
	}
}
