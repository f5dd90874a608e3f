package kvcache

import (
	"fmt"
	"math"
	"math/big"
	"strings"
)

// byteUnits maps a lower-cased unit suffix to its multiplier. SI prefixes
// (k, M, G, T) are powers of 1000 and IEC prefixes (Ki, Mi, Gi, Ti) powers
// of 1024, as in Kubernetes quantities and `numfmt --from=auto`; a trailing
// "B" is optional. Units are case-insensitive ("64mib" = "64MiB").
var byteUnits = map[string]int64{
	"": 1, "b": 1,
	"k": 1e3, "kb": 1e3, "ki": 1 << 10, "kib": 1 << 10,
	"m": 1e6, "mb": 1e6, "mi": 1 << 20, "mib": 1 << 20,
	"g": 1e9, "gb": 1e9, "gi": 1 << 30, "gib": 1 << 30,
	"t": 1e12, "tb": 1e12, "ti": 1 << 40, "tib": 1 << 40,
}

// maxNumberLen bounds the digits ParseBytes reads, so no input can make it
// do unbounded big-number work.
const maxNumberLen = 64

// ParseBytes parses a memory size such as "64MiB", "1.5 GiB", "512kB" or
// "1048576": a non-negative decimal number (digits with an optional
// fractional part) followed by an optional unit, with optional spaces
// around and between them. See byteUnits for the units. A fractional
// result is rounded down to whole bytes (a budget is an upper bound).
// Values above math.MaxInt64 are an error.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	if num == "" {
		return 0, fmt.Errorf("kvcache: memory size %q: want a number with an optional unit, like 64MiB", s)
	}
	if len(num) > maxNumberLen {
		return 0, fmt.Errorf("kvcache: memory size %q: number has more than %d characters", s, maxNumberLen)
	}
	intPart, frac, _ := strings.Cut(num, ".")
	if strings.Contains(frac, ".") || intPart+frac == "" {
		return 0, fmt.Errorf("kvcache: memory size %q: malformed number %q", s, num)
	}
	mult, ok := byteUnits[unit]
	if !ok {
		return 0, fmt.Errorf("kvcache: memory size %q: unknown unit %q (want B, kB, MB, GB, TB, KiB, MiB, GiB or TiB)", s, t[i:])
	}
	// value = (intPart·10^k + frac)·mult / 10^k, computed exactly.
	digits, ok := new(big.Int).SetString(intPart+frac, 10)
	if !ok { // cannot happen: both parts are digits and not both empty
		return 0, fmt.Errorf("kvcache: memory size %q: malformed number %q", s, num)
	}
	digits.Mul(digits, big.NewInt(mult))
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(len(frac))), nil)
	digits.Quo(digits, scale)
	if !digits.IsInt64() {
		return 0, fmt.Errorf("kvcache: memory size %q exceeds %d bytes", s, int64(math.MaxInt64))
	}
	return digits.Int64(), nil
}

// formatBytes writes n exactly, for messages that echo a size the user
// gave (tensor.FormatBytes is the human-readable formatter everywhere
// else). It writes n, in the largest IEC unit that divides it
// (67108864 → "64MiB", 1536 → "1536B", never a rounded "1.5KiB"), so
// ParseBytes(formatBytes(n)) == n for every n ≥ 0.
func formatBytes(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.size == 0 {
			return fmt.Sprintf("%d%s", n/u.size, u.name)
		}
	}
	return fmt.Sprintf("%dB", n)
}
