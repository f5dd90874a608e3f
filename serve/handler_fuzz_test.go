package serve

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stride-lm/stride/tensor/testfixture"
)

// fuzzRoutes are the routes the handler fuzzer sends its bodies to,
// picked by the input's first byte.
var fuzzRoutes = []struct{ method, path string }{
	{"POST", "/v1/chat/completions"}, {"POST", "/v1/completions"}, {"POST", "/tokenize"},
	{"POST", "/detokenize"}, {"GET", "/v1/models"}, {"GET", "/health"}, {"POST", "/v1/models"},
	{"OPTIONS", "/v1/completions"},
}

// handlerSeeds are the decoders' seeds on every POST route, and a few
// bodies of the other routes.
func handlerSeeds() [][]byte {
	var out [][]byte
	for _, s := range chatSeeds {
		out = append(out, append([]byte{0}, s...))
	}
	for _, s := range completionSeeds {
		out = append(out, append([]byte{1}, s...))
	}
	for _, s := range []string{`{"prompt":"hi <|im_end|>"}`, `{"messages":[{"role":"user","content":"x"}]}`, `{"tokens":[1,2,300]}`, `{"tokens":[-1]}`} {
		out = append(out, append([]byte{2}, s...), append([]byte{3}, s...))
	}
	return append(out, []byte{4}, []byte{5}, []byte("\x06{}"), []byte("\x07"),
		[]byte("\x01"+`{"prompt":"FAIL now","max_tokens":4,"stream":true}`),
		[]byte("\x00"+`{"messages":[{"role":"user","content":"hi"}],"x":`+strings.Repeat("[", 40)+`}`))
}

// The committed corpus holds the seeds above.
func TestHandlerFuzzCorpusCurrent(t *testing.T) {
	want := map[string][]byte{}
	for i, s := range handlerSeeds() {
		want["seed-"+itoa(100 + i)[1:]] = testfixture.CorpusEntry(s)
	}
	testfixture.CheckCorpus(t, filepath.Join("testdata", "fuzz", "FuzzHandler"), want, "TestHandlerFuzzCorpusCurrent")
}

// FuzzHandler sends arbitrary bodies through the whole handler (the key
// check, CORS, the routes, a fake backend that generates): no panic, no
// status of 500 or more, and every answer valid JSON (a stream: every
// event's data).
func FuzzHandler(f *testing.F) {
	for _, s := range handlerSeeds() {
		f.Add(s)
	}
	fake := newFake(4)
	fake.noFaults = true
	s := New(fake, Config{ModelName: "m", MaxBody: 1 << 16, CORSOrigins: []string{"https://a.example"},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	f.Fuzz(func(t *testing.T, in []byte) {
		route := fuzzRoutes[0]
		if len(in) > 0 {
			route, in = fuzzRoutes[int(in[0])%len(fuzzRoutes)], in[1:]
		}
		req := httptest.NewRequest(route.method, route.path, bytes.NewReader(in))
		req.Header.Set("Origin", "https://a.example")
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		checkAnswer(t, rec)
	})
}

// checkAnswer holds an answer to the handler's contract.
func checkAnswer(t *testing.T, rec *httptest.ResponseRecorder) {
	body := rec.Body.Bytes()
	if rec.Code >= 500 {
		t.Fatalf("status %d: %s", rec.Code, body)
	}
	if rec.Code == http.StatusOK && len(body) == 0 { // the CORS preflight
		return
	}
	if !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream") {
		if !json.Valid(body) {
			t.Fatalf("status %d: invalid JSON %q", rec.Code, body)
		}
		return
	}
	for _, ev := range bytes.Split(body, []byte("\n\n")) {
		data, ok := bytes.CutPrefix(ev, []byte("data: "))
		if len(ev) == 0 {
			continue
		}
		if !ok || (string(data) != "[DONE]" && !json.Valid(data)) {
			t.Fatalf("bad event %q in %q", ev, body)
		}
	}
}
