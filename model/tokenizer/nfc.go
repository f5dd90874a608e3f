package tokenizer

import (
	"slices"
	"sort"
	"unicode/utf8"
)

// Hangul syllables compose and decompose by arithmetic (Unicode §3.12).
const (
	hangulS, hangulL, hangulV, hangulT = 0xAC00, 0x1100, 0x1161, 0x11A7
	hangulLCount, hangulVCount         = 19, 21
	hangulTCount                       = 28
	hangulN                            = hangulVCount * hangulTCount
	hangulSCount                       = hangulLCount * hangulN
)

// nfc returns s in Unicode Normalization Form C (the tokenizer.json NFC
// normalizer of Qwen2/Qwen3): canonical decomposition, canonical
// ordering of combining marks, then canonical composition, with the
// tables of nfc_tables.go. Text made only of code points below U+0300 is
// already NFC and returned as is, which is most text. Bytes that are not
// UTF-8 are kept as they are, and the valid text between them normalized.
func nfc(s string) string {
	quick := true
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r >= 0x300 && n > 1 {
			quick = false
			break
		}
		i += n
	}
	if quick {
		return s
	}
	var b []byte
	for len(s) > 0 {
		k := 0
		for k < len(s) {
			r, n := utf8.DecodeRuneInString(s[k:])
			if r == utf8.RuneError && n == 1 {
				break
			}
			k += n
		}
		b = append(b, nfcValid(s[:k])...)
		if k < len(s) {
			b = append(b, s[k]) // an invalid byte, kept
			k++
		}
		s = s[k:]
	}
	return string(b)
}

// nfcValid is nfc of valid UTF-8.
func nfcValid(s string) string {
	var d []rune
	for _, r := range s {
		d = decompose(d, r)
	}
	// Canonical ordering: each run of non-starters sorted by class, stably.
	for i := 0; i < len(d); {
		if combiningClass(d[i]) == 0 {
			i++
			continue
		}
		j := i
		for j < len(d) && combiningClass(d[j]) != 0 {
			j++
		}
		run := d[i:j]
		sort.SliceStable(run, func(a, b int) bool { return combiningClass(run[a]) < combiningClass(run[b]) })
		i = j
	}
	// Canonical composition: a character joins the last starter unless a
	// character between them is blocking (class 0, or a class >= its own).
	out := d[:0]
	starter, lastCC := -1, -1 // lastCC: class of the last kept character after the starter, -1 if none
	for _, c := range d {
		cc := int(combiningClass(c))
		if starter >= 0 && (lastCC == -1 || lastCC < cc) {
			if p, ok := compose(out[starter], c); ok {
				out[starter] = p
				continue
			}
		}
		if cc == 0 {
			starter, lastCC = len(out), -1
		} else {
			lastCC = cc
		}
		out = append(out, c)
	}
	return string(out)
}

// decompose appends the full canonical decomposition of r.
func decompose(d []rune, r rune) []rune {
	if r >= hangulS && r < hangulS+hangulSCount {
		i := r - hangulS
		d = append(d, hangulL+i/hangulN, hangulV+(i%hangulN)/hangulTCount)
		if t := i % hangulTCount; t != 0 {
			d = append(d, hangulT+t)
		}
		return d
	}
	p, ok := nfcDecomp[r]
	if !ok {
		return append(d, r)
	}
	d = decompose(d, p[0])
	if p[1] != 0 {
		d = decompose(d, p[1])
	}
	return d
}

// compose returns the primary composite of a and b, if any.
func compose(a, b rune) (rune, bool) {
	if a >= hangulL && a < hangulL+hangulLCount && b >= hangulV && b < hangulV+hangulVCount {
		return hangulS + ((a-hangulL)*hangulVCount+(b-hangulV))*hangulTCount, true
	}
	if a >= hangulS && a < hangulS+hangulSCount && (a-hangulS)%hangulTCount == 0 && b > hangulT && b < hangulT+hangulTCount {
		return a + (b - hangulT), true
	}
	p, ok := nfcComp[[2]rune{a, b}]
	return p, ok
}

// combiningClass is the canonical combining class of r (0 for starters).
func combiningClass(r rune) uint8 {
	i, found := slices.BinarySearchFunc(nfcCCC, r, func(e struct {
		lo, hi rune
		c      uint8
	}, r rune) int {
		switch {
		case e.hi < r:
			return -1
		case e.lo > r:
			return 1
		}
		return 0
	})
	if !found {
		return 0
	}
	return nfcCCC[i].c
}
