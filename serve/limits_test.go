package serve

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// hardenedServer serves b through NewHTTPServer on a LimitListener at a
// loopback port, as infer serve does, and returns its address.
func hardenedServer(t *testing.T, b Backend, cfg Config, hc HTTPConfig) string {
	t.Helper()
	if cfg.ModelName == "" {
		cfg.ModelName = "fake"
	}
	cfg.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := NewHTTPServer(New(b, cfg), hc)
	done := make(chan struct{})
	go func() { hs.Serve(LimitListener(ln, hc.MaxConnections)); close(done) }()
	t.Cleanup(func() { hs.Close(); <-done })
	return ln.Addr().String()
}

// rawResponse reads one HTTP response from c.
func rawResponse(t *testing.T, c net.Conn) response {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return response{res.StatusCode, res.Header, b}
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedByServer waits (at most 10 s) for the server to close c, and
// reports whether it did.
func closedByServer(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// Slowloris: a client that sends its headers one byte at a time is
// disconnected by the header timeout before it has sent them all, and
// the server answers other clients meanwhile.
func TestSlowHeadersDropped(t *testing.T) {
	addr := hardenedServer(t, newFake(2), Config{}, HTTPConfig{ReadHeaderTimeout: 300 * time.Millisecond})
	slow := dial(t, addr)
	msg := "GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: " + strings.Repeat("a", 400) + "\r\n\r\n"
	sent := make(chan int, 1)
	go func() {
		n := 0
		for ; n < len(msg); n++ {
			if _, err := slow.Write([]byte{msg[n]}); err != nil {
				break
			}
			time.Sleep(25 * time.Millisecond)
		}
		sent <- n
	}()
	for i := range 5 {
		if r := do(t, "GET", "http://"+addr+"/health", ""); r.status != 200 {
			t.Fatalf("request %d beside the slow client: %d", i, r.status)
		}
	}
	if !closedByServer(slow) {
		t.Fatal("the slow client was not disconnected")
	}
	slow.Close()
	if n := <-sent; n >= len(msg) {
		t.Fatalf("the slow client sent all %d bytes of its headers before it was dropped", n)
	}
}

// A body that does not arrive within the body timeout is a 408 error
// object, and the connection is closed; the next client is served.
func TestSlowBodyIs408(t *testing.T) {
	addr := hardenedServer(t, newFake(2), Config{BodyTimeout: 200 * time.Millisecond}, HTTPConfig{})
	c := dial(t, addr)
	fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"prompt\":")
	r := rawResponse(t, c)
	if _, _, _, code := errorObject(t, r); r.status != http.StatusRequestTimeout || code != "request_timeout" {
		t.Fatalf("slow body: %d %s", r.status, r.body)
	}
	if !closedByServer(c) {
		t.Fatal("the connection stayed open after the 408")
	}
	if r := post(t, "http://"+addr+"/v1/completions", `{"prompt":"hi","max_tokens":2}`); r.status != 200 {
		t.Fatalf("next request: %d %s", r.status, r.body)
	}
}

// A keep-alive connection that sends nothing after its answer is closed
// after the idle timeout.
func TestIdleConnectionClosed(t *testing.T) {
	addr := hardenedServer(t, newFake(2), Config{}, HTTPConfig{IdleTimeout: 200 * time.Millisecond})
	c := dial(t, addr)
	fmt.Fprintf(c, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
	if r := rawResponse(t, c); r.status != 200 {
		t.Fatalf("health: %d", r.status)
	}
	if !closedByServer(c) {
		t.Fatal("the idle connection was not closed")
	}
}

// Headers over the cap are a 431; the next request is served.
func TestHeadersOverCapAre431(t *testing.T) {
	addr := hardenedServer(t, newFake(2), Config{}, HTTPConfig{MaxHeaderBytes: 1024})
	// net/http allows 4 KiB beyond MaxHeaderBytes.
	c := dial(t, addr)
	fmt.Fprintf(c, "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n", strings.Repeat("b", 6<<10))
	r := rawResponse(t, c)
	if r.status != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("big headers: %d", r.status)
	}
	if r := do(t, "GET", "http://"+addr+"/health", "", "X-Small", "s"); r.status != 200 {
		t.Fatalf("after: %d", r.status)
	}
}

// Beyond MaxConnections a new connection gets 503 with Retry-After, an
// OpenAI error object, and is closed; once a connection closes, the
// next is served.
func TestConnectionsOverCapAre503(t *testing.T) {
	addr := hardenedServer(t, newFake(2), Config{}, HTTPConfig{MaxConnections: 2})
	held := []net.Conn{dial(t, addr), dial(t, addr)}
	for _, c := range held { // each is accepted and served
		fmt.Fprintf(c, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
		if r := rawResponse(t, c); r.status != 200 {
			t.Fatalf("held connection: %d", r.status)
		}
	}
	c := dial(t, addr)
	fmt.Fprintf(c, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
	r := rawResponse(t, c)
	if _, typ, _, _ := errorObject(t, r); r.status != 503 || r.header.Get("Retry-After") != "1" || typ != "service_unavailable_error" {
		t.Fatalf("third connection: %d %v %s", r.status, r.header, r.body)
	}
	if !closedByServer(c) {
		t.Fatal("the refused connection stayed open")
	}
	held[0].Close()
	waitFor(t, func() bool {
		c := dial(t, addr)
		defer c.Close()
		fmt.Fprintf(c, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
		return rawResponse(t, c).status == 200
	})
}

// Every string field has a cap (a 400 naming the field), and a body
// nested deeper than maxJSONDepth is refused before it is decoded.
func TestFieldCaps(t *testing.T) {
	_, ts := startServer(t, newFake(2), Config{MaxBody: 8 << 20}, nil)
	chat, comp := ts.URL+"/v1/chat/completions", ts.URL+"/v1/completions"
	long, name := strings.Repeat("x", maxTextBytes+1), strings.Repeat("m", maxNameBytes+1)
	deep := strings.Repeat("[", maxJSONDepth+1) + strings.Repeat("]", maxJSONDepth+1)
	cases := []struct {
		url, body string
		param     any
	}{
		{chat, `{"model":"` + name + `","messages":[{"role":"user","content":"hi"}]}`, "model"},
		{chat, `{"user":"` + name + `","messages":[{"role":"user","content":"hi"}]}`, "user"},
		{chat, `{"messages":[{"role":"` + name + `","content":"hi"}]}`, "messages[0].role"},
		{chat, `{"messages":[{"role":"user","content":[{"type":"` + name + `"}]}]}`, "messages[0].content[0].type"},
		{chat, `{"messages":[{"role":"user","content":"` + long + `"}]}`, "messages[0].content"},
		{chat, `{"messages":[{"role":"user","content":[{"type":"text","text":"` + long[:maxTextBytes/2] + `"},{"type":"text","text":"` + long[:maxTextBytes/2+1] + `"}]}]}`, "messages[0].content"},
		{chat, `{"messages":[{"role":"user","content":"hi"}],"stop":["` + long[:maxStopBytes+1] + `"]}`, "stop"},
		{comp, `{"prompt":"` + long + `"}`, "prompt"},
		{comp, `{"prompt":["a","` + long + `"]}`, "prompt[1]"},
		{ts.URL + "/tokenize", `{"prompt":"` + long + `"}`, "prompt"},
		{chat, `{"messages":[{"role":"user","content":"hi"}],"x":` + deep + `}`, nil},
		{ts.URL + "/tokenize", `{"x":` + deep + `}`, nil},
	}
	for i, c := range cases {
		r := post(t, c.url, c.body)
		msg, _, param, _ := errorObject(t, r)
		if r.status != 400 || param != c.param {
			t.Errorf("case %d: %d param %v (want %v): %s", i, r.status, param, c.param, msg)
		}
	}
	ok := strings.Repeat("[", maxJSONDepth-2) + strings.Repeat("]", maxJSONDepth-2)
	if r := post(t, comp, `{"prompt":"hi","max_tokens":2,"x":`+ok+`}`); r.status != 200 {
		t.Errorf("a body within the depth cap: %d %s", r.status, r.body)
	}
}

// A request held past the request timeout is a 503 when its answer had
// not begun, and an error event before [DONE] in a stream that had; its
// sequence is cancelled either way.
func TestRequestTimeout(t *testing.T) {
	f := newFake(2)
	f.gate = make(chan struct{}) // never opened: sequences wait at the gate
	_, ts := startServer(t, f, Config{RequestTimeout: 100 * time.Millisecond, RetryAfter: 2}, nil)
	r := post(t, ts.URL+"/v1/completions", `{"prompt":"q","max_tokens":2}`)
	if msg, typ, _, _ := errorObject(t, r); r.status != 503 || r.header.Get("Retry-After") != "2" || !strings.Contains(msg, "request timeout") {
		t.Errorf("whole answer: %d %s %s", r.status, typ, msg)
	}
	r = post(t, ts.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"q"}],"max_tokens":2,"stream":true}`)
	ev := sseEvents(t, r.body)
	if r.status != 200 || len(ev) < 2 || !strings.Contains(ev[len(ev)-2], `"error"`) {
		t.Errorf("stream: %d %q", r.status, ev)
	}
	waitFor(t, func() bool { st := f.Stats(); return st.Running == 0 && st.Waiting == 0 && st.BlocksFree == fakeTotal })
}

// A stream whose client stops reading is dropped after the write
// timeout: its sequences are cancelled (nothing runs, every block is
// free). They could not have finished instead: 16 × 20,000 tokens of
// events are far more than the socket buffers hold (the client's is set
// to 4 KiB), and the client reads nothing.
func TestStalledReaderDropped(t *testing.T) {
	f := newFake(16)
	f.maxLen = 1 << 20
	addr := hardenedServer(t, f, Config{WriteTimeout: 200 * time.Millisecond}, HTTPConfig{})
	c := dial(t, addr)
	c.(*net.TCPConn).SetReadBuffer(4096)
	body := `{"prompt":"q","max_tokens":20000,"n":16,"ignore_eos":true,"stream":true}`
	fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	waitFor(t, func() bool { return f.Stats().Running == 16 })
	waitFor(t, func() bool { st := f.Stats(); return st.Running == 0 && st.BlocksFree == fakeTotal })
}

// The request's shape has fixed caps: messages (on /tokenize too),
// prompts in a list, n and prompts × n.
func TestShapeCaps(t *testing.T) {
	_, ts := startServer(t, newFake(2), Config{MaxBody: 8 << 20}, nil)
	many := func(n int, item string) string { return strings.TrimSuffix(strings.Repeat(item+",", n), ",") }
	msg := `{"role":"user","content":"x"}`
	cases := []struct{ path, body, param string }{
		{"/v1/chat/completions", `{"messages":[` + many(maxMessages+1, msg) + `]}`, "messages"},
		{"/tokenize", `{"messages":[` + many(maxMessages+1, msg) + `]}`, "messages"},
		{"/v1/completions", `{"prompt":[` + many(maxPrompts+1, `"a"`) + `]}`, "prompt"},
		{"/v1/completions", `{"prompt":[` + many(maxPrompts+1, `[1]`) + `]}`, "prompt"},
		{"/v1/completions", `{"prompt":"a","n":17}`, "n"},
		{"/v1/completions", `{"prompt":"a","stop_token_ids":[` + many(maxStopTokenIDs+1, "1") + `]}`, "stop_token_ids"},
		{"/v1/completions", `{"prompt":[` + many(5, `"a"`) + `],"n":16}`, "n"},
	}
	for i, c := range cases {
		r := post(t, ts.URL+c.path, c.body)
		if _, _, param, _ := errorObject(t, r); r.status != 400 || param != c.param {
			t.Errorf("case %d: %d param %v, want 400 %s", i, r.status, param, c.param)
		}
	}
}

// A whole answer whose client does not read it is dropped after the
// write timeout: the handler returns (its access-log line is written)
// though the answer, megabytes of logprobs, cannot fit the socket
// buffers.
func TestStalledWholeReaderDropped(t *testing.T) {
	f := newFake(16)
	f.maxLen = 1 << 20
	var logs bytes.Buffer
	var mu sync.Mutex
	cfg := Config{WriteTimeout: 200 * time.Millisecond, ModelName: "fake"}
	cfg.Logger = slog.New(slog.NewJSONHandler(&lockedWriter{w: &logs, mu: &mu}, nil))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := NewHTTPServer(New(f, cfg), HTTPConfig{})
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	c := dial(t, ln.Addr().String())
	c.(*net.TCPConn).SetReadBuffer(4096)
	body := `{"prompt":"q","max_tokens":2000,"n":16,"ignore_eos":true,"logprobs":20}`
	fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	waitFor(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return bytes.Contains(logs.Bytes(), []byte(`"path":"/v1/completions"`))
	})
}
