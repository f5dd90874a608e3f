package serve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// startServer serves b on a loopback port the test picks; the access log
// goes to logs when it is not nil.
func startServer(t *testing.T, b Backend, cfg Config, logs io.Writer) (*Server, *httptest.Server) {
	t.Helper()
	if logs == nil {
		logs = io.Discard
	}
	if cfg.ModelName == "" {
		cfg.ModelName = "fake"
	}
	cfg.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	s := New(b, cfg)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts
}

// response is one HTTP answer.
type response struct {
	status int
	header http.Header
	body   []byte
}

func do(t *testing.T, method, url, body string, header ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{res.StatusCode, res.Header, b}
}

func post(t *testing.T, url, body string, header ...string) response {
	return do(t, http.MethodPost, url, body, header...)
}

// errorObject decodes an OpenAI error body, failing the test when the
// body is not one.
func errorObject(t *testing.T, r response) (message, typ string, param, code any) {
	t.Helper()
	var e struct {
		Error *struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Param   any    `json:"param"`
			Code    any    `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &e); err != nil || e.Error == nil || e.Error.Message == "" {
		t.Fatalf("status %d: body %q is not an OpenAI error object", r.status, r.body)
	}
	raw := map[string]map[string]json.RawMessage{}
	json.Unmarshal(r.body, &raw)
	for _, k := range []string{"message", "type", "param", "code"} {
		if _, ok := raw["error"][k]; !ok {
			t.Errorf("error object lacks %q: %s", k, r.body)
		}
	}
	return e.Error.Message, e.Error.Type, e.Error.Param, e.Error.Code
}

// sseEvents splits a stream into its data payloads, checking the framing:
// every event is one `data: ` line followed by a blank line.
func sseEvents(t *testing.T, body []byte) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	expectBlank := false
	for sc.Scan() {
		line := sc.Text()
		if expectBlank {
			if line != "" {
				t.Fatalf("event not followed by a blank line: %q", line)
			}
			expectBlank = false
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("line %q is not a data line", line)
		}
		out = append(out, data)
		expectBlank = true
	}
	if len(out) == 0 || out[len(out)-1] != "[DONE]" {
		t.Fatalf("stream does not end with [DONE]: %q", body)
	}
	return out
}
