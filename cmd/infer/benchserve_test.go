package main

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stride-lm/stride/model/chat"
	"github.com/stride-lm/stride/model/checkpoint"
	"github.com/stride-lm/stride/model/engine"
	"github.com/stride-lm/stride/serve"
)

// strideHTTP serves the built-in stories260K in process on a loopback
// port the test picks, as `infer serve` would, requiring one of keys
// when any are given.
func strideHTTP(t *testing.T, keys ...string) string {
	t.Helper()
	ck, err := checkpoint.Open("", checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := ck.Load()
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(m, engine.Options{MaxBatchedTokens: engine.DefaultMaxBatchedTokens, Threads: 2, Tokenizer: ck.Tokenizer})
	if err != nil {
		t.Fatal(err)
	}
	b := serve.NewEngineBackend(e, serve.EngineConfig{Tokenizer: ck.Tokenizer, Template: chat.Fallback(), StopTokens: ck.Generation.StopTokens})
	ts := httptest.NewServer(serve.New(b, serve.Config{ModelName: "stories260K", APIKeys: keys, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	t.Cleanup(func() { ts.Close(); e.Close(); m.Close() })
	return ts.URL
}

// jsonLines decodes one JSON object per line.
func jsonLines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%v in %q", err, l)
		}
		out = append(out, m)
	}
	return out
}

// `infer bench serve` against Stride's server: two rates, one JSON
// object each with vLLM's fields, the model found through /v1/models,
// token-exact inputs (counted by the server's /tokenize) and every
// output token generated (ignore_eos), vLLM's `--goodput ttft:MS tpot:MS
// e2el:MS` read whole (no request ends within the 1 µs e2el SLO, so the
// goodput is 0), and the chart written.
func TestBenchServeAgainstStride(t *testing.T) {
	base := strideHTTP(t)
	png := filepath.Join(t.TempDir(), "rates.png")
	code, out, errOut := cli(t, "bench", "serve", "--base-url", base, "--num-prompts", "6", "--input-len", "20",
		"--output-len", "8", "--ignore-eos", "--request-rate", "20", "--request-rate", "inf", "--warmup", "2",
		"--percentiles", "50,99", "--goodput", "ttft:100000", "tpot:100000", "e2el:0.001", "--output", "json", "--plot", png)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	runs := jsonLines(t, out)
	if len(runs) != 2 || runs[0]["request_rate"] != 20.0 || runs[1]["request_rate"] != "inf" {
		t.Fatalf("runs %d: %v", len(runs), out)
	}
	for _, r := range runs {
		if r["model_id"] != "stories260K" || r["completed"] != 6.0 || r["total_output_tokens"] != 48.0 ||
			r["total_input_tokens"] != 120.0 || r["request_goodput"] != 0.0 || r["tokenizer_id"] != "server" {
			t.Errorf("run %v", r)
		}
		for _, k := range []string{"p50_ttft_ms", "p99_itl_ms", "mean_tpot_ms", "median_e2el_ms", "output_throughput"} {
			if v, ok := r[k].(float64); !ok || v <= 0 {
				t.Errorf("%s = %v", k, r[k])
			}
		}
	}
	raw, err := os.ReadFile(png)
	if err != nil || !strings.HasPrefix(string(raw), "\x89PNG") {
		t.Errorf("plot: %v", err)
	}
}

// A dataset file, the chat endpoint and the table: the file's prompts
// cycle to --num-prompts, its output_len wins.
func TestBenchServeDatasetFile(t *testing.T) {
	base := strideHTTP(t)
	ds := filepath.Join(t.TempDir(), "p.jsonl")
	os.WriteFile(ds, []byte("{\"prompt\":\"Once upon a time\",\"output_len\":5}\n{\"prompt\":\"The cat\"}\n"), 0o644)
	code, out, errOut := cli(t, "bench", "serve", "--base-url", base+"/v1/", "--dataset", ds, "--num-prompts", "3",
		"--output-len", "4", "--ignore-eos", "--endpoint", "chat", "--max-concurrency", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"Successful requests:                    3", "Total generated tokens:                 14", "Maximum request concurrency:            1", "P99 ITL (ms)"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
}

// Bad flags and an unreachable server are one clear line each.
func TestBenchServeErrors(t *testing.T) {
	srv := httptest.NewServer(nil)
	dead := srv.URL
	srv.Close()
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(bad, []byte("{\"prompt\":\"a\"}\n{\"prompt\":3}\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--base-url", dead}, "cannot reach " + dead},
		{[]string{"--base-url", "localhost:8080"}, "is not an http:// or https:// URL"},
		{[]string{"--request-rate", "1,0"}, `--request-rate: "0" is not a rate > 0 or inf`},
		{[]string{"--goodput", "itl:5"}, "--goodput"},
		{[]string{"--goodput", "ttft:5", "itl:5"}, "--goodput"},
		{[]string{"stray"}, `unexpected argument "stray"`},
		{[]string{"--goodput", "ttft:5", "stray"}, `unexpected argument "stray"`},
		{[]string{"--percentiles", "50,200"}, "--percentiles"},
		{[]string{"--tokenizer", "a", "--checkpoint", "b"}, "not both"},
		{[]string{"--base-url", dead, "--served-model-name", "m", "--dataset", bad}, "line 2"},
		{[]string{"--range-ratio", "1"}, "range-ratio"},
		{[]string{"--endpoint", "embeddings"}, "endpoint"},
	} {
		code, _, errOut := cli(t, append([]string{"bench", "serve"}, c.args...)...)
		if code == 0 || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q, want one line with %q", c.args, code, errOut, c.want)
		}
	}
}

// The API key goes with every request; without it the first request's
// refusal is the one-line error.
func TestBenchServeAPIKey(t *testing.T) {
	base := strideHTTP(t, "k1")
	code, out, errOut := cli(t, "bench", "serve", "--base-url", base, "--api-key", "k1", "--num-prompts", "2",
		"--input-len", "8", "--output-len", "2", "--ignore-eos", "--output", "json")
	if code != 0 || jsonLines(t, out)[0]["completed"] != 2.0 {
		t.Fatalf("exit %d: %s %s", code, errOut, out)
	}
	code, _, errOut = cli(t, "bench", "serve", "--base-url", base, "--num-prompts", "2")
	if code == 0 || !strings.Contains(errOut, "HTTP 401") || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
		t.Errorf("without the key: exit %d, %q", code, errOut)
	}
}
