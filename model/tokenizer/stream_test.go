package tokenizer

import (
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// chunkyReader returns its text in reads of random sizes, so that window
// edges fall anywhere.
type chunkyReader struct {
	s string
	r *rand.Rand
}

func (c *chunkyReader) Read(p []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 1+c.r.IntN(9000))], c.s)
	c.s = c.s[n:]
	return n, nil
}

// streamCorpus joins the oracle's texts (every script, emoji, code,
// whitespace runs, special-token spellings) with assorted separators
// into about n bytes.
func streamCorpus(t *testing.T, n int) string {
	o := readOracle(t)
	texts := append(o.Texts, "<|im_start|>user\nhi<|im_end|>", "<s> </s> <unk>", "<|eot_id|>\n\nx", "  \n\n  x\ty")
	seps := []string{"\n", "\n\n", " ", "  \n", "\t", "", " \n ", "\r\n", "\nA", "\né", ". ", "\n   "}
	r := rand.New(rand.NewPCG(3, 4))
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(texts[r.IntN(len(texts))])
		b.WriteString(seps[r.IntN(len(seps))])
	}
	return b.String()
}

// streamAll returns the concatenated parts of a stream and their count.
func streamAll(t *testing.T, s *Stream) ([]int, int) {
	t.Helper()
	var all []int
	parts := 0
	for {
		ids, err := s.Next()
		if errors.Is(err, io.EOF) {
			return all, parts
		}
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, ids...)
		parts++
	}
}

// A Stream gives exactly EncodeWith's ids of the whole text, for every
// kind of tokenizer (run.c's, SentencePiece, byte-level BPE from a GGUF
// vocabulary and from tokenizer.json, with their pre-tokenizers and
// normalizers), with and without BOS, EOS and special-token parsing,
// while cutting the text into several parts.
func TestStreamMatchesWholeText(t *testing.T) {
	text := streamCorpus(t, 5*streamWindow)
	toks := map[string]func(*testing.T) *Tokenizer{
		"synthetic-runc": func(t *testing.T) *Tokenizer { return synthTokenizer(t) },
		"tok512":         func(t *testing.T) *Tokenizer { return loadShared(t, "tok512.bin", 512) },
		"llama2":         func(t *testing.T) *Tokenizer { return loadShared(t, "tokenizer.bin", 32000) },
		"llama3":         func(t *testing.T) *Tokenizer { return npmTokenizer(t, "llama3") },
		"qwen3":          func(t *testing.T) *Tokenizer { return npmTokenizer(t, "qwen3") },
		"llama3-gguf": func(t *testing.T) *Tokenizer {
			tk, err := FromVocab(vocabOf(t, npmTokenizer(t, "llama3"), "llama-bpe"))
			if err != nil {
				t.Fatal(err)
			}
			return tk
		},
	}
	opts := []EncodeOptions{{BOS: true}, {BOS: true, EOS: true, ParseSpecial: true}, {}}
	for name, load := range toks {
		t.Run(name, func(t *testing.T) {
			tk := load(t)
			for _, o := range opts {
				if (o.BOS && tk.BOS() < 0) || (o.EOS && tk.EOS() < 0) {
					continue
				}
				want, err := tk.EncodeWith(text, o)
				if err != nil {
					t.Fatal(err)
				}
				got, parts := streamAll(t, tk.NewStream(&chunkyReader{text, rand.New(rand.NewPCG(1, 2))}, o))
				if parts < 4 {
					t.Errorf("%+v: %d parts; %d bytes should be cut at least 3 times", o, parts, len(text))
				}
				if !slices.Equal(got, want) {
					i := 0
					for i < min(len(got), len(want)) && got[i] == want[i] {
						i++
					}
					t.Errorf("%+v: %d ids streamed, %d whole; first difference at id %d", o, len(got), len(want), i)
				}
			}
		})
	}
}

// Short texts (no cut) and the empty text stream as they encode whole;
// a byte codec's stream is its Encode.
func TestStreamShortAndBytes(t *testing.T) {
	tk := synthTokenizer(t)
	for _, s := range []string{"", "a", "hello world\n"} {
		want, _ := tk.EncodeWith(s, EncodeOptions{BOS: true, EOS: true})
		got, _ := streamAll(t, tk.NewStream(strings.NewReader(s), EncodeOptions{BOS: true, EOS: true}))
		if !slices.Equal(got, want) {
			t.Errorf("%q: %v, whole %v", s, got, want)
		}
	}
	b, err := NewBytes(259)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("ab\x00é", 50000)
	want, _ := b.Encode(text, true, true)
	got, parts := streamAll(t, b.NewStream(&chunkyReader{text, rand.New(rand.NewPCG(5, 6))}, EncodeOptions{BOS: true, EOS: true}))
	if !slices.Equal(got, want) || parts < 3 {
		t.Errorf("bytes: %d ids in %d parts, want %d ids in several", len(got), parts, len(want))
	}
}

// A text with no place to cut is refused once maxStreamSpan bytes are
// pending, instead of being held whole; a read error comes back as is.
func TestStreamRefusesUncuttableText(t *testing.T) {
	tk := synthTokenizer(t)
	s := tk.NewStream(strings.NewReader(strings.Repeat("x", maxStreamSpan+1)), EncodeOptions{})
	_, err := s.Next()
	if err == nil || !strings.Contains(err.Error(), "no place to cut the text in 16 MiB") {
		t.Errorf("err = %v, want the 16 MiB limit named", err)
	}
	boom := errors.New("disk on fire")
	s = tk.NewStream(io.MultiReader(strings.NewReader("some text"), &errReader{boom}), EncodeOptions{})
	if _, err := s.Next(); !errors.Is(err, boom) {
		t.Errorf("err = %v, want the read error", err)
	}
}

type errReader struct{ err error }

func (e *errReader) Read([]byte) (int, error) { return 0, e.err }

// A cut that would split a piece is rejected by the verification: in a
// vocabulary with the piece "\nt" (and " t"), no line start and no space
// before a 't' is a token boundary, so the stream must find the cuts
// that are (before " a"), and still give the whole text's ids.
func TestStreamVerifiesCuts(t *testing.T) {
	pieces, scores := synthVocab()
	pieces, scores = append(pieces, "\n", "\nt", "\nth"), append(scores, -5, 50, 60)
	tk := mustLlama2c(t, 8, pieces, scores)
	r := rand.New(rand.NewPCG(7, 8))
	words := []string{"the", "t", "he", "tab", "a"}
	var b strings.Builder
	for b.Len() < 4*streamWindow {
		b.WriteString(words[r.IntN(len(words))])
		if r.IntN(3) == 0 {
			b.WriteString("\nthe ")
		} else {
			b.WriteString(" ")
		}
	}
	text := b.String()
	want, err := tk.EncodeWith(text, EncodeOptions{BOS: true})
	if err != nil {
		t.Fatal(err)
	}
	got, parts := streamAll(t, tk.NewStream(strings.NewReader(text), EncodeOptions{BOS: true}))
	if !slices.Equal(got, want) || parts < 3 {
		t.Errorf("%d ids in %d parts, whole text %d ids", len(got), parts, len(want))
	}
}

// noStream is a Codec without NewStream.
type noStream struct{ Codec }

// NewStream refuses, in one line naming it, a codec that cannot stream.
func TestNewStreamNeedsAStreamer(t *testing.T) {
	if _, err := NewStream(noStream{}, strings.NewReader("x"), EncodeOptions{}); err == nil || !strings.Contains(err.Error(), "cannot read a text incrementally") {
		t.Errorf("a codec without NewStream: %v", err)
	}
	b, _ := NewBytes(259)
	if s, err := NewStream(b, strings.NewReader("x"), EncodeOptions{}); err != nil || s == nil {
		t.Errorf("Bytes: %v", err)
	}
}
