package tokenizer

// Segment is one stretch of a text to encode with EncodeSegments. A
// literal segment never yields control tokens, whatever it spells; the
// other segments have control tokens parsed when the options ask for it.
// A chat front end marks what a user typed as literal, so that a message
// holding "<|im_end|>" cannot end its own turn.
type Segment struct {
	Text    string
	Literal bool
}

// EncodeSegments tokenizes the concatenation of segs as EncodeWith does,
// except that control (and unknown) tokens are cut out only of the
// segments that are not literal. The plain text on either side of a
// segment boundary is merged as one text, so a prompt whose literal
// segments spell no control token encodes exactly as EncodeWith encodes
// the whole text.
func (t *Tokenizer) EncodeSegments(segs []Segment, o EncodeOptions) ([]int, error) {
	var frags []fragment
	for _, s := range segs {
		for _, f := range t.partition(s.Text, o.ParseSpecial && !s.Literal) {
			if n := len(frags); f.id < 0 && n > 0 && frags[n-1].id < 0 {
				frags[n-1].text += f.text
				continue
			}
			frags = append(frags, f)
		}
	}
	return t.encodeFragments(frags, o)
}
