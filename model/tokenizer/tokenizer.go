package tokenizer

import (
	"errors"
	"strconv"
)

// Codec turns text into token ids and back. *Tokenizer and *Bytes
// implement it; the engine and the CLI see only this.
type Codec interface {
	// Encode returns the ids of text, with BOS first if bos and EOS last if
	// eos. Special tokens written in the text are not parsed (see
	// Tokenizer.EncodeWith).
	Encode(text string, bos, eos bool) ([]int, error)
	// Decode returns the bytes token tok stands for when it follows prev
	// (prev matters after BOS, see Tokenizer.Decode). The result may be a
	// partial UTF-8 sequence.
	Decode(prev, tok int) string
	// VocabSize is the number of ids.
	VocabSize() int
	// BOS is the beginning-of-sequence id, or -1 when the vocabulary has
	// none.
	BOS() int
	// EOS is the end-of-sequence id, or -1 when the vocabulary has none:
	// where a reply ends in run.c's chat (chat.Conversation feeds it after
	// an earlier reply).
	EOS() int
	// AddBOS reports whether a prompt starts with BOS: what the
	// tokenizer's file asks for (llama2.c's always does; Qwen's does not).
	AddBOS() bool
}

// Kind is the merge algorithm of a Tokenizer.
type Kind int

const (
	// SentencePiece merges the adjacent pair whose merged piece has the
	// highest score (llama2.c's tokenizer.bin, GGUF tokenizer.ggml.model
	// "llama").
	SentencePiece Kind = iota
	// ByteLevelBPE maps bytes to printable characters (GPT-2's
	// bytes_to_unicode) and merges the adjacent pair with the lowest merge
	// rank (GGUF "gpt2", tokenizer.json BPE with a ByteLevel pre-tokenizer).
	ByteLevelBPE
	// MergesBPE is BPE by merge rank over the characters of the normalized
	// text with <0xHH> byte fallback (tokenizer.json BPE without ByteLevel,
	// e.g. TinyLlama's Llama 2 style tokenizer.json).
	MergesBPE
)

// String names the kind.
func (k Kind) String() string {
	switch k {
	case SentencePiece:
		return "sentencepiece"
	case ByteLevelBPE:
		return "byte-level-bpe"
	case MergesBPE:
		return "bpe"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// TokenType is a token's role, numbered as GGUF's tokenizer.ggml.token_type
// (and SentencePiece's ModelProto.SentencePiece.Type).
type TokenType int32

// The token types. Control and Unknown tokens in the text are matched only
// when special tokens are parsed; UserDefined tokens are always matched;
// Byte tokens are the <0xHH> fallback pieces.
const (
	TypeUndefined   TokenType = 0
	TypeNormal      TokenType = 1
	TypeUnknown     TokenType = 2
	TypeControl     TokenType = 3
	TypeUserDefined TokenType = 4
	TypeUnused      TokenType = 5
	TypeByte        TokenType = 6
)

// special reports whether tokens of type t are cut out of the text before
// the merges: control and unknown ones only when parseSpecial, user-defined
// ones always (as llama.cpp and Hugging Face tokenizers do).
func (t TokenType) special(parseSpecial bool) bool {
	switch t {
	case TypeControl, TypeUnknown:
		return parseSpecial
	case TypeUserDefined:
		return true
	}
	return false
}

// Tokenizer is a vocabulary of pieces with a merge rule (its Kind). It is
// read-only after construction, so one Tokenizer may serve many
// goroutines. Build one with NewLlama2c, FromVocab or FromJSON.
type Tokenizer struct {
	kind        Kind
	pieces      []string
	scores      []float32
	types       []TokenType
	ids         map[string]int // piece → id (the lowest id if a piece repeats)
	maxTokenLen int

	// runc selects llama2.c's run.c rules (see NewLlama2c).
	runc    bool
	spaceID int // run.c: id of the piece " " (the dummy prefix), or -1

	// addSpacePrefix prepends "▁" to the text (SentencePiece's dummy prefix).
	addSpacePrefix bool
	// escapeSpaces writes ' ' as "▁" before merging (SentencePiece vocab).
	escapeSpaces bool
	byteIDs      [256]int // id of the piece <0xHH>, or -1

	// BPE
	ranks        map[[2]int]merge
	pre          []splitter
	ignoreMerges bool
	norm         []normalizer
	unkID        int  // id for a character without a piece and no byte fallback, or -1
	fallback     bool // MergesBPE: a character without a piece becomes its <0xHH> pieces

	specials []int // ids cut out of the text, longest text first
	lstrip   map[int]bool
	rstrip   map[int]bool

	// Special ids, -1 when the vocabulary has none.
	bos, eos, eot, pad int
	eog                []int
	addBOS, addEOS     bool
	chatTemplate       string
	dec                decoder
}

// merge is one BPE merge rule: the rank (lower merges first) and the id of
// the merged piece.
type merge struct{ rank, id int }

// Kind returns the merge algorithm.
func (t *Tokenizer) Kind() Kind { return t.kind }

// VocabSize returns the number of pieces.
func (t *Tokenizer) VocabSize() int { return len(t.pieces) }

// Piece returns the raw piece string of id as the vocabulary stores it
// ("▁" and "Ġ" included; "" when out of range).
func (t *Tokenizer) Piece(id int) string {
	if id < 0 || id >= len(t.pieces) {
		return ""
	}
	return t.pieces[id]
}

// Score returns the merge score of id (0 when out of range).
func (t *Tokenizer) Score(id int) float32 {
	if id < 0 || id >= len(t.scores) {
		return 0
	}
	return t.scores[id]
}

// Type returns the token type of id (TypeUndefined when out of range).
func (t *Tokenizer) Type(id int) TokenType {
	if id < 0 || id >= len(t.types) {
		return TypeUndefined
	}
	return t.types[id]
}

// ID returns the id of piece s and whether it exists.
func (t *Tokenizer) ID(s string) (int, bool) {
	id, ok := t.ids[s]
	return id, ok
}

// BOS returns the beginning-of-sequence id, or -1.
func (t *Tokenizer) BOS() int { return t.bos }

// EOS returns the end-of-sequence id, or -1.
func (t *Tokenizer) EOS() int { return t.eos }

// EOT returns the end-of-turn id (<|eot_id|>, <|im_end|>), or -1.
func (t *Tokenizer) EOT() int { return t.eot }

// EndOfGeneration returns the ids at which generation stops: EOS, EOT and
// any other end-of-generation id the file names, without duplicates.
func (t *Tokenizer) EndOfGeneration() []int { return append([]int(nil), t.eog...) }

// AddBOS reports whether the tokenizer's file asks for BOS before the text.
func (t *Tokenizer) AddBOS() bool { return t.addBOS }

// AddEOS reports whether the tokenizer's file asks for EOS after the text.
func (t *Tokenizer) AddEOS() bool { return t.addEOS }

// ChatTemplate returns the chat template the file carries ("" if none),
// kept verbatim for a chat front end.
func (t *Tokenizer) ChatTemplate() string { return t.chatTemplate }

// EncodeOptions says what Encode adds to and parses from the text.
type EncodeOptions struct {
	BOS, EOS bool // add the BOS / EOS id
	// ParseSpecial matches control tokens written in the text (e.g.
	// "<|eot_id|>") as their ids; otherwise they are plain text.
	// User-defined tokens are matched either way.
	ParseSpecial bool
}

// Encode tokenizes text without parsing special tokens; see EncodeWith.
func (t *Tokenizer) Encode(text string, bos, eos bool) ([]int, error) {
	return t.EncodeWith(text, EncodeOptions{BOS: bos, EOS: eos})
}

// errNoBOS and errNoEOS report a request for an id the vocabulary lacks.
var (
	errNoBOS = errors.New("tokenizer: BOS requested but the vocabulary has no BOS id")
	errNoEOS = errors.New("tokenizer: EOS requested but the vocabulary has no EOS id")
)

// EncodeWith tokenizes text. The text is first cut at special tokens (see
// EncodeOptions.ParseSpecial); each plain fragment is then merged by the
// tokenizer's Kind:
//
//   - llama2.c (NewLlama2c): run.c's encode exactly, see encodeRunC.
//   - SentencePiece: llama.cpp's llm_tokenizer_spm: spaces become "▁", a
//     "▁" is prepended to a fragment at the start or after a special token
//     (add_space_prefix), the text is cut into UTF-8 characters, pairs merge
//     by score, and a character without a piece becomes its <0xHH> bytes.
//   - ByteLevelBPE / MergesBPE: pre-tokenizer splits, then rank merges
//     within each piece, see encodeBPE.
func (t *Tokenizer) EncodeWith(text string, o EncodeOptions) ([]int, error) {
	return t.encode(text, o, false)
}

// encode is EncodeWith; with cont, text continues an earlier text at a
// cut (see Stream), so what the tokenizer adds at the start of a text
// (the dummy prefix, a prepended "▁" or space) is left out of its first
// fragment.
func (t *Tokenizer) encode(text string, o EncodeOptions, cont bool) ([]int, error) {
	return t.encodeFragments(t.partition(text, o.ParseSpecial), o, cont)
}

// encodeFragments merges each plain fragment by the tokenizer's Kind
// (special ones are their id) and adds BOS and EOS as o asks; cont is
// encode's.
func (t *Tokenizer) encodeFragments(frags []fragment, o EncodeOptions, cont bool) ([]int, error) {
	n := 3
	for _, f := range frags {
		n += len(f.text)/3 + 1
	}
	toks := make([]int, 0, n)
	if o.BOS {
		if t.bos < 0 {
			return nil, errNoBOS
		}
		toks = append(toks, t.bos)
	}
	var err error
	prevSpecial := !cont
	for i, f := range frags {
		if f.id >= 0 {
			toks = append(toks, f.id)
			prevSpecial = true
			continue
		}
		switch {
		case t.runc:
			toks, err = t.encodeRunC(toks, f.text, !(cont && i == 0))
		case t.kind == SentencePiece:
			toks, err = t.encodeSPM(toks, f.text, prevSpecial)
		default:
			toks, err = t.encodeBPE(toks, f.text, i == 0 && !cont, cont && i == 0)
		}
		if err != nil {
			return nil, err
		}
		prevSpecial = false
	}
	if o.EOS {
		if t.eos < 0 {
			return nil, errNoEOS
		}
		toks = append(toks, t.eos)
	}
	return toks, nil
}

// Decode returns the text of tok following prev.
//
//   - llama2.c: run.c's decode: after BOS (prev == 1) a leading space of
//     the piece is dropped (SentencePiece strips the dummy prefix), and a
//     piece of the form <0xHH> stands for the raw byte 0xHH.
//   - SentencePiece: "▁" is a space, byte tokens are their byte, and after
//     BOS (or at the start, prev < 0) the dummy prefix space is dropped
//     when the tokenizer adds one.
//   - byte-level BPE: the piece's characters map back to bytes.
//
// Control and unknown tokens decode to "" (use Piece for their text);
// user-defined ones to their text. Out-of-range ids decode to "".
func (t *Tokenizer) Decode(prev, tok int) string {
	if tok < 0 || tok >= len(t.pieces) {
		return ""
	}
	p := t.pieces[tok]
	if t.runc {
		if prev == t.bos && len(p) > 0 && p[0] == ' ' {
			p = p[1:]
		}
		if b, ok := bytePiece(p); ok {
			return byteStrings[b]
		}
		return p
	}
	switch t.types[tok] {
	case TypeControl, TypeUnknown:
		return ""
	case TypeUserDefined:
		return p
	}
	first := prev < 0 || (prev == t.bos && t.bos >= 0)
	return t.dec.decode(t, p, first)
}

// DecodeAll decodes ids as a whole text (the first id starts the text).
// With special, control tokens decode to their text instead of "".
func (t *Tokenizer) DecodeAll(ids []int, special bool) string {
	var b []byte
	prev := -1
	for _, id := range ids {
		if id >= 0 && id < len(t.types) && (t.types[id] == TypeControl || t.types[id] == TypeUnknown) {
			if special {
				b = append(b, t.pieces[id]...)
			}
		} else {
			b = append(b, t.Decode(prev, id)...)
		}
		prev = id
	}
	return string(b)
}

// byteStrings holds the 256 one-byte strings, so Decode of a byte piece
// does not allocate.
var byteStrings = func() (s [256]string) {
	for i := range s {
		s[i] = string([]byte{byte(i)})
	}
	return s
}()

// bytePiece parses "<0xHH>" (two hex digits, either case).
func bytePiece(p string) (byte, bool) {
	if len(p) != 6 || p[:3] != "<0x" || p[5] != '>' {
		return 0, false
	}
	v, err := strconv.ParseUint(p[3:5], 16, 8)
	if err != nil {
		return 0, false
	}
	return byte(v), true
}

// newTokenizer fills the tables shared by every kind: the piece → id map
// (lowest id wins on a repeated piece), the longest piece, the byte
// pieces, and no special ids.
func newTokenizer(kind Kind, pieces []string, scores []float32, types []TokenType) *Tokenizer {
	t := &Tokenizer{kind: kind, pieces: pieces, scores: scores, types: types,
		ids: make(map[string]int, len(pieces)), spaceID: -1, unkID: -1,
		bos: -1, eos: -1, eot: -1, pad: -1}
	if t.scores == nil {
		t.scores = make([]float32, len(pieces))
	}
	if t.types == nil {
		t.types = make([]TokenType, len(pieces))
		for i := range t.types {
			t.types[i] = TypeNormal
		}
	}
	for i := range t.byteIDs {
		t.byteIDs[i] = -1
	}
	for i, p := range pieces {
		if p == "" {
			continue // a hole in the id space (tokenizer.json), never matched
		}
		if _, dup := t.ids[p]; !dup {
			t.ids[p] = i
		}
		t.maxTokenLen = max(t.maxTokenLen, len(p))
		if b, ok := bytePiece(p); ok && t.byteIDs[b] < 0 {
			t.byteIDs[b] = i
		}
	}
	return t
}

// setSpecials records the ids cut out of the text before merging: every
// control, user-defined and unknown token with a non-empty piece, longest
// first (so "<|eot_id|>" wins over a shorter token it contains), lowest id
// first among equal lengths.
func (t *Tokenizer) setSpecials() {
	t.specials = t.specials[:0]
	for id, ty := range t.types {
		if (ty == TypeControl || ty == TypeUserDefined || ty == TypeUnknown) && t.pieces[id] != "" {
			t.specials = append(t.specials, id)
		}
	}
	sortStable(t.specials, func(a, b int) bool { return len(t.pieces[a]) > len(t.pieces[b]) })
}

// setEOG collects the end-of-generation ids.
func (t *Tokenizer) setEOG(extra ...int) {
	t.eog = t.eog[:0]
	for _, id := range append([]int{t.eos, t.eot}, extra...) {
		if id < 0 || id >= len(t.pieces) {
			continue
		}
		dup := false
		for _, e := range t.eog {
			dup = dup || e == id
		}
		if !dup {
			t.eog = append(t.eog, id)
		}
	}
}
