package explore

import (
	"strings"
	"testing"
)

// An address must name a host, and only a loopback one without public.
func TestCheckAddr(t *testing.T) {
	for addr, want := range map[string]string{
		"":               "want HOST:PORT",
		":8080":          "names no host",
		"8080":           "want HOST:PORT",
		"0.0.0.0:8080":   "add --public",
		"[::]:8080":      "add --public",
		"192.0.2.1:8080": "add --public",
		"example.com:80": "add --public",
	} {
		err := CheckAddr(addr, false)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--addr %q: %v, want %q", addr, err, want)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:8080", "[::1]:0", "127.1.2.3:80"} {
		if err := CheckAddr(addr, false); err != nil {
			t.Errorf("--addr %q: %v", addr, err)
		}
	}
	if err := CheckAddr("0.0.0.0:8080", true); err != nil {
		t.Errorf("--addr 0.0.0.0:8080 --public: %v", err)
	}
	if err := CheckAddr(":8080", true); err == nil {
		t.Error("--public must not make a missing host acceptable")
	}
}
