package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// runLog collects Run's Logf lines.
type runLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *runLog) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *runLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// get answers GET url's status and body through client.
func get(t *testing.T, client *http.Client, url string) (int, http.Header, string) {
	t.Helper()
	res, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header, string(b)
}

// postStream posts a completion request and sends its whole body (or
// the client's error) on the channel it returns, when the response ends.
func postStream(client *http.Client, url, body string) <-chan string {
	stream := make(chan string, 1)
	go func() {
		res, err := client.Post(url+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			stream <- err.Error()
			return
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		stream <- string(b)
	}()
	return stream
}

// startRun runs Run on a loopback port the test picks, with load
// waiting for release before it builds a Server over f; Run's error
// comes on the returned channel.
func startRun(t *testing.T, f *fakeBackend, release <-chan struct{}, o RunOptions) (url string, cancel context.CancelFunc, closed <-chan struct{}, runErr <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	closedc, errc := make(chan struct{}), make(chan error, 1)
	load := func() (*Server, func(), error) {
		<-release
		return New(f, Config{ModelName: "fake"}), func() { close(closedc) }, nil
	}
	go func() { errc <- Run(ctx, ln, load, o) }()
	return "http://" + ln.Addr().String(), cancel, closedc, errc
}

// Run's life: 503 with Retry-After while the model loads, the Server
// once it has loaded; on cancel a stream in flight runs to its end
// within the drain timeout, Run returns nil, the loader's close runs and
// the listener is closed; nothing is left running (goleak).
func TestRunServesLoadsAndDrains(t *testing.T) {
	verifyNoLeaks(t)
	f := newFake(2)
	f.delay = 10 * time.Millisecond
	release := make(chan struct{})
	var log runLog
	url, cancel, closed, runErr := startRun(t, f, release, RunOptions{DrainTimeout: time.Minute, Logf: log.logf})
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	if status, h, body := get(t, client, url+"/health"); status != 503 || h.Get("Retry-After") == "" || !strings.Contains(body, "loading") {
		t.Errorf("while loading: /health %d Retry-After %q %s", status, h.Get("Retry-After"), body)
	}
	close(release)
	waitFor(t, func() bool { status, _, _ := get(t, client, url+"/health"); return status == 200 })
	if !strings.Contains(log.String(), "listening on "+url) {
		t.Errorf("log %q does not say where it listens", log.String())
	}
	stream := postStream(client, url, `{"prompt":"d","max_tokens":20,"stream":true}`)
	waitFor(t, func() bool { return f.Stats().Running == 1 })
	cancel()
	body := <-stream
	if strings.Contains(body, `"error"`) || !strings.HasSuffix(body, "data: [DONE]\n\n") || strings.Count(body, `"text"`) < 20 {
		t.Errorf("the stream in flight when Run was cancelled ended:\n%s", body)
	}
	if err := <-runErr; err != nil {
		t.Errorf("Run = %v after a drain in time", err)
	}
	<-closed
	if !strings.Contains(log.String(), "draining (up to 1m0s)") || strings.Contains(log.String(), "timeout") {
		t.Errorf("log:\n%s", log.String())
	}
	if c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://")); err == nil {
		c.Close()
		t.Error("the listener still accepts after Run returned")
	}
}

// A drain that runs out of time cancels the stream (an error event, then
// [DONE]), says so, and Run still returns nil.
func TestRunDrainTimeout(t *testing.T) {
	verifyNoLeaks(t)
	f := newFake(2)
	f.delay = 20 * time.Millisecond
	release := make(chan struct{})
	close(release)
	var log runLog
	url, cancel, closed, runErr := startRun(t, f, release, RunOptions{DrainTimeout: 50 * time.Millisecond, Logf: log.logf})
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	waitFor(t, func() bool { status, _, _ := get(t, client, url+"/health"); return status == 200 })
	stream := postStream(client, url, `{"prompt":"d","max_tokens":100,"stream":true}`)
	waitFor(t, func() bool { return f.Stats().Running == 1 })
	cancel()
	if body := <-stream; !strings.Contains(body, `"error"`) || !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Errorf("a stream cut by the drain timeout ended:\n%s", body)
	}
	if err := <-runErr; err != nil {
		t.Errorf("Run = %v", err)
	}
	<-closed
	if !strings.Contains(log.String(), "drain timeout reached; cancelled what still ran") {
		t.Errorf("log:\n%s", log.String())
	}
	waitFor(t, func() bool { return f.Stats().Running == 0 })
}

// A load that fails: Run returns its error, having closed the listener,
// and never says it listens.
func TestRunLoadError(t *testing.T) {
	verifyNoLeaks(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	bad := errors.New("no such checkpoint")
	var log runLog
	err = Run(context.Background(), ln, func() (*Server, func(), error) { return nil, nil, bad }, RunOptions{Logf: log.logf})
	if !errors.Is(err, bad) {
		t.Errorf("Run = %v, want the load's error", err)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Error("the listener still accepts after a failed load")
	}
	if log.String() != "" {
		t.Errorf("a failed load logged %q", log.String())
	}
}

// closingListener is a listener the test breaks from outside: Accept
// then fails, as a listener whose socket went away does.
type closingListener struct{ net.Listener }

// A listener that fails while a stream runs: Run returns its error, and
// the stream is cancelled and its handler has returned before load's
// close function runs (the engine it uses is released last).
func TestRunListenerFailsMidStream(t *testing.T) {
	verifyNoLeaks(t)
	f := newFake(2)
	f.delay = 20 * time.Millisecond
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + raw.Addr().String()
	runningAtClose := make(chan int, 1)
	load := func() (*Server, func(), error) {
		return New(f, Config{ModelName: "fake"}), func() { runningAtClose <- f.Stats().Running }, nil
	}
	errc := make(chan error, 1)
	go func() {
		errc <- Run(context.Background(), closingListener{raw}, load, RunOptions{DrainTimeout: time.Minute})
	}()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	waitFor(t, func() bool {
		res, err := client.Get(url + "/health")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == 200
	})
	stream := postStream(client, url, `{"prompt":"d","max_tokens":100,"stream":true}`)
	waitFor(t, func() bool { return f.Stats().Running == 1 })
	raw.Close()
	if err := <-errc; err == nil {
		t.Error("Run = nil after its listener failed")
	}
	if n := <-runningAtClose; n != 0 {
		t.Errorf("load's close ran with %d requests still running", n)
	}
	if body := <-stream; strings.Count(body, `"text"`) >= 100 {
		t.Errorf("the stream ran to its end after the listener failed:\n%s", body)
	}
}
