package tokenizer

import (
	"errors"
	"fmt"
)

// jsonDecoder maps a tokenizer.json decoder (or a Sequence of them) to the
// decoder's switches; without one, byte-level BPE still decodes its byte
// alphabet.
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
