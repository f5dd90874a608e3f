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
