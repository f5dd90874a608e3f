package model

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
)

// Special token ids shared by llama2.c's tokenizers and ByteTokenizer.
const (
	UnkID = 0 // <unk>
	BOSID = 1 // beginning of sequence
	EOSID = 2 // end of sequence
	// byteOffset is the id of byte 0x00: ids 3..258 are the raw bytes
	// <0x00>..<0xFF> in the Llama vocabulary, and byte b is id b+3.
	byteOffset = 3
)

// TextCodec turns text into token ids and back. Tokenizer (a llama2.c
// tokenizer.bin) and ByteTokenizer (one token per byte, for models without a
// tokenizer) implement it.
type TextCodec interface {
	// Encode returns the ids of text, with BOS first if bos and EOS last if eos.
	Encode(text string, bos, eos bool) ([]int, error)
	// Decode returns the bytes token tok stands for when it follows prev
	// (prev matters after BOS, see Tokenizer.Decode). The result may be a
	// partial UTF-8 sequence.
	Decode(prev, tok int) string
	// VocabSize is the number of ids.
	VocabSize() int
}

// maxPieceLen bounds max_token_length in a tokenizer file (the Llama
// vocabulary needs 27), so a corrupt header cannot make us allocate much.
const maxPieceLen = 1 << 16

// Tokenizer is llama2.c's byte-pair tokenizer: a list of pieces with merge
// scores, read from a tokenizer.bin. It is read-only after loading, so one
// Tokenizer may serve many goroutines.
type Tokenizer struct {
	pieces      []string
	scores      []float32
	ids         map[string]int // piece → id (the lowest id if a piece repeats)
	maxTokenLen int
	spaceID     int // id of the piece " " (the dummy prefix), or -1
}

// LoadTokenizer reads a llama2.c tokenizer.bin. The file does not store its
// piece count, so vocabSize (the model's) says how many entries to read, and
// the file must end right after them: a tokenizer built for another model
// is rejected rather than silently mis-decoding.
func LoadTokenizer(path string, vocabSize int) (*Tokenizer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer %s: %w", path, err)
	}
	defer f.Close()
	return ReadTokenizer(f, vocabSize, path)
}

// ReadTokenizer reads a tokenizer.bin from r (see LoadTokenizer); name is
// used in errors. The layout is: int32 max_token_length, then for each of
// vocabSize pieces a float32 score, an int32 byte length and the bytes, all
// little-endian. Every length is checked against max_token_length (itself
// bounded) before anything is allocated for it.
func ReadTokenizer(r io.Reader, vocabSize int, name string) (*Tokenizer, error) {
	fail := func(format string, a ...any) error {
		return fmt.Errorf("tokenizer %s: %s", name, fmt.Sprintf(format, a...))
	}
	if vocabSize <= 0 || vocabSize > maxDim {
		return nil, fail("vocab size %d out of range [1, %d]", vocabSize, maxDim)
	}
	br := bufio.NewReader(r)
	var b4 [4]byte
	readI32 := func() (int32, error) {
		if _, err := io.ReadFull(br, b4[:]); err != nil {
			return 0, err
		}
		return int32(binary.LittleEndian.Uint32(b4[:])), nil
	}
	maxLen, err := readI32()
	if err != nil {
		return nil, fail("cannot read max_token_length: %v", err)
	}
	if maxLen <= 0 || maxLen > maxPieceLen {
		return nil, fail("max_token_length %d out of range [1, %d]", maxLen, maxPieceLen)
	}
	t := &Tokenizer{maxTokenLen: int(maxLen), spaceID: -1}
	// Grow the tables as entries arrive instead of trusting vocabSize up
	// front: a short file then costs only what it holds.
	t.ids = make(map[string]int)
	piece := make([]byte, maxLen)
	for i := 0; i < vocabSize; i++ {
		sc, err := readI32()
		if err != nil {
			return nil, fail("file ends after %d pieces, but the model's vocab_size is %d (%v)", i, vocabSize, err)
		}
		n, err := readI32()
		if err != nil {
			return nil, fail("piece %d: cannot read its length: %v", i, err)
		}
		if n < 0 || n > maxLen {
			return nil, fail("piece %d: length %d out of range [0, max_token_length=%d]", i, n, maxLen)
		}
		if _, err := io.ReadFull(br, piece[:n]); err != nil {
			return nil, fail("piece %d: cannot read its %d bytes: %v", i, n, err)
		}
		s := string(piece[:n])
		t.pieces = append(t.pieces, s)
		t.scores = append(t.scores, math.Float32frombits(uint32(sc)))
		if _, dup := t.ids[s]; !dup {
			t.ids[s] = i
		}
	}
	if _, err := br.ReadByte(); err != io.EOF {
		if err != nil {
			return nil, fail("reading past piece %d: %v", vocabSize-1, err)
		}
		return nil, fail("file has data after %d pieces: it holds more pieces than the model's vocab_size %d", vocabSize, vocabSize)
	}
	if id, ok := t.ids[" "]; ok {
		t.spaceID = id
	}
	return t, nil
}

// VocabSize returns the number of pieces.
func (t *Tokenizer) VocabSize() int { return len(t.pieces) }

// Piece returns the raw piece string of id ("" when out of range).
func (t *Tokenizer) Piece(id int) string {
	if id < 0 || id >= len(t.pieces) {
		return ""
	}
	return t.pieces[id]
}

// Score returns the merge score of id (0 when out of range).
func (t *Tokenizer) Score(id int) float32 {
	if id < 0 || id >= len(t.pieces) {
		return 0
	}
	return t.scores[id]
}

// ID returns the id of piece s and whether it exists.
func (t *Tokenizer) ID(s string) (int, bool) {
	id, ok := t.ids[s]
	return id, ok
}

// noMerge is run.c's starting best_score: a pair whose merged piece scores
// at or below it is never merged.
const noMerge = float32(-1e10)

// Encode tokenizes text as run.c's encode does:
//
//  1. BOS if bos; then, if text is not empty, the piece " " (SentencePiece's
//     dummy prefix; its byte id 0x20+3 if the vocabulary lacks it, where
//     run.c would emit -1).
//  2. Text is cut into UTF-8 code points the way run.c scans bytes: a byte
//     that is not a continuation byte (10xxxxxx) starts a group, and
//     continuation bytes join it, up to 4 bytes. A group that is a piece
//     becomes its id; otherwise each of its bytes b becomes id b+3 (the
//     <0xHH> byte pieces), so any input, invalid UTF-8 included, encodes.
//  3. Repeatedly, the adjacent pair whose concatenation is a piece with the
//     highest score (the leftmost on ties) is merged, until no pair merges.
//  4. EOS if eos.
//
// Unlike C, a NUL byte does not end the text; it encodes as byte 0x00.
// The error reports a byte id outside a vocabulary smaller than 259.
func (t *Tokenizer) Encode(text string, bos, eos bool) ([]int, error) {
	toks := make([]int, 0, len(text)+3)
	if bos {
		toks = append(toks, BOSID)
	}
	if len(text) > 0 {
		if t.spaceID >= 0 {
			toks = append(toks, t.spaceID)
		} else {
			toks = append(toks, byteOffset+' ')
		}
	}
	for i := 0; i < len(text); {
		j := i + 1
		for j < len(text) && text[j]&0xC0 == 0x80 && j-i < 4 {
			j++
		}
		if id, ok := t.ids[text[i:j]]; ok {
			toks = append(toks, id)
		} else {
			for k := i; k < j; k++ {
				toks = append(toks, byteOffset+int(text[k]))
			}
		}
		i = j
	}
	for _, id := range toks {
		if id >= len(t.pieces) {
			return nil, fmt.Errorf("tokenizer: byte fallback id %d is outside the %d-piece vocabulary", id, len(t.pieces))
		}
	}
	toks = t.merge(toks)
	if eos {
		toks = append(toks, EOSID)
	}
	return toks, nil
}

// merge applies the BPE merges. pair[i] caches the merge of toks[i] and
// toks[i+1] (-1 if their concatenation is no piece), so after merging at i
// only the pairs at i-1 and i are looked up again: each round is one scan
// over the scores, not a string build per pair as in run.c.
func (t *Tokenizer) merge(toks []int) []int {
	if len(toks) < 2 {
		return toks
	}
	buf := make([]byte, 0, 2*t.maxTokenLen)
	lookup := func(a, b int) int {
		pa, pb := t.pieces[a], t.pieces[b]
		if len(pa)+len(pb) > t.maxTokenLen {
			return -1 // no piece is that long
		}
		buf = append(append(buf[:0], pa...), pb...)
		if id, ok := t.ids[string(buf)]; ok {
			return id
		}
		return -1
	}
	pair := make([]int, len(toks)-1)
	for i := range pair {
		pair[i] = lookup(toks[i], toks[i+1])
	}
	for {
		best, bestScore := -1, noMerge
		for i, id := range pair {
			if id >= 0 && t.scores[id] > bestScore {
				best, bestScore = i, t.scores[id]
			}
		}
		if best < 0 {
			return toks
		}
		toks[best] = pair[best]
		toks = append(toks[:best+1], toks[best+2:]...)
		pair = append(pair[:best], pair[best+1:]...)
		if best > 0 {
			pair[best-1] = lookup(toks[best-1], toks[best])
		}
		if best < len(pair) {
			pair[best] = lookup(toks[best], toks[best+1])
		}
	}
}

// Decode returns the text of tok following prev, as run.c's decode: after
// BOS (prev == 1) a leading space of the piece is dropped (SentencePiece
// strips the dummy prefix), and a piece of the form <0xHH> stands for the
// raw byte 0xHH. Out-of-range ids decode to "".
func (t *Tokenizer) Decode(prev, tok int) string {
	if tok < 0 || tok >= len(t.pieces) {
		return ""
	}
	p := t.pieces[tok]
	if prev == BOSID && len(p) > 0 && p[0] == ' ' {
		p = p[1:]
	}
	if b, ok := bytePiece(p); ok {
		return byteStrings[b]
	}
	return p
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

// ByteTokenizer is the codec of a model without a tokenizer: ids 0, 1, 2 are
// <unk>, BOS and EOS, and ids 3..258 are the bytes 0x00..0xFF, the same
// numbering as the byte pieces of the Llama vocabulary. Ids from 259 up
// have no text; they decode to "<id>" so generated output stays visible.
type ByteTokenizer struct {
	vocab int
}

// NewByteTokenizer returns a byte codec for a vocabulary of vocab ids, which
// must hold the 259 byte and special ids.
func NewByteTokenizer(vocab int) (*ByteTokenizer, error) {
	if vocab < byteOffset+256 {
		return nil, fmt.Errorf("byte tokenizer: vocab size %d is below the %d ids it needs", vocab, byteOffset+256)
	}
	return &ByteTokenizer{vocab: vocab}, nil
}

// VocabSize returns the vocabulary size.
func (b *ByteTokenizer) VocabSize() int { return b.vocab }

// Encode returns BOS (if bos), one id per byte of text, EOS (if eos).
func (b *ByteTokenizer) Encode(text string, bos, eos bool) ([]int, error) {
	if b == nil || b.vocab < byteOffset+256 {
		return nil, errors.New("byte tokenizer: not initialized (use NewByteTokenizer)")
	}
	toks := make([]int, 0, len(text)+2)
	if bos {
		toks = append(toks, BOSID)
	}
	for i := 0; i < len(text); i++ {
		toks = append(toks, byteOffset+int(text[i]))
	}
	if eos {
		toks = append(toks, EOSID)
	}
	return toks, nil
}

// Decode returns the byte of a byte id, "" for the special ids and for ids
// outside the vocabulary, and "<id>" for the ids above the bytes.
func (b *ByteTokenizer) Decode(prev, tok int) string {
	switch {
	case tok >= byteOffset && tok < byteOffset+256:
		return byteStrings[tok-byteOffset]
	case tok > byteOffset+255 && tok < b.vocab:
		return "<" + strconv.Itoa(tok) + ">"
	}
	return ""
}
