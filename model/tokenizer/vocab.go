package tokenizer

import (
	"fmt"
	"strings"
)

// Vocab is a tokenizer as a GGUF file describes it under tokenizer.ggml.*
// (the format package fills it from the metadata; this package reads no
// files). Optional values are nil when the key is absent, and then take
// llama.cpp's defaults for the model.
type Vocab struct {
	Model  string      // tokenizer.ggml.model: "llama" (SentencePiece) or "gpt2" (byte-level BPE)
	Pre    string      // tokenizer.ggml.pre: the pre-tokenizer of a gpt2 model ("" = default)
	Tokens []string    // tokenizer.ggml.tokens
	Scores []float32   // tokenizer.ggml.scores (nil: all 0)
	Types  []TokenType // tokenizer.ggml.token_type (nil: all normal)
	Merges []string    // tokenizer.ggml.merges: "left right", rank = index (gpt2)

	BOS, EOS, EOT, EOM, UNK, PAD *int   // tokenizer.ggml.{bos,eos,eot,eom,unknown,padding}_token_id
	AddBOS, AddEOS               *bool  // tokenizer.ggml.add_{bos,eos}_token
	AddSpacePrefix               *bool  // tokenizer.ggml.add_space_prefix (llama)
	ChatTemplate                 string // tokenizer.chat_template
}

// maxVocab bounds the vocabulary size (the largest real ones are ~260k).
const maxVocab = 1 << 24

// FromVocab builds the tokenizer llama.cpp builds from the same metadata
// (llama_vocab::impl::load): the model's default special ids and flags,
// overridden by the keys present; EOT found by its text when not given;
// the end-of-generation set from EOS, EOT, EOM and the tokens llama.cpp
// recognizes by text (<|eot_id|>, <|im_end|>, <|endoftext|>, ...).
func FromVocab(v Vocab) (*Tokenizer, error) {
	if err := checkVocab(v); err != nil {
		return nil, err
	}
	pieces := vocabPieces(v.Tokens)
	types := v.Types
	if types != nil {
		types = append([]TokenType(nil), types...)
	}
	var t *Tokenizer
	var def vocabDefaults
	switch v.Model {
	case "llama":
		t, def = llamaVocab(v, pieces, types)
	case "gpt2":
		var err error
		if t, def, err = gpt2Vocab(v, pieces, types); err != nil {
			return nil, err
		}
	case "":
		return nil, fmt.Errorf("tokenizer: tokenizer.ggml.model is missing")
	default:
		return nil, fmt.Errorf("tokenizer: tokenizer model %q is not supported (supported: llama, gpt2)", v.Model)
	}
	t.setVocabSpecials(v, def)
	t.setSpecials()
	return t, nil
}

// checkVocab checks the vocabulary's size and that its scores and types,
// when given, have one entry per token.
func checkVocab(v Vocab) error {
	n := len(v.Tokens)
	if n == 0 {
		return fmt.Errorf("tokenizer: the vocabulary has no tokens")
	}
	if n > maxVocab {
		return fmt.Errorf("tokenizer: %d tokens exceed the limit of %d", n, maxVocab)
	}
	if v.Scores != nil && len(v.Scores) != n {
		return fmt.Errorf("tokenizer: %d tokens but %d scores", n, len(v.Scores))
	}
	if v.Types != nil && len(v.Types) != n {
		return fmt.Errorf("tokenizer: %d tokens but %d token types", n, len(v.Types))
	}
	return nil
}

// vocabPieces copies the tokens, naming an empty one [EMPTY_<id>] as
// llama.cpp does, so the piece → id map stays one to one.
func vocabPieces(tokens []string) []string {
	pieces := make([]string, len(tokens))
	for i, p := range tokens {
		if p == "" {
			p = fmt.Sprintf("[EMPTY_%d]", i)
		}
		pieces[i] = p
	}
	return pieces
}

// vocabDefaults are llama.cpp's special ids and add_bos for a model when
// the metadata does not give them (-1: none).
type vocabDefaults struct {
	bos, eos, unk int
	addBOS        bool
}

// llamaVocab is a SentencePiece vocabulary ("llama"): spaces written as
// "▁", a dummy space prefix unless add_space_prefix is false, <0xHH> byte
// fallback, BOS 1, EOS 2, <unk> 0, and BOS added.
func llamaVocab(v Vocab, pieces []string, types []TokenType) (*Tokenizer, vocabDefaults) {
	t := newTokenizer(SentencePiece, pieces, v.Scores, types)
	t.escapeSpaces, t.addSpacePrefix = true, true
	if v.AddSpacePrefix != nil {
		t.addSpacePrefix = *v.AddSpacePrefix
	}
	t.dec = decoder{byteFallback: true, replace: [][2]string{{"▁", " "}}}
	if t.addSpacePrefix {
		t.dec.stripFirst = " "
	}
	return t, vocabDefaults{bos: 1, eos: 2, unk: 0, addBOS: true}
}

// gpt2Vocab is a byte-level BPE vocabulary ("gpt2"): the pre-tokenizer
// named by tokenizer.ggml.pre, the merges, BOS and EOS 11, no unknown
// token, and BOS added for the Llama 3 family only.
func gpt2Vocab(v Vocab, pieces []string, types []TokenType) (*Tokenizer, vocabDefaults, error) {
	def := vocabDefaults{bos: 11, eos: 11, unk: -1}
	t := newTokenizer(ByteLevelBPE, pieces, v.Scores, types)
	pre, ignore, err := preTokenizer(v.Pre)
	if err != nil {
		return nil, def, err
	}
	t.pre, t.ignoreMerges = pre, ignore
	switch v.Pre {
	case "llama3", "llama-v3", "llama-bpe", "falcon3":
		def.addBOS = true
	}
	if err := t.setMerges(v.Merges); err != nil {
		return nil, def, err
	}
	t.dec = decoder{byteLevel: true}
	return t, def, nil
}

// setVocabSpecials sets the special ids and flags the metadata gives,
// else the model's defaults, and the end-of-generation set.
func (t *Tokenizer) setVocabSpecials(v Vocab, def vocabDefaults) {
	n := len(t.pieces)
	// Ids out of range keep the default, as llama.cpp does ("bad special
	// token ... using default id"); a default outside a small vocabulary
	// means none.
	pick := func(p *int, fallback int) int {
		if p != nil && *p >= 0 && *p < n {
			return *p
		}
		if fallback >= n {
			return -1
		}
		return fallback
	}
	t.bos, t.eos, t.unkID = pick(v.BOS, def.bos), pick(v.EOS, def.eos), pick(v.UNK, def.unk)
	t.eot, t.pad = pick(v.EOT, -1), pick(v.PAD, -1)
	eom := pick(v.EOM, -1)
	t.addBOS, t.addEOS = def.addBOS, false
	if v.AddBOS != nil {
		t.addBOS = *v.AddBOS
	}
	if v.AddEOS != nil {
		t.addEOS = *v.AddEOS
	}
	t.chatTemplate = v.ChatTemplate
	t.setEOG(append([]int{eom}, t.controlByText()...)...)
}

// controlByText returns the ids of the end-of-turn tokens llama.cpp
// recognizes by their text, marking each a control token (llama.cpp
// overrides a control-looking token's type) and taking the first that is
// not <|eom_id|> as EOT when none is given.
func (t *Tokenizer) controlByText() []int {
	var ids []int
	for _, s := range []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<EOT>", "<|eom_id|>"} {
		id, ok := t.ids[s]
		if !ok {
			continue
		}
		if t.eot < 0 && s != "<|eom_id|>" {
			t.eot = id
		}
		ids = append(ids, id)
		t.types[id] = TypeControl
	}
	return ids
}

// setMerges parses "left right" merge rules (rank = position). A rule
// whose parts or result are no piece can never apply and is skipped, and
// a repeated pair keeps its first (lowest) rank.
func (t *Tokenizer) setMerges(merges []string) error {
	if len(merges) == 0 {
		return fmt.Errorf("tokenizer: a BPE vocabulary needs merges (tokenizer.ggml.merges)")
	}
	t.ranks = make(map[[2]int]merge, len(merges))
	for rank, m := range merges {
		k := strings.IndexByte(m[min(1, len(m)):], ' ') // the first space after the first byte, as llama.cpp
		if k < 0 {
			continue
		}
		k += min(1, len(m))
		a, b := m[:k], m[k+1:]
		t.addMerge(a, b, rank)
	}
	return nil
}

func (t *Tokenizer) addMerge(a, b string, rank int) {
	ia, ok1 := t.ids[a]
	ib, ok2 := t.ids[b]
	im, ok3 := t.ids[a+b]
	if !ok1 || !ok2 || !ok3 {
		return
	}
	key := [2]int{ia, ib}
	if _, dup := t.ranks[key]; !dup {
		t.ranks[key] = merge{rank: rank, id: im}
	}
}
