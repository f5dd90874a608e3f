package serve

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// A key file: one key a line, comments and blank lines skipped, spaces
// trimmed; an unreadable file, one with no key and a key with a space
// inside are errors that name the file (and line) but never a key.
func TestReadKeyFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	keys, err := ReadKeyFile(write("ok", "# team keys\n\n  sekrit-a  \r\nsekrit-b\n#sekrit-c\n"))
	if err != nil || !slices.Equal(keys, []string{"sekrit-a", "sekrit-b"}) {
		t.Fatalf("keys %q, %v", keys, err)
	}
	for name, c := range map[string]struct{ path, want string }{
		"missing": {filepath.Join(dir, "nope"), "no such file"},
		"empty":   {write("empty", "# only a comment sekrit\n\n"), "holds no key"},
		"space":   {write("space", "sekrit-a\nsekrit b\n"), "line 2"},
		"dir":     {dir, "is a directory"},
	} {
		_, err := ReadKeyFile(c.path)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "sekrit") {
			t.Errorf("%s: %v, want an error saying %q and naming no key", name, err, c.want)
		}
	}
}

// No key reaches the log: not the accepted ones, not a wrong one, and not
// when the request fails (400, 413, a panic's 500 with its stack).
func TestKeysNeverLogged(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	_, ts := startServer(t, newFake(2), Config{APIKeys: []string{"sekrit-good"}, MaxBody: 200}, &lockedWriter{w: &logs, mu: &mu})
	auth := []string{"Authorization", "Bearer sekrit-good"}
	for _, c := range []struct {
		body   string
		header []string
		status int
	}{
		{`{"prompt":"hi","max_tokens":2}`, auth, 200},
		{`{"prompt":"hi","max_tokens":2}`, []string{"Authorization", "Bearer sekrit-wrong"}, 401},
		{`{"prompt":"hi","max_tokens":-2}`, auth, 400},
		{`{"prompt":"` + strings.Repeat("x", 300) + `"}`, auth, 413},
		{`{"prompt":"PANIC","max_tokens":2}`, auth, 500},
	} {
		if r := post(t, ts.URL+"/v1/completions", c.body, c.header...); r.status != c.status {
			t.Errorf("%s: %d, want %d", c.body, r.status, c.status)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !bytes.Contains(logs.Bytes(), []byte("panic serving request")) {
		t.Fatalf("the log lacks the panic (the test must cover it): %s", logs.Bytes())
	}
	if bytes.Contains(logs.Bytes(), []byte("sekrit")) {
		t.Errorf("a key leaked into the log: %s", logs.Bytes())
	}
}

// CORS is off unless origins are listed: no Access-Control header, and a
// preflight is an ordinary 405. With origins, a preflight from one is
// answered as llama.cpp's server answers it (200, empty, credentials
// true, methods "GET, POST", headers "*" plus Authorization) without a
// key; one from another origin is a 403; an actual request from an
// allowed origin names it in Access-Control-Allow-Origin, its 401 too so
// the page can read the error.
func TestCORS(t *testing.T) {
	preflight := []string{"Origin", "https://app.example", "Access-Control-Request-Method", "POST",
		"Access-Control-Request-Headers", "authorization,content-type"}
	_, off := startServer(t, newFake(2), Config{APIKeys: []string{"k"}}, nil)
	r := do(t, "OPTIONS", off.URL+"/v1/chat/completions", "", preflight...)
	for k := range r.header {
		if strings.HasPrefix(k, "Access-Control-") {
			t.Errorf("CORS off: preflight answered with %s", k)
		}
	}
	if r.status != 401 {
		t.Errorf("CORS off: preflight %d, want the key's 401", r.status)
	}

	_, on := startServer(t, newFake(2), Config{APIKeys: []string{"k"}, CORSOrigins: []string{"https://app.example"}}, nil)
	r = do(t, "OPTIONS", on.URL+"/v1/chat/completions", "", preflight...)
	want := map[string]string{"Access-Control-Allow-Origin": "https://app.example", "Access-Control-Allow-Credentials": "true",
		"Access-Control-Allow-Methods": "GET, POST", "Access-Control-Allow-Headers": "*, Authorization", "Vary": "Origin"}
	if r.status != 200 || len(r.body) != 0 {
		t.Errorf("preflight: %d %q", r.status, r.body)
	}
	for k, v := range want {
		if got := r.header.Get(k); got != v {
			t.Errorf("preflight %s: %q, want %q", k, got, v)
		}
	}
	other := slices.Clone(preflight)
	other[1] = "https://evil.example"
	if r := do(t, "OPTIONS", on.URL+"/v1/completions", "", other...); r.status != 403 || r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from another origin: %d %v", r.status, r.header)
	}
	body := `{"prompt":"hi","max_tokens":2}`
	r = post(t, on.URL+"/v1/completions", body, "Origin", "https://app.example", "Authorization", "Bearer k")
	if r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != "https://app.example" {
		t.Errorf("request from the allowed origin: %d %v", r.status, r.header)
	}
	r = post(t, on.URL+"/v1/completions", body, "Origin", "https://app.example")
	if r.status != 401 || r.header.Get("Access-Control-Allow-Origin") != "https://app.example" {
		t.Errorf("request without the key: %d %v", r.status, r.header)
	}
	r = post(t, on.URL+"/v1/completions", body, "Origin", "https://evil.example", "Authorization", "Bearer k")
	if r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("request from another origin named: %v", r.header)
	}

	_, any := startServer(t, newFake(2), Config{CORSOrigins: []string{"*"}}, nil)
	if r := do(t, "OPTIONS", any.URL+"/v1/models", "", other...); r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != "https://evil.example" {
		t.Errorf("origin * : %d %v", r.status, r.header)
	}
}
