package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
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

type jsonFile struct {
	AddedTokens []struct {
		ID      int    `json:"id"`
		Content string `json:"content"`
		Special bool   `json:"special"`
		LStrip  bool   `json:"lstrip"`
		RStrip  bool   `json:"rstrip"`
	} `json:"added_tokens"`
	Normalizer    *jsonNode `json:"normalizer"`
	PreTokenizer  *jsonNode `json:"pre_tokenizer"`
	PostProcessor *jsonNode `json:"post_processor"`
	Decoder       *jsonNode `json:"decoder"`
	Model         struct {
		Type         string          `json:"type"`
		Vocab        map[string]int  `json:"vocab"`
		Merges       json.RawMessage `json:"merges"`
		ByteFallback bool            `json:"byte_fallback"`
		IgnoreMerges bool            `json:"ignore_merges"`
		UnkToken     *string         `json:"unk_token"`
		Dropout      *float64        `json:"dropout"`
		Prefix       *string         `json:"continuing_subword_prefix"`
		Suffix       *string         `json:"end_of_word_suffix"`
	} `json:"model"`
}

// jsonNode is one normalizer, pre-tokenizer, post-processor or decoder.
type jsonNode struct {
	Type          string     `json:"type"`
	Normalizers   []jsonNode `json:"normalizers"`
	Pretokenizers []jsonNode `json:"pretokenizers"`
	Decoders      []jsonNode `json:"decoders"`
	Pattern       struct {
		String *string `json:"String"`
		Regex  *string `json:"Regex"`
	} `json:"pattern"`
	Content        *string `json:"content"`
	Prepend        string  `json:"prepend"`
	Behavior       string  `json:"behavior"`
	Invert         bool    `json:"invert"`
	AddPrefixSpace bool    `json:"add_prefix_space"`
	UseRegex       *bool   `json:"use_regex"`
	Replacement    string  `json:"replacement"`
	PrependScheme  string  `json:"prepend_scheme"`
	Split          *bool   `json:"split"`
	Individual     bool    `json:"individual_digits"`
	Start          int     `json:"start"`
	Stop           int     `json:"stop"`
	Single         []struct {
		SpecialToken *struct {
			ID string `json:"id"`
		} `json:"SpecialToken"`
		Sequence *struct{} `json:"Sequence"`
	} `json:"single"`
	SpecialTokens map[string]struct {
		IDs []int `json:"ids"`
	} `json:"special_tokens"`
	Processors []jsonNode `json:"processors"`
}

// jsonConfig is the part of tokenizer_config.json read here.
type jsonConfig struct {
	AddBOS       *bool           `json:"add_bos_token"`
	AddEOS       *bool           `json:"add_eos_token"`
	BOS          json.RawMessage `json:"bos_token"`
	EOS          json.RawMessage `json:"eos_token"`
	Pad          json.RawMessage `json:"pad_token"`
	ChatTemplate json.RawMessage `json:"chat_template"`
}

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
	m := &f.Model
	if m.Type != "BPE" {
		if m.Type == "" && m.Vocab != nil {
			m.Type = "BPE" // older files leave the type out
		} else {
			return nil, fail("model type %q is not supported (only BPE)", m.Type)
		}
	}
	if m.Dropout != nil && *m.Dropout != 0 {
		return nil, fail("BPE dropout %g is not supported", *m.Dropout)
	}
	if (m.Prefix != nil && *m.Prefix != "") || (m.Suffix != nil && *m.Suffix != "") {
		return nil, fail("continuing_subword_prefix / end_of_word_suffix are not supported")
	}
	// The id space: vocab and added tokens; a hole is an unused empty piece.
	n := 0
	for p, id := range m.Vocab {
		if id < 0 || id >= maxJSONVocab {
			return nil, fail("vocab id %d of %q out of range [0, %d)", id, p, maxJSONVocab)
		}
		n = max(n, id+1)
	}
	for _, a := range f.AddedTokens {
		if a.ID < 0 || a.ID >= maxJSONVocab {
			return nil, fail("added token id %d of %q out of range [0, %d)", a.ID, a.Content, maxJSONVocab)
		}
		if a.Content == "" {
			return nil, fail("added token %d has no content", a.ID)
		}
		n = max(n, a.ID+1)
	}
	if n == 0 {
		return nil, fail("empty vocabulary")
	}
	// Holes in the id space are allowed, but not so many that a few bytes
	// of JSON could make us allocate tables for millions of ids.
	if entries := len(m.Vocab) + len(f.AddedTokens); n > entries+maxJSONHoles {
		return nil, fail("ids reach %d but only %d tokens are defined", n-1, entries)
	}
	pieces := make([]string, n)
	types := make([]TokenType, n)
	for i := range types {
		types[i] = TypeUnused
	}
	for p, id := range m.Vocab {
		if types[id] != TypeUnused && pieces[id] != p {
			return nil, fail("vocab id %d is used by both %q and %q", id, pieces[id], p)
		}
		pieces[id], types[id] = p, TypeNormal
	}
	lstrip, rstrip := map[int]bool{}, map[int]bool{}
	for _, a := range f.AddedTokens {
		pieces[a.ID] = a.Content
		types[a.ID] = TypeUserDefined
		if a.Special {
			types[a.ID] = TypeControl
		}
		if a.LStrip {
			lstrip[a.ID] = true
		}
		if a.RStrip {
			rstrip[a.ID] = true
		}
	}
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
			return nil, fail("unk_token %q is not in the vocabulary", *m.UnkToken)
		}
		t.unkID = id
	}
	merges, err := parseMerges(m.Merges)
	if err != nil {
		return nil, fail("%v", err)
	}
	t.ranks = make(map[[2]int]merge, len(merges))
	for rank, mg := range merges {
		t.addMerge(mg[0], mg[1], rank)
	}
	if t.norm, err = jsonNormalizers(f.Normalizer); err != nil {
		return nil, fail("normalizer: %v", err)
	}
	var pre []normalizer
	if t.pre, pre, err = jsonPreTokenizers(f.PreTokenizer); err != nil {
		return nil, fail("pre_tokenizer: %v", err)
	}
	t.norm = append(t.norm, pre...)
	if t.dec, err = jsonDecoder(f.Decoder, kind); err != nil {
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
	for _, s := range []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<EOT>"} {
		if id, ok := t.ids[s]; ok && t.eot < 0 {
			t.eot = id
		}
	}
	var extra []int
	for _, s := range []string{"<|eom_id|>", "<|end_of_text|>", "<|endoftext|>", "<|im_end|>", "<|eot_id|>"} {
		if id, ok := t.ids[s]; ok {
			extra = append(extra, id)
		}
	}
	t.setEOG(extra...)
	t.setSpecials()
	return t, nil
}

// hasNode reports whether a node of type typ appears in n (or its
// Sequence).
func hasNode(n *jsonNode, typ string) bool {
	if n == nil {
		return false
	}
	if n.Type == typ {
		return true
	}
	for i := range n.Pretokenizers {
		if hasNode(&n.Pretokenizers[i], typ) {
			return true
		}
	}
	return false
}

// parseMerges reads merges written either as "a b" strings or as
// ["a", "b"] pairs (newer files, which allow spaces inside pieces).
func parseMerges(raw json.RawMessage) ([][2]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var strs []string
	if err := json.Unmarshal(raw, &strs); err == nil {
		out := make([][2]string, 0, len(strs))
		for i, s := range strs {
			a, b, ok := strings.Cut(s, " ")
			if !ok {
				return nil, fmt.Errorf("merge %d %q is not two pieces separated by a space", i, s)
			}
			out = append(out, [2]string{a, b})
		}
		return out, nil
	}
	var pairs [][]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return nil, fmt.Errorf("merges are neither strings nor pairs: %v", err)
	}
	out := make([][2]string, 0, len(pairs))
	for i, p := range pairs {
		if len(p) != 2 {
			return nil, fmt.Errorf("merge %d has %d parts, not 2", i, len(p))
		}
		out = append(out, [2]string{p[0], p[1]})
	}
	return out, nil
}

func jsonNormalizers(n *jsonNode) ([]normalizer, error) {
	if n == nil {
		return nil, nil
	}
	switch n.Type {
	case "Sequence":
		var out []normalizer
		for i := range n.Normalizers {
			s, err := jsonNormalizers(&n.Normalizers[i])
			if err != nil {
				return nil, err
			}
			out = append(out, s...)
		}
		return out, nil
	case "NFC":
		return []normalizer{{op: "nfc"}}, nil
	case "Prepend":
		return []normalizer{{op: "prepend", a: n.Prepend}}, nil
	case "Lowercase":
		return []normalizer{{op: "lowercase"}}, nil
	case "Replace":
		if n.Pattern.String == nil || n.Content == nil {
			return nil, errors.New("Replace supports only a String pattern")
		}
		return []normalizer{{op: "replace", a: *n.Pattern.String, b: *n.Content}}, nil
	}
	return nil, fmt.Errorf("%q is not supported", n.Type)
}

// Known pre-tokenizer patterns, served by the hand-written splitters.
const (
	patGPT2   = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	patLlama3 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	patQwen2  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// jsonPreTokenizers returns the splitters and the text rewrites (ByteLevel's
// prefix space, Metaspace's ▁) a pre-tokenizer implies.
func jsonPreTokenizers(n *jsonNode) ([]splitter, []normalizer, error) {
	if n == nil {
		return nil, nil, nil
	}
	switch n.Type {
	case "Sequence":
		var sp []splitter
		var norm []normalizer
		for i := range n.Pretokenizers {
			s, nn, err := jsonPreTokenizers(&n.Pretokenizers[i])
			if err != nil {
				return nil, nil, err
			}
			sp, norm = append(sp, s...), append(norm, nn...)
		}
		return sp, norm, nil
	case "ByteLevel":
		var norm []normalizer
		if n.AddPrefixSpace {
			norm = append(norm, normalizer{op: "prefix-space"})
		}
		if n.UseRegex == nil || *n.UseRegex {
			return []splitter{splitGPT2}, norm, nil
		}
		return nil, norm, nil
	case "Split":
		if n.Invert {
			return nil, nil, errors.New("Split with invert is not supported")
		}
		if n.Behavior != "Isolated" {
			return nil, nil, fmt.Errorf("Split behavior %q is not supported (only Isolated)", n.Behavior)
		}
		switch {
		case n.Pattern.Regex != nil:
			sp, err := regexSplitter(*n.Pattern.Regex)
			if err != nil {
				return nil, nil, err
			}
			return []splitter{sp}, nil, nil
		case n.Pattern.String != nil && *n.Pattern.String != "":
			return []splitter{literalSplitter(*n.Pattern.String)}, nil, nil
		}
		return nil, nil, errors.New("Split without a pattern")
	case "Digits":
		return []splitter{isolate(isN, !n.Individual)}, nil, nil
	case "Metaspace":
		r := n.Replacement
		if r == "" {
			r = "▁"
		}
		norm := []normalizer{{op: "replace", a: " ", b: r}}
		switch n.PrependScheme {
		case "first":
			norm = append([]normalizer{{op: "prefix-space-first"}}, norm...)
		case "never":
		default: // "always", and older files' add_prefix_space
			norm = append([]normalizer{{op: "prefix-space"}}, norm...)
		}
		if n.Split != nil && *n.Split {
			return []splitter{beforeEach(r)}, norm, nil
		}
		return nil, norm, nil
	}
	return nil, nil, fmt.Errorf("%q is not supported", n.Type)
}

// regexSplitter serves the GPT-2, Llama 3 and Qwen2 patterns by hand, and
// any other pattern that Go's RE2 compiles (no lookahead) by regexp.
func regexSplitter(pat string) (splitter, error) {
	switch pat {
	case patGPT2:
		return splitGPT2, nil
	case patLlama3:
		return splitLlama3(3), nil
	case patQwen2:
		return splitLlama3(1), nil
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		return nil, fmt.Errorf("Split pattern %q: Go's regexp cannot run it (%v)", pat, err)
	}
	return func(r []rune, emit func(int)) {
		s := string(r)
		// Byte offsets → rune counts.
		last := 0
		for _, m := range re.FindAllStringIndex(s, -1) {
			if m[0] == m[1] {
				continue
			}
			emit(len([]rune(s[last:m[0]])))
			emit(len([]rune(s[m[0]:m[1]])))
			last = m[1]
		}
		emit(len([]rune(s[last:])))
	}, nil
}

// literalSplitter isolates every occurrence of lit.
func literalSplitter(lit string) splitter {
	return func(r []rune, emit func(int)) {
		s := string(r)
		for {
			k := strings.Index(s, lit)
			if k < 0 {
				emit(len([]rune(s)))
				return
			}
			emit(len([]rune(s[:k])))
			emit(len([]rune(lit)))
			s = s[k+len(lit):]
		}
	}
}

// beforeEach splits before every occurrence of sep (Metaspace's split:
// each word keeps its leading ▁).
func beforeEach(sep string) splitter {
	sr := []rune(sep)
	return func(r []rune, emit func(int)) {
		start := 0
		for i := 1; i < len(r); i++ {
			if len(sr) == 1 && r[i] == sr[0] {
				emit(i - start)
				start = i
			}
		}
		emit(len(r) - start)
	}
}

func jsonDecoder(n *jsonNode, kind Kind) (decoder, error) {
	var d decoder
	if n == nil {
		d.byteLevel = kind == ByteLevelBPE
		return d, nil
	}
	var walk func(n *jsonNode) error
	walk = func(n *jsonNode) error {
		switch n.Type {
		case "Sequence":
			for i := range n.Decoders {
				if err := walk(&n.Decoders[i]); err != nil {
					return err
				}
			}
		case "ByteLevel":
			d.byteLevel = true
		case "ByteFallback":
			d.byteFallback = true
		case "Fuse":
			// Joining the pieces is what decoding does anyway.
		case "Replace":
			if n.Pattern.String == nil || n.Content == nil {
				return errors.New("Replace supports only a String pattern")
			}
			d.replace = append(d.replace, [2]string{*n.Pattern.String, *n.Content})
		case "Strip":
			if n.Content == nil || n.Start > 1 || n.Stop != 0 {
				return errors.New("Strip supports only removing one leading character")
			}
			if n.Start == 1 {
				d.stripFirst = *n.Content
			}
		case "Metaspace":
			r := n.Replacement
			if r == "" {
				r = "▁"
			}
			d.replace = append(d.replace, [2]string{r, " "})
			if n.PrependScheme != "never" {
				d.stripFirst = " "
			}
		default:
			return fmt.Errorf("%q is not supported", n.Type)
		}
		return nil
	}
	return d, walk(n)
}

// jsonTemplate returns the BOS and EOS ids a TemplateProcessing
// post-processor wraps a single text in (-1 for none).
func jsonTemplate(n *jsonNode) (bos, eos int) {
	bos, eos = -1, -1
	if n == nil {
		return
	}
	if n.Type == "Sequence" {
		for i := range n.Processors {
			if b, e := jsonTemplate(&n.Processors[i]); b >= 0 || e >= 0 {
				return b, e
			}
		}
		return
	}
	if n.Type != "TemplateProcessing" {
		return
	}
	idOf := func(name string) int {
		if st, ok := n.SpecialTokens[name]; ok && len(st.IDs) == 1 {
			return st.IDs[0]
		}
		return -1
	}
	for i, s := range n.Single {
		if s.SpecialToken == nil {
			continue
		}
		if i == 0 {
			bos = idOf(s.SpecialToken.ID)
		} else if i == len(n.Single)-1 {
			eos = idOf(s.SpecialToken.ID)
		}
	}
	return
}

// applyConfig reads tokenizer_config.json.
func (t *Tokenizer) applyConfig(b []byte) error {
	var c jsonConfig
	if err := json.Unmarshal(b, &c); err != nil {
		return err
	}
	tokenID := func(raw json.RawMessage, what string) (int, error) {
		if len(raw) == 0 || string(raw) == "null" {
			return -1, nil
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			var obj struct {
				Content string `json:"content"`
			}
			if err := json.Unmarshal(raw, &obj); err != nil {
				return -1, fmt.Errorf("%s is neither a string nor a token object", what)
			}
			s = obj.Content
		}
		id, ok := t.ids[s]
		if !ok {
			return -1, fmt.Errorf("%s %q is not in the vocabulary", what, s)
		}
		return id, nil
	}
	var err error
	var bos, eos int
	if bos, err = tokenID(c.BOS, "bos_token"); err != nil {
		return err
	}
	if eos, err = tokenID(c.EOS, "eos_token"); err != nil {
		return err
	}
	if bos >= 0 {
		t.bos = bos
	}
	if eos >= 0 {
		t.eos = eos
	}
	if t.pad, err = tokenID(c.Pad, "pad_token"); err != nil {
		return err
	}
	if c.AddBOS != nil {
		t.addBOS = *c.AddBOS
	}
	if c.AddEOS != nil {
		t.addEOS = *c.AddEOS
	}
	if t.addBOS && t.bos < 0 {
		return errors.New("add_bos_token is set but there is no bos_token")
	}
	if t.addEOS && t.eos < 0 {
		return errors.New("add_eos_token is set but there is no eos_token")
	}
	if len(c.ChatTemplate) > 0 && string(c.ChatTemplate) != "null" {
		var s string
		if json.Unmarshal(c.ChatTemplate, &s) == nil {
			t.chatTemplate = s
		} else {
			// A list of named templates: keep "default", else the first.
			var named []struct {
				Name     string `json:"name"`
				Template string `json:"template"`
			}
			if err := json.Unmarshal(c.ChatTemplate, &named); err != nil {
				return errors.New("chat_template is neither a string nor a list of named templates")
			}
			for i, nt := range named {
				if nt.Name == "default" || (i == 0 && t.chatTemplate == "") {
					t.chatTemplate = nt.Template
				}
			}
		}
	}
	return nil
}
