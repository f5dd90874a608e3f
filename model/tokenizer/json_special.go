package tokenizer

// A tokenizer.json's added and special tokens: the added_tokens entries
// (special ones are control tokens, cut out of the text only when special
// tokens are parsed; the others user-defined, always cut out), the BOS and
// EOS a TemplateProcessing post-processor adds, and the end-of-turn and
// end-of-generation tokens known by their text.

// addAddedTokens writes the added tokens over the vocab's pieces and
// types, and returns the ids whose lstrip and rstrip flags are set (the
// spaces to their left or right are part of the token).
func addAddedTokens(f *jsonFile, pieces []string, types []TokenType) (lstrip, rstrip map[int]bool) {
	lstrip, rstrip = map[int]bool{}, map[int]bool{}
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
	return lstrip, rstrip
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

// setEndTokensByText finds the end-of-turn token, when not already known,
// by the texts chat models use for it, and adds the end-of-generation
// tokens llama.cpp recognizes by text to EOS and EOT.
func (t *Tokenizer) setEndTokensByText() {
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
}
