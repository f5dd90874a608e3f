package tokenizer

// RunCPrintable applies run.c's safe_printf rule to a decoded piece: a
// piece that is a single byte which is neither printable nor whitespace in
// the C locale (control bytes, and every byte >= 0x80 from a <0xHH> byte
// piece) is not printed, so the printed text is exactly run.c's. It
// returns the piece to print ("" for such a byte).
func RunCPrintable(piece string) string {
	if len(piece) == 1 {
		c := piece[0]
		printable := c >= 0x20 && c < 0x7f
		space := c == ' ' || (c >= '\t' && c <= '\r')
		if !printable && !space {
			return ""
		}
	}
	return piece
}

// Printable is what a CLI prints for piece, a decoded token of codec:
// RunCPrintable's rule for the codecs that follow run.c (a llama2.c
// tokenizer.bin, and Bytes), so their output is run.c's byte for byte, and
// the piece unchanged for every other tokenizer, whose single-byte pieces
// are parts of UTF-8 characters (byte-level BPE's "Ã", a <0xE4> byte
// fallback) that must reach the output for the text to come out whole.
func Printable(codec Codec, piece string) string {
	switch c := codec.(type) {
	case *Tokenizer:
		if !c.runc {
			return piece
		}
	case *Bytes:
	default:
		return piece
	}
	return RunCPrintable(piece)
}

// PrintableText is the text of ids after prev (model.BOSID for a
// sequence's first token) as a front end prints it, piece by piece:
// Decode(prev, id) under Printable's rule, so a run.c codec's text is
// run.c's byte for byte.
func PrintableText(codec Codec, prev int, ids []int) string {
	var b []byte
	for _, id := range ids {
		b = append(b, Printable(codec, codec.Decode(prev, id))...)
		prev = id
	}
	return string(b)
}
