package tokenizer

import (
	"encoding/json"
	"fmt"
)

// The tokenizer.json (Hugging Face tokenizers) subset read here: a BPE
// model (vocab + merges, byte_fallback, ignore_merges, unk_token), the
// normalizers NFC, Prepend, Replace, Lowercase and Sequence, the
// pre-tokenizers Split (Isolated), ByteLevel, Metaspace, Digits and
// Sequence, the decoders ByteLevel, Replace, ByteFallback, Fuse, Strip,
// Metaspace and Sequence, added tokens (special ones are control tokens,
// the others user-defined), and a TemplateProcessing post-processor's BOS
// and EOS. Anything else is refused by name rather than tokenized
// differently. Decoding gives the exact text: clean_up_tokenization_spaces
// is not applied, and added tokens' single_word and normalized flags are
// ignored (they are false in the files we know).
//
// The file is read in steps, one file each: json_schema.go decodes the
// JSON, this file builds the BPE model (ids, pieces, merges),
// json_normalizer.go and json_decoder.go map the text pipeline,
// json_special.go the added and special tokens, and json_config.go
// tokenizer_config.json.

// maxJSONVocab bounds the ids a tokenizer.json may use, and maxJSONHoles
// the ids it may leave undefined below its largest.
const (
	maxJSONVocab = 1 << 22
	maxJSONHoles = 1 << 16
)

// FromJSON builds a tokenizer from the contents of a tokenizer.json and,
// optionally (nil when absent), its tokenizer_config.json, which gives
// add_bos/add_eos, the BOS/EOS/PAD tokens and the chat template. name is
// used in errors.
func FromJSON(tokenizerJSON, configJSON []byte, name string) (*Tokenizer, error) {
	fail := func(format string, a ...any) error {
		return fmt.Errorf("tokenizer %s: %s", name, fmt.Sprintf(format, a...))
	}
	var f jsonFile
	if err := json.Unmarshal(tokenizerJSON, &f); err != nil {
		return nil, fail("not a tokenizer.json: %v", err)
	}
	t, err := jsonModel(&f)
	if err != nil {
		return nil, fail("%v", err)
	}
	if t.norm, err = jsonNormalizers(f.Normalizer); err != nil {
		return nil, fail("normalizer: %v", err)
	}
	var pre []normalizer
	if t.pre, pre, err = jsonPreTokenizers(f.PreTokenizer); err != nil {
		return nil, fail("pre_tokenizer: %v", err)
	}
	t.norm = append(t.norm, pre...)
	if _, err := normalizerGrowth(t.norm); err != nil {
		return nil, fail("normalizer: %v", err)
	}
	if len(t.pre) > maxJSONSteps {
		return nil, fail("pre_tokenizer: %d splits, more than the %d allowed", len(t.pre), maxJSONSteps)
	}
	if t.dec, err = jsonDecoder(f.Decoder, t.kind); err != nil {
		return nil, fail("decoder: %v", err)
	}
	bos, eos := jsonTemplate(f.PostProcessor)
	t.bos, t.eos = bos, eos
	t.addBOS, t.addEOS = bos >= 0, eos >= 0
	if configJSON != nil {
		if err := t.applyConfig(configJSON); err != nil {
			return nil, fail("tokenizer_config.json: %v", err)
		}
	}
	t.setEndTokensByText()
	t.setSpecials()
	return t, nil
}

// jsonModel builds the tokenizer of f's BPE model: its pieces (vocab and
// added tokens), unknown token and merge ranks. The kind is byte-level
// BPE when a ByteLevel pre-tokenizer spells the text in GPT-2's byte
// alphabet, else plain merges BPE.
func jsonModel(f *jsonFile) (*Tokenizer, error) {
	m := &f.Model
	if err := checkJSONModel(m); err != nil {
		return nil, err
	}
	n, err := jsonIDSpace(f)
	if err != nil {
		return nil, err
	}
	pieces, types, err := jsonVocab(m.Vocab, n)
	if err != nil {
		return nil, err
	}
	lstrip, rstrip := addAddedTokens(f, pieces, types)
	kind := MergesBPE
	if hasNode(f.PreTokenizer, "ByteLevel") {
		kind = ByteLevelBPE
	}
	t := newTokenizer(kind, pieces, nil, types)
	t.lstrip, t.rstrip = lstrip, rstrip
	t.ignoreMerges, t.fallback = m.IgnoreMerges, m.ByteFallback && kind == MergesBPE
	if m.UnkToken != nil {
		id, ok := t.ids[*m.UnkToken]
		if !ok {
			return nil, fmt.Errorf("unk_token %q is not in the vocabulary", *m.UnkToken)
		}
		t.unkID = id
	}
	merges, err := parseMerges(m.Merges)
	if err != nil {
		return nil, err
	}
	t.ranks = make(map[[2]int]merge, len(merges))
	for rank, mg := range merges {
		t.addMerge(mg[0], mg[1], rank)
	}
	return t, nil
}

// checkJSONModel refuses the BPE variants this package does not run
// (other model types, dropout, subword prefixes and suffixes) by name.
func checkJSONModel(m *jsonModelSection) error {
	if m.Type != "BPE" {
		if m.Type == "" && m.Vocab != nil {
			m.Type = "BPE" // older files leave the type out
		} else {
			return fmt.Errorf("model type %q is not supported (only BPE)", m.Type)
		}
	}
	if m.Dropout != nil && *m.Dropout != 0 {
		return fmt.Errorf("BPE dropout %g is not supported", *m.Dropout)
	}
	if (m.Prefix != nil && *m.Prefix != "") || (m.Suffix != nil && *m.Suffix != "") {
		return fmt.Errorf("continuing_subword_prefix / end_of_word_suffix are not supported")
	}
	return nil
}

// jsonIDSpace returns the vocabulary size: one past the largest id of the
// vocab and the added tokens. A hole (an id neither uses) becomes an
// unused empty piece.
func jsonIDSpace(f *jsonFile) (int, error) {
	n := 0
	for p, id := range f.Model.Vocab {
		if id < 0 || id >= maxJSONVocab {
			return 0, fmt.Errorf("vocab id %d of %q out of range [0, %d)", id, p, maxJSONVocab)
		}
		n = max(n, id+1)
	}
	for _, a := range f.AddedTokens {
		if a.ID < 0 || a.ID >= maxJSONVocab {
			return 0, fmt.Errorf("added token id %d of %q out of range [0, %d)", a.ID, a.Content, maxJSONVocab)
		}
		if a.Content == "" {
			return 0, fmt.Errorf("added token %d has no content", a.ID)
		}
		n = max(n, a.ID+1)
	}
	if n == 0 {
		return 0, fmt.Errorf("empty vocabulary")
	}
	// Holes in the id space are allowed, but not so many that a few bytes
	// of JSON could make us allocate tables for millions of ids.
	if entries := len(f.Model.Vocab) + len(f.AddedTokens); n > entries+maxJSONHoles {
		return 0, fmt.Errorf("ids reach %d but only %d tokens are defined", n-1, entries)
	}
	return n, nil
}

// jsonVocab lays the vocab's pieces out by id over n ids, the holes
// unused.
func jsonVocab(vocab map[string]int, n int) ([]string, []TokenType, error) {
	pieces := make([]string, n)
	types := make([]TokenType, n)
	for i := range types {
		types[i] = TypeUnused
	}
	for p, id := range vocab {
		if types[id] != TypeUnused { // vocab keys differ, so this is a second piece
			return nil, nil, fmt.Errorf("vocab id %d is used by both %q and %q", id, pieces[id], p)
		}
		pieces[id], types[id] = p, TypeNormal
	}
	return pieces, types, nil
}
