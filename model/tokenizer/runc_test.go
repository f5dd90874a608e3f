package tokenizer

// The run.c oracle tests: refTok is a literal transliteration of run.c's
// encode, and the Llama 2 prompts' ids come from Meta's tokenizer.

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const (
	BOSID = llama2cBOS
	EOSID = llama2cEOS
)

// synthVocab is a small Llama-style vocabulary: the 3 specials, the 256
// byte pieces, then single characters and merges with rising scores.
func synthVocab() ([]string, []float32) {
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

func synthTokenizer(t testing.TB) *Tokenizer {
	t.Helper()
	pieces, scores := synthVocab()
	return mustLlama2c(t, 8, pieces, scores)
}

func mustLlama2c(t testing.TB, maxLen int, pieces []string, scores []float32) *Tokenizer {
	t.Helper()
	tk, err := NewLlama2c(pieces, scores, maxLen)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func loadShared(t testing.TB, name string, vocab int) *Tokenizer {
	t.Helper()
	return readBin(t, "models/"+name, vocab)
}

// refTok is a literal transliteration of run.c's encode: lookups by
// binary search over the sorted pieces (run.c's sorted_vocab), the byte
// loop with its str_len state, and every pair's concatenation rebuilt and
// looked up on every merge round.
type refTok struct {
	pieces []string
	scores []float32
	sorted []int
}

func newRefTok(tk *Tokenizer) *refTok {
	r := &refTok{}
	for i := 0; i < tk.VocabSize(); i++ {
		r.pieces = append(r.pieces, tk.Piece(i))
		r.scores = append(r.scores, tk.Score(i))
		r.sorted = append(r.sorted, i)
	}
	sort.SliceStable(r.sorted, func(a, b int) bool { return r.pieces[r.sorted[a]] < r.pieces[r.sorted[b]] })
	return r
}

func (r *refTok) lookup(s string) int {
	k := sort.Search(len(r.sorted), func(k int) bool { return r.pieces[r.sorted[k]] >= s })
	if k < len(r.sorted) && r.pieces[r.sorted[k]] == s {
		return r.sorted[k]
	}
	return -1
}

func (r *refTok) encode(text string, bos, eos bool) []int {
	var toks []int
	if bos {
		toks = append(toks, 1)
	}
	if text != "" {
		toks = append(toks, r.lookup(" "))
	}
	var buf []byte
	for c := 0; c < len(text); c++ {
		if text[c]&0xC0 != 0x80 {
			buf = buf[:0]
		}
		buf = append(buf, text[c])
		if c+1 < len(text) && text[c+1]&0xC0 == 0x80 && len(buf) < 4 {
			continue
		}
		if id := r.lookup(string(buf)); id != -1 {
			toks = append(toks, id)
		} else {
			for _, b := range buf {
				toks = append(toks, int(b)+3)
			}
		}
		buf = buf[:0]
	}
	for {
		best, bestID, bestIdx := float32(-1e10), -1, -1
		for i := 0; i+1 < len(toks); i++ {
			id := r.lookup(r.pieces[toks[i]] + r.pieces[toks[i+1]])
			if id != -1 && r.scores[id] > best {
				best, bestID, bestIdx = r.scores[id], id, i
			}
		}
		if bestIdx == -1 {
			break
		}
		toks[bestIdx] = bestID
		toks = append(toks[:bestIdx+1], toks[bestIdx+2:]...)
	}
	if eos {
		toks = append(toks, 2)
	}
	return toks
}

// decodeAll concatenates Decode over toks (which start with BOS).
func decodeAll(c Codec, toks []int) string {
	var sb strings.Builder
	for i := 1; i < len(toks); i++ {
		sb.WriteString(c.Decode(toks[i-1], toks[i]))
	}
	return sb.String()
}

// randomText mixes ASCII words, whitespace, accented letters, CJK, emoji
// and stray bytes (invalid UTF-8).
func randomText(r *rand.Rand) string {
	parts := []string{"the", " the", "a", "b", "c", "abc", "Once", " upon", " time", "Lily", ",", ".", " ", "  ",
		"\n", "é", "ü", "你", "好", "世界", "😀", "🦙", "\u0300", "!", "?", "x", "\x00", "\xff", "\x80", "\xe4\xbd",
		"\xf0\x9f\x98", "ab", "th", "he", "123", "\t"}
	var sb strings.Builder
	for n := r.IntN(12); n >= 0; n-- {
		sb.WriteString(parts[r.IntN(len(parts))])
	}
	return sb.String()
}

func checkAgainstReference(t *testing.T, tk *Tokenizer, n int) {
	t.Helper()
	ref := newRefTok(tk)
	r := rand.New(rand.NewPCG(7, uint64(tk.VocabSize())))
	for i := 0; i < n; i++ {
		text := randomText(r)
		bos, eos := i%3 != 0, i%4 == 0
		got, err := tk.Encode(text, bos, eos)
		if err != nil {
			t.Fatal(err)
		}
		if want := ref.encode(text, bos, eos); !slices.Equal(got, want) {
			t.Fatalf("Encode(%q) = %v, reference %v", text, got, want)
		}
		if bos && !eos && !slices.Contains(got[1:], BOSID) {
			if back := decodeAll(tk, got); back != text {
				t.Fatalf("Decode(Encode(%q)) = %q", text, back)
			}
		}
	}
}

func TestEncodeMatchesReferenceSynthetic(t *testing.T) {
	checkAgainstReference(t, synthTokenizer(t), 2000)
}

func TestEncodeMatchesReferenceTok512(t *testing.T) {
	checkAgainstReference(t, loadShared(t, "tok512.bin", 512), 1000)
}

func TestEncodeMatchesReferenceLlama(t *testing.T) {
	n := 500
	if testing.Short() {
		n = 100
	}
	checkAgainstReference(t, loadShared(t, "tokenizer.bin", 32000), n)
}

// TestEncodeLlama2KnownPrompts checks the encodings that Meta's Llama 2
// SentencePiece tokenizer gives (the prompts and ids of llama2.c's
// test_prompt_encodings, taken from the Llama 2 repository's examples).
func TestEncodeLlama2KnownPrompts(t *testing.T) {
	tk := loadShared(t, "tokenizer.bin", 32000)
	for _, tc := range []struct {
		text string
		want []int
	}{
		{"", []int{1}},
		{"I believe the meaning of life is", []int{1, 306, 4658, 278, 6593, 310, 2834, 338}},
		{"Simply put, the theory of relativity states that ",
			[]int{1, 3439, 17632, 1925, 29892, 278, 6368, 310, 14215, 537, 5922, 393, 29871}},
		{"A brief message congratulating the team on the launch:\n\n        Hi everyone,\n\n        I just ",
			[]int{1, 319, 11473, 2643, 378, 629, 271, 18099, 278, 3815, 373, 278, 6826, 29901, 13, 13, 4706, 6324,
				14332, 29892, 13, 13, 4706, 306, 925, 29871}},
		{"Translate English to French:\n\n        sea otter => loutre de mer\n        peppermint => menthe poivrée\n        plush girafe => girafe peluche\n        cheese =>",
			[]int{1, 4103, 9632, 4223, 304, 5176, 29901, 13, 13, 4706, 7205, 4932, 357, 1149, 301, 449, 276, 316,
				2778, 13, 4706, 1236, 407, 837, 524, 1149, 6042, 354, 772, 440, 29878, 1318, 13, 4706, 715, 1878, 330,
				3055, 1725, 1149, 330, 3055, 1725, 4639, 28754, 13, 4706, 923, 968, 1149}},
	} {
		got, err := tk.Encode(tc.text, true, false)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("Encode(%q)\n got %v\nwant %v", tc.text, got, tc.want)
		}
		if back := decodeAll(tk, got); back != tc.text {
			t.Errorf("round trip of %q gave %q", tc.text, back)
		}
	}
}

// TestByteFallback: characters outside the vocabulary become their UTF-8
// bytes, id = byte + 3 (the <0xHH> pieces), and decode back.
func TestByteFallback(t *testing.T) {
	tk := loadShared(t, "tok512.bin", 512)
	space, ok := tk.ID(" ")
	if !ok {
		t.Fatal(`tok512 has no " " piece`)
	}
	for _, text := range []string{"😀", "世界", "\xff"} {
		got, err := tk.Encode(text, true, true)
		if err != nil {
			t.Fatal(err)
		}
		want := []int{BOSID, space}
		for _, b := range []byte(text) {
			want = append(want, int(b)+3)
		}
		want = append(want, EOSID)
		if !slices.Equal(got, want) {
			t.Errorf("Encode(%q) = %v, want the bytes %v", text, got, want)
		}
		if back := decodeAll(tk, got[:len(got)-1]); back != text {
			t.Errorf("round trip of %q gave %q", text, back)
		}
	}
	llama := loadShared(t, "tokenizer.bin", 32000)
	// 你 is a piece of the Llama vocabulary; 🦙 (F0 9F A6 99) is not.
	got, err := llama.Encode("🦙你", false, false)
	if err != nil {
		t.Fatal(err)
	}
	ni, ok := llama.ID("你")
	if !ok {
		t.Skip("你 not a piece")
	}
	want := []int{29871, 0xF0 + 3, 0x9F + 3, 0xA6 + 3, 0x99 + 3, ni}
	if !slices.Equal(got, want) {
		t.Errorf("Encode(🦙你) = %v, want %v", got, want)
	}
}

// TestDecodeGolden decodes the token ids llama2.c's run.c generated with
// stories260K and tok512 and compares with the text it printed.
func TestDecodeGolden(t *testing.T) {
	tk := loadShared(t, "tok512.bin", 512)
	idsRaw, err := os.ReadFile(sharedFile(t, "models/golden/stories260K.greedy.ids"))
	if err != nil {
		t.Fatal(err)
	}
	txt, err := os.ReadFile(sharedFile(t, "models/golden/stories260K.greedy.txt"))
	if err != nil {
		t.Fatal(err)
	}
	toks := []int{BOSID}
	for _, f := range strings.Fields(string(idsRaw)) {
		id, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		toks = append(toks, id)
	}
	// run.c prints decode(prev, next) for every step, then one "\n".
	if got, want := decodeAll(tk, toks)+"\n", string(txt); got != want {
		t.Fatalf("decoded golden ids:\n%q\nrun.c printed:\n%q", got, want)
	}
}

func TestDecodeRules(t *testing.T) {
	pieces, scores := synthVocab()
	pieces = append(pieces, " x", "<0x4g>", "<0x41", "<0x4a>")
	scores = append(scores, 0, 0, 0, 0)
	tk := mustLlama2c(t, 8, pieces, scores)
	id := func(s string) int {
		i, ok := tk.ID(s)
		if !ok {
			t.Fatalf("no piece %q", s)
		}
		return i
	}
	for _, tc := range []struct {
		prev, tok int
		want      string
	}{
		{5, id(" x"), " x"},
		{BOSID, id(" x"), "x"},      // leading space dropped after BOS only
		{BOSID, id(" "), ""},        // the dummy prefix alone
		{7, 0x41 + 3, "A"},          // <0x41>
		{7, 0x0A + 3, "\n"},         // <0x0A>
		{7, 0x00 + 3, "\x00"},       // <0x00>
		{7, id("<0x4a>"), "J"},      // lower-case hex digits too
		{7, id("<0x4g>"), "<0x4g>"}, // not hex: the piece itself
		{7, id("<0x41"), "<0x41"},   // not closed
		{7, -1, ""},
		{7, len(pieces), ""},
	} {
		if got := tk.Decode(tc.prev, tc.tok); got != tc.want {
			t.Errorf("Decode(%d, %d) = %q, want %q", tc.prev, tc.tok, got, tc.want)
		}
	}
}

func TestEncodeSmallVocabulary(t *testing.T) {
	// Without byte pieces the fallback ids do not exist: an error, not a
	// token beyond the embedding table.
	tk := mustLlama2c(t, 5, []string{"<unk>", "<s>", "</s>", " ", "a"}, []float32{0, 0, 0, 0, 0})
	if got, err := tk.Encode("aa", true, false); err != nil || !slices.Equal(got, []int{1, 3, 4, 4}) {
		t.Fatalf("Encode(aa) = %v, %v", got, err)
	}
	if _, err := tk.Encode("ab", true, false); err == nil || !strings.Contains(err.Error(), "byte fallback id 101") {
		t.Fatalf("got %v", err)
	}
	// No " " piece: the dummy prefix falls back to byte 0x20 (and errors here).
	tk = mustLlama2c(t, 5, []string{"<unk>", "<s>", "</s>", "a"}, []float32{0, 0, 0, 0})
	if _, err := tk.Encode("a", false, false); err == nil || !strings.Contains(err.Error(), "byte fallback id 35") {
		t.Fatalf("got %v", err)
	}
	if got, err := tk.Encode("", true, true); err != nil || !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("empty text: %v, %v", got, err)
	}
}

func TestMergeTieLeftmost(t *testing.T) {
	// "aaa": the pairs (a, a) at 1 and 2 both merge to "aa" with the same
	// score; the leftmost wins.
	pieces, scores := synthVocab()
	pieces = append(pieces, "aa")
	scores = append(scores, 100)
	tk := mustLlama2c(t, 8, pieces, scores)
	aa, _ := tk.ID("aa")
	a, _ := tk.ID("a")
	space, _ := tk.ID(" ")
	// [" ", a, a, a]: "aa" (score 100) beats " a"; taking the leftmost
	// (a, a) leaves [" ", aa, a], where no pair merges. Taking the
	// rightmost would give [" ", a, aa] and then [" a", aa].
	got, _ := tk.Encode("aaa", false, false)
	if want := []int{space, aa, a}; !slices.Equal(got, want) {
		t.Fatalf("Encode(aaa) = %v, want %v", got, want)
	}
}

func TestByteTokenizer(t *testing.T) {
	if _, err := NewBytes(258); err == nil {
		t.Fatal("vocab 258 accepted")
	}
	b, err := NewBytes(300)
	if err != nil {
		t.Fatal(err)
	}
	var c Codec = b
	text := "héllo 😀\x00\xff"
	toks, err := c.Encode(text, true, true)
	if err != nil {
		t.Fatal(err)
	}
	if toks[0] != BOSID || toks[len(toks)-1] != EOSID || len(toks) != len(text)+2 || toks[1] != 'h'+3 {
		t.Fatalf("Encode = %v", toks)
	}
	if back := decodeAll(c, toks[:len(toks)-1]); back != text {
		t.Fatalf("round trip gave %q", back)
	}
	for _, tc := range []struct {
		tok  int
		want string
	}{{0, ""}, {1, ""}, {2, ""}, {3, "\x00"}, {258, "\xff"}, {259, "<259>"}, {299, "<299>"}, {300, ""}, {-1, ""}} {
		if got := c.Decode(0, tc.tok); got != tc.want {
			t.Errorf("Decode(%d) = %q, want %q", tc.tok, got, tc.want)
		}
	}
	if c.VocabSize() != 300 {
		t.Fatal("vocab size")
	}
	var zero Bytes
	if _, err := zero.Encode("x", false, false); err == nil {
		t.Fatal("zero ByteTokenizer encoded")
	}
}
