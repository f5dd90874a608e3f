package tokenizer

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNFCTablesCurrent regenerates nfc_tables.go and compares it byte for
// byte, when a python3 with the same Unicode version is at hand.
func TestNFCTablesCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: regenerating the NFC tables takes seconds")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("skipping: no python3 to run scripts/gen-nfc-tables.py")
	}
	ver, err := exec.Command(py, "-c", "import unicodedata; print(unicodedata.unidata_version)").Output()
	if err != nil || strings.TrimSpace(string(ver)) != nfcUnicodeVersion {
		t.Skipf("skipping: python3's Unicode is %q, the tables' %s", strings.TrimSpace(string(ver)), nfcUnicodeVersion)
	}
	gen, err := exec.Command(py, filepath.Join("..", "..", "scripts", "gen-nfc-tables.py")).Output()
	if err != nil {
		t.Fatal(err)
	}
	gofmt := exec.Command(filepath.Join(goroot(t), "bin", "gofmt"))
	gofmt.Stdin = bytes.NewReader(gen)
	want, err := gofmt.Output()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("nfc_tables.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("nfc_tables.go is stale: python3 scripts/gen-nfc-tables.py | gofmt > model/tokenizer/nfc_tables.go")
	}
}

func goroot(t *testing.T) string {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Skipf("skipping: go env GOROOT: %v", err)
	}
	return strings.TrimSpace(string(out))
}

func TestNFCCases(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain ascii", "plain ascii"},
		{"e\u0301", "\u00e9"},                  // composition
		{"\u212b", "\u00c5"},                   // singleton Angstrom sign
		{"a\u0323\u0307", "\u1ea1\u0307"},      // dot below (220) first, then compose
		{"a\u0307\u0323", "\u1ea1\u0307"},      // reordered into the same
		{"\u0958", "\u0915\u093c"},             // composition exclusion: stays decomposed
		{"\u1100\u1161\u11a8", "\uac01"},       // Hangul L V T
		{"\uac00\u11a8", "\uac01"},             // Hangul LV + T
		{"\u00e9\u0301", "\u00e9\u0301"},       // é + acute: no composite
		{"\u0301a", "\u0301a"},                 // leading non-starter
		{"\u0b47\u0b3e", "\u0b4b"},             // two starters compose
		{"e\u0301\u0301", "\u00e9\u0301"},      // the second acute is blocked
		{"q\u0307\u0323", "q\u0323\u0307"},     // no composite: only reordered
		{"\ufb2c", "\u05e9\u05bc\u05c1"},       // excluded: decomposes fully, never recomposes
		{"\u1e9b\u0323", "\u1e9b\u0323"},       // ẛ̣
		{"\U0001d15e", "\U0001d157\U0001d165"}, // musical symbols: excluded
	} {
		if got := nfc(tc.in); got != tc.want {
			t.Errorf("nfc(%+q) = %+q, want %+q", tc.in, got, tc.want)
		}
	}
}
