package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
)

// jsonFile is the part of tokenizer.json read here (see json.go).
type jsonFile struct {
	AddedTokens   []jsonAddedToken `json:"added_tokens"`
	Normalizer    *jsonNode        `json:"normalizer"`
	PreTokenizer  *jsonNode        `json:"pre_tokenizer"`
	PostProcessor *jsonNode        `json:"post_processor"`
	Decoder       *jsonNode        `json:"decoder"`
	Model         jsonModelSection `json:"model"`
}

// jsonAddedToken is one entry of added_tokens.
type jsonAddedToken struct {
	ID      int    `json:"id"`
	Content string `json:"content"`
	Special bool   `json:"special"`
	LStrip  bool   `json:"lstrip"`
	RStrip  bool   `json:"rstrip"`
	// Read only so that a value of the wrong type is refused, not skipped.
	SingleWord *bool `json:"single_word"`
	Normalized *bool `json:"normalized"`
}

// jsonModelSection is the model object: a BPE vocabulary and its merges.
type jsonModelSection struct {
	Type         string          `json:"type"`
	Vocab        map[string]int  `json:"vocab"`
	Merges       json.RawMessage `json:"merges"`
	ByteFallback bool            `json:"byte_fallback"`
	IgnoreMerges bool            `json:"ignore_merges"`
	UnkToken     *string         `json:"unk_token"`
	Dropout      *float64        `json:"dropout"`
	Prefix       *string         `json:"continuing_subword_prefix"`
	Suffix       *string         `json:"end_of_word_suffix"`
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
