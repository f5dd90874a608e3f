package serve

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
)

// ReadKeyFile reads API keys from path, one a line; blank lines and
// lines starting with # are skipped, and spaces around a key are
// trimmed. A file that cannot be read or holds no key is an error. The
// errors name the file and the line, never a key's text.
func ReadKeyFile(path string) ([]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("API key file: %w", err)
	}
	var keys []string
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 64<<10)
	for line := 1; sc.Scan(); line++ {
		k := strings.TrimSpace(sc.Text())
		if k == "" || strings.HasPrefix(k, "#") {
			continue
		}
		if strings.ContainsFunc(k, func(r rune) bool { return r < 0x21 || r == 0x7f }) {
			return nil, fmt.Errorf("API key file %s: line %d: a key may not hold spaces or control characters", path, line)
		}
		keys = append(keys, k)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("API key file %s: %v", path, err)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("API key file %s holds no key (one a line; # starts a comment)", path)
	}
	return keys, nil
}
