package tokenizer

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// longPrompt is a ~300 KB story-like text: the size of prompts file that
// took run.c's O(n²) merging minutes.
func longPrompt() string {
	words := []string{"Once", " upon", " a", " time", ",", " there", " was", " a", " little", " girl", " named",
		" Lily", ".", " She", " liked", " to", " play", " in", " the", " park", "\n", " 😀", " 你好"}
	r := rand.New(rand.NewPCG(1, 2))
	var sb strings.Builder
	for sb.Len() < 300<<10 {
		sb.WriteString(words[r.IntN(len(words))])
	}
	return sb.String()
}

// BenchmarkEncodeLong encodes a 300 KB prompt with tok512 (or the
// synthetic vocabulary without the fixtures): O(n log n) merging makes
// this milliseconds, where run.c's rescans took minutes.
//
//	go test ./model/tokenizer -run '^$' -bench EncodeLong -benchtime 3x
func BenchmarkEncodeLong(b *testing.B) {
	var tk *Tokenizer
	if dir, _ := findShared(); dir != "" {
		tk = readBin(b, "models/tok512.bin", 512)
	} else {
		tk = synthTokenizer(b)
	}
	text := longPrompt()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := tk.Encode(text, true, false); err != nil {
			b.Fatal(err)
		}
	}
}

// TestEncodeLongMatchesReference checks the queue against run.c's rescans
// on a text long enough for many stale queue entries (3 KB keeps the
// O(n²) reference fast enough).
func TestEncodeLongMatchesReference(t *testing.T) {
	tk := synthTokenizer(t)
	if dir, _ := findShared(); dir != "" {
		tk = readBin(t, "models/tok512.bin", 512)
	}
	text := longPrompt()[:3<<10]
	if testing.Short() {
		text = text[:1<<10]
	}
	got, err := tk.Encode(text, true, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := newRefTok(tk).encode(text, true, false); !slices.Equal(got, want) {
		t.Fatalf("long text: %d ids, reference %d; first difference at %d", len(got), len(want), firstDiff(got, want))
	}
}

func firstDiff(a, b []int) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestMergeTiesRandom: random vocabularies whose scores take only three
// values, so that nearly every merge round has ties, match run.c's
// leftmost-best rule on random texts over a small alphabet.
func TestMergeTiesRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	alphabet := []string{"a", "b", "c", " "}
	for v := 0; v < 40; v++ {
		pieces, scores := synthVocab()
		seen := map[string]bool{}
		for _, p := range pieces {
			seen[p] = true
		}
		for _, a := range alphabet {
			if !seen[a] {
				pieces, scores, seen[a] = append(pieces, a), append(scores, 0), true
			}
		}
		for k := 0; k < 30; k++ {
			var sb strings.Builder
			for n := 2 + r.IntN(4); n > 0; n-- {
				sb.WriteString(alphabet[r.IntN(len(alphabet))])
			}
			if p := sb.String(); !seen[p] {
				pieces, scores, seen[p] = append(pieces, p), append(scores, float32(r.IntN(3))), true
			}
		}
		tk := mustLlama2c(t, 8, pieces, scores)
		ref := newRefTok(tk)
		for k := 0; k < 50; k++ {
			var sb strings.Builder
			for n := r.IntN(40); n > 0; n-- {
				sb.WriteString(alphabet[r.IntN(len(alphabet))])
			}
			got, err := tk.Encode(sb.String(), true, false)
			if err != nil {
				t.Fatal(err)
			}
			if want := ref.encode(sb.String(), true, false); !slices.Equal(got, want) {
				t.Fatalf("vocab %d, Encode(%q) = %v, reference %v", v, sb.String(), got, want)
			}
		}
	}
}

func TestRunCPrintable(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"a", "a"}, {" ", " "}, {"\n", "\n"}, {"\t", "\t"}, {"\r", "\r"}, {"\x00", ""}, {"\x07", ""},
		{"\x7f", ""}, {"\x80", ""}, {"\xff", ""}, {"ab", "ab"}, {"\xe4\xbd\xa0", "\xe4\xbd\xa0"}, {"", ""},
	} {
		if got := RunCPrintable(tc.in); got != tc.want {
			t.Errorf("RunCPrintable(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestConcurrentEncode: a Tokenizer is read-only after construction, so
// goroutines may share one (run under -race in CI).
func TestConcurrentEncode(t *testing.T) {
	tk, err := FromJSON([]byte(tinyJSON), nil, "tiny")
	if err != nil {
		t.Fatal(err)
	}
	spm := synthTokenizer(t)
	want, _ := tk.Encode("ab aé\nab", true, false)
	wantSPM, _ := spm.Encode("the abc 你好", true, false)
	done := make(chan error)
	for g := 0; g < 4; g++ {
		go func() {
			for i := 0; i < 200; i++ {
				got, _ := tk.Encode("ab aé\nab", true, false)
				gotSPM, _ := spm.Encode("the abc 你好", true, false)
				if !slices.Equal(got, want) || !slices.Equal(gotSPM, wantSPM) {
					done <- fmt.Errorf("goroutine got %v / %v", got, gotSPM)
					return
				}
				_ = tk.DecodeAll(got, true)
			}
			done <- nil
		}()
	}
	for g := 0; g < 4; g++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// TestPrintable: run.c's printing rule applies to the run.c codecs only.
func TestPrintable(t *testing.T) {
	js, err := FromJSON([]byte(tinyJSON), nil, "tiny")
	if err != nil {
		t.Fatal(err)
	}
	bytes, err := NewBytes(300)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		codec Codec
		want  string
	}{{synthTokenizer(t), ""}, {bytes, ""}, {js, "\xe4"}} {
		if got := Printable(tc.codec, "\xe4"); got != tc.want {
			t.Errorf("%T: Printable(\\xe4) = %q, want %q", tc.codec, got, tc.want)
		}
		if got := Printable(tc.codec, "ok"); got != "ok" {
			t.Errorf("%T: Printable(ok) = %q", tc.codec, got)
		}
	}
}

// TestPrintableText: a sequence's text is its pieces under Printable's
// rule, so a run.c codec drops the stray high byte that a byte-level
// tokenizer keeps.
func TestPrintableText(t *testing.T) {
	bytes, err := NewBytes(300)
	if err != nil {
		t.Fatal(err)
	}
	ids := []int{'H' + byteOffset, 'i' + byteOffset, 0xe4 + byteOffset, '\n' + byteOffset, 299}
	if got, want := PrintableText(bytes, 1, ids), "Hi\n<299>"; got != want {
		t.Errorf("PrintableText(Bytes) = %q, want %q", got, want)
	}
	if got := PrintableText(bytes, 1, nil); got != "" {
		t.Errorf("PrintableText(no ids) = %q", got)
	}
}

// bpeBenchVocab is a byte-level BPE vocabulary (GGUF "gpt2") whose merges
// spell each of longPrompt's words one character at a time, so every word
// goes through a full run of rank merges in bpeWord.
func bpeBenchVocab() Vocab {
	var v Vocab
	v.Model = "gpt2"
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			v.Tokens = append(v.Tokens, p)
		}
	}
	for b := 0; b < 256; b++ {
		add(string(byteToRune[b]))
	}
	for _, w := range []string{"Once", " upon", " a", " time", ",", " there", " was", " little", " girl", " named",
		" Lily", ".", " She", " liked", " to", " play", " in", " the", " park"} {
		r := []rune(byteLevel(w))
		for k := 2; k <= len(r); k++ {
			left, right := string(r[:k-1]), string(r[k-1])
			if !seen[left+right] {
				v.Merges = append(v.Merges, left+" "+right)
			}
			add(left + right)
		}
	}
	return v
}

// BenchmarkEncodeBPE encodes the 300 KB prompt with byte-level BPE rank
// merges (the bpeWord path; its allocations per op are part of the
// result).
//
//	go test ./model/tokenizer -run '^$' -bench EncodeBPE -benchmem
func BenchmarkEncodeBPE(b *testing.B) {
	tk, err := FromVocab(bpeBenchVocab())
	if err != nil {
		b.Fatal(err)
	}
	text := longPrompt()
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tk.Encode(text, false, false); err != nil {
			b.Fatal(err)
		}
	}
}
