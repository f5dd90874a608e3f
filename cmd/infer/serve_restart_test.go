package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// completionText posts a greedy completion and returns its choices.
func completionText(t *testing.T, base, key string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/v1/completions",
		strings.NewReader(`{"prompt":"Once upon a time","max_tokens":24,"temperature":0,"n":2}`))
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var c struct {
		Choices json.RawMessage `json:"choices"`
	}
	if err := json.NewDecoder(res.Body).Decode(&c); err != nil || res.StatusCode != 200 {
		t.Fatalf("completion: %d %v", res.StatusCode, err)
	}
	return string(c.Choices)
}

// dirState is every file of dir with its bytes.
func dirState(t *testing.T, dir string) string {
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			raw, _ := os.ReadFile(p)
			fmt.Fprintf(&b, "%s %q\n", p, raw)
		}
		return err
	})
	return b.String()
}

// SIGKILL in the middle of a stream, then a restart on the same files:
// the cut stream has no [DONE], the new process serves the same answer
// the first gave, the files it was started with are as they were (the
// server writes nothing to disk, so nothing can be half-written), and no
// key appears on either process's stderr.
func TestServeRestartAfterSIGKILL(t *testing.T) {
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys")
	if err := os.WriteFile(keys, []byte("# keys of the test\n\nsekrit-restart\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := dirState(t, dir)
	p, base := startServe(t, "--api-key-file", keys)
	want := completionText(t, base, "sekrit-restart")
	req, _ := http.NewRequest("POST", base+"/v1/completions",
		strings.NewReader(`{"prompt":[1],"max_tokens":500,"n":4,"ignore_eos":true,"stream":true}`))
	req.Header.Set("Authorization", "Bearer sekrit-restart")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if _, err := io.ReadFull(res.Body, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	p.signal(syscall.SIGKILL)
	if code := p.wait(10 * time.Second); code != -1 {
		t.Fatalf("exit code %d after SIGKILL", code)
	}
	if rest, _ := io.ReadAll(res.Body); strings.Contains(string(rest), "[DONE]") {
		t.Fatal("the killed server's stream ended with [DONE]")
	}
	p2, base2 := startServe(t, "--api-key-file", keys)
	if got := completionText(t, base2, "sekrit-restart"); got != want {
		t.Errorf("after the restart:\n%s\nbefore:\n%s", got, want)
	}
	if after := dirState(t, dir); after != before {
		t.Errorf("the server's files changed:\n%s\nwere:\n%s", after, before)
	}
	p2.signal(syscall.SIGTERM)
	p2.wait(30 * time.Second)
	if strings.Contains(p.err()+p2.err(), "sekrit") {
		t.Errorf("a key reached stderr:\n%s\n%s", p.err(), p2.err())
	}
}

// The hardening flags reach the server: beyond --max-connections a
// connection gets 503; --cors-origin answers a preflight.
func TestServeHardeningFlags(t *testing.T) {
	_, base := startServe(t, "--max-connections", "1", "--cors-origin", "https://app.example")
	addr := strings.TrimPrefix(base, "http://")
	get := func(c net.Conn, extra string) int {
		fmt.Fprintf(c, "OPTIONS /v1/completions HTTP/1.1\r\nHost: x\r\n%s\r\n", extra)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	held, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if code := get(held, "Origin: https://app.example\r\nAccess-Control-Request-Method: POST\r\n"); code != 200 {
		t.Errorf("preflight: %d", code)
	}
	second, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if code := get(second, ""); code != 503 {
		t.Errorf("a connection beyond --max-connections 1: %d", code)
	}
}

// --api-key-file that cannot be read or holds no key stops infer serve
// with one clear line, before it listens.
func TestServeKeyFileErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte("# no key yet\n\n"), 0o600)
	for path, want := range map[string]string{filepath.Join(dir, "missing"): "no such file", empty: "holds no key"} {
		code, _, errs := cli(t, "serve", "--port", "0", "--api-key-file", path)
		if code == 0 || !strings.Contains(errs, want) || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
			t.Errorf("--api-key-file %s: exit %d, stderr %q; want one line saying %q", path, code, errs, want)
		}
	}
}

// A config file whose api_key list holds a number (a key YAML read as
// one) is an error that echoes no item of the list.
func TestAPIKeyConfigErrorHidesValue(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "infer.yaml")
	os.WriteFile(cfg, []byte("api_key: [sekrit, 12345]\n"), 0o600)
	code, _, errs := cli(t, "--config", cfg, "serve", "--port", "0")
	if code == 0 || !strings.Contains(errs, "api_key") || strings.Contains(errs, "sekrit") || strings.Contains(errs, "12345") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
}
