package kvcache

import (
	"math"
	"strings"
	"testing"
)

func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"1048576", 1 << 20},
		{"64MiB", 64 << 20},
		{"64mib", 64 << 20},
		{"64 MiB", 64 << 20},
		{"  2GiB  ", 2 << 30},
		{"1.5GiB", 3 << 29},
		{".5KiB", 512},
		{"5.", 5},
		{"512kB", 512000},
		{"512K", 512000},
		{"3M", 3000000},
		{"1Gi", 1 << 30},
		{"1TB", 1e12},
		{"1TiB", 1 << 40},
		{"7B", 7},
		{"1.0001KiB", 1024}, // 1024.1024 bytes rounds down
		{"0.9B", 0},
		{"8388607TiB", 8388607 << 40},
		{"9223372036854775807", math.MaxInt64},
		{"000064MiB", 64 << 20},
	} {
		got, err := ParseBytes(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"", "want a number"},
		{"MiB", "want a number"},
		{"-1MiB", "want a number"},
		{"1..2", "malformed"},
		{".", "malformed"},
		{"1.2.3", "malformed"},
		{"12 parsecs", "unknown unit"},
		{"1e9", "unknown unit"},
		{"64 M iB", "unknown unit"},
		{"0x10", "unknown unit"},
		{"8388608TiB", "exceeds"},
		{"9223372036854775808", "exceeds"},
		{strings.Repeat("9", 65), "more than 64"},
	} {
		_, err := ParseBytes(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseBytes(%q) err = %v, want it to mention %q", tc.in, err, tc.want)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{{0, "0B"}, {1, "1B"}, {1536, "1536B"}, {1024, "1KiB"}, {64 << 20, "64MiB"}, {3 << 29, "1536MiB"}, {5 << 40, "5TiB"}} {
		if got := formatBytes(tc.n); got != tc.want {
			t.Errorf("formatBytes(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

// FuzzParseBytes checks that ParseBytes never panics, never returns a
// negative size, round-trips through FormatBytes, and agrees with a
// float64 evaluation of the same text within float precision.
func FuzzParseBytes(f *testing.F) {
	for _, s := range []string{"64MiB", "1.5 GiB", "512kB", "0", ".5KiB", "1e9", "-1", "9223372036854775807", "8388608TiB", "1..2", " 7 b "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseBytes(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("ParseBytes(%q) = %d < 0", s, n)
		}
		back, err := ParseBytes(formatBytes(n))
		if err != nil || back != n {
			t.Fatalf("round trip of %d via %q = %d, %v", n, formatBytes(n), back, err)
		}
		// Independent oracle: split off the unit and evaluate in float64.
		trim := strings.TrimSpace(s)
		i := strings.IndexFunc(trim, func(r rune) bool { return !(r >= '0' && r <= '9' || r == '.') })
		if i < 0 {
			i = len(trim)
		}
		num := trim[:i]
		mult := byteUnits[strings.ToLower(strings.TrimSpace(trim[i:]))]
		var v, scale float64 = 0, 1
		intPart, frac, _ := strings.Cut(num, ".")
		for _, d := range intPart {
			v = v*10 + float64(d-'0')
		}
		for _, d := range frac {
			scale /= 10
			v += float64(d-'0') * scale
		}
		want := v * float64(mult)
		if diff := math.Abs(float64(n) - want); diff > 1+want*1e-12 {
			t.Fatalf("ParseBytes(%q) = %d, float64 oracle %g", s, n, want)
		}
	})
}
