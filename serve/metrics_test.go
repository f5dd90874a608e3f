package serve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stride-lm/stride/model/engine"
)

// scrape reads a Prometheus text exposition: each sample's value by its
// name and labels as written ("name{labels}"), and each family's type.
func scrape(t *testing.T, body []byte) (samples map[string]float64, types map[string]string) {
	t.Helper()
	samples, types = map[string]float64{}, map[string]string{}
	line := regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?) (\S+)$`)
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		l := sc.Text()
		if f, ok := strings.CutPrefix(l, "# TYPE "); ok {
			name, typ, _ := strings.Cut(f, " ")
			types[name] = typ
			continue
		}
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("not a sample line: %q", l)
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			t.Fatalf("sample %q: %v", l, err)
		}
		samples[m[1]] = v
	}
	return samples, types
}

// TestMetricsExposition: after a few requests on the engine, /metrics
// has every metric issue 27 names, with vLLM's types, and their values
// agree with the answers' usage and the engine's Stats: tokens and
// sequences (counted per choice, as vLLM v1), one histogram observation
// per sequence, prefix hits, blocks, the attention path.
func TestMetricsExposition(t *testing.T) {
	b, e := engineBackendWith(t, engine.Options{Threads: 1, Speculation: engine.Speculation{Method: "ngram"}})
	_, ts := startServer(t, b, Config{ModelName: "m"}, nil)
	prompt := strings.Repeat("Lily and Ben went to the park to play with a big red ball. ", 3)
	bodies := []string{
		`{"prompt":"` + prompt + `","max_tokens":8,"temperature":0,"n":2}`,
		`{"prompt":"Once upon a time","max_tokens":300,"temperature":0}`,
		`{"prompt":"The cat","max_tokens":40,"temperature":0,"stop":"."}`,
	}
	promptTokens, genTokens, seqs := 0, 0, 0
	finishes := map[string]int{}
	for _, body := range bodies {
		var c struct {
			Choices []struct {
				FinishReason string `json:"finish_reason"`
			}
			Usage usage
		}
		if r := post(t, ts.URL+"/v1/completions", body); r.status != 200 || json.Unmarshal(r.body, &c) != nil {
			t.Fatalf("%s: %d %s", body, r.status, r.body)
		}
		promptTokens += c.Usage.PromptTokens * len(c.Choices) // per sequence, as vLLM v1
		genTokens += c.Usage.CompletionTokens
		seqs += len(c.Choices)
		for _, ch := range c.Choices {
			finishes[ch.FinishReason]++
		}
	}
	var s map[string]float64
	var types map[string]string
	st := e.Stats()
	// The loop publishes its counts between steps: scrape until they agree.
	waitFor(t, func() bool {
		s, types = scrape(t, do(t, "GET", ts.URL+"/metrics", "").body)
		st = e.Stats()
		return s[`vllm:num_requests_running{model_name="m"}`] == 0 && s[`stride_steps_total{model_name="m"}`] == float64(st.Steps)
	})
	want := map[string]string{
		"vllm:num_requests_running": "gauge", "vllm:num_requests_waiting": "gauge", "vllm:kv_cache_usage_perc": "gauge",
		"vllm:prefix_cache_queries_total": "counter", "vllm:prefix_cache_hits_total": "counter", "vllm:num_preemptions_total": "counter",
		"vllm:prompt_tokens_total": "counter", "vllm:generation_tokens_total": "counter", "vllm:request_success_total": "counter",
		"vllm:time_to_first_token_seconds": "histogram", "vllm:time_per_output_token_seconds": "histogram",
		"vllm:e2e_request_latency_seconds": "histogram", "vllm:request_queue_time_seconds": "histogram",
		"stride_spec_draft_tokens_total": "counter", "stride_spec_accepted_tokens_total": "counter",
		"stride_kv_blocks_free": "gauge", "stride_kv_blocks_total": "gauge", "stride_kv_blocks_shared": "gauge",
		"stride_kv_cow_copies_total": "counter", "stride_kv_cow_bytes_total": "counter", "stride_steps_total": "counter",
		"stride_bytes_copied_total": "counter", "stride_copy_ops_total": "counter", "stride_attention_path_info": "gauge",
	}
	for name, typ := range want {
		if types[name] != typ {
			t.Errorf("%s: type %q, want %q", name, types[name], typ)
		}
	}
	l := `{model_name="m"}`
	for name, v := range map[string]float64{
		"vllm:num_requests_waiting" + l: 0, "vllm:kv_cache_usage_perc" + l: 0,
		"vllm:prompt_tokens_total" + l: float64(promptTokens), "vllm:generation_tokens_total" + l: float64(genTokens),
		`vllm:request_success_total{finished_reason="length",model_name="m"}`: float64(finishes["length"]),
		`vllm:request_success_total{finished_reason="stop",model_name="m"}`:   float64(finishes["stop"]),
		"vllm:time_to_first_token_seconds_count" + l:                          float64(seqs),
		"vllm:e2e_request_latency_seconds_count" + l:                          float64(seqs),
		"vllm:request_queue_time_seconds_count" + l:                           float64(seqs),
		"vllm:time_per_output_token_seconds_count" + l:                        float64(seqs),
		"vllm:prefix_cache_queries_total" + l:                                 float64(st.KV.PromptTokens),
		"vllm:prefix_cache_hits_total" + l:                                    float64(st.KV.PrefixHitTokens),
		"vllm:num_preemptions_total" + l:                                      float64(st.Preemptions),
		"stride_spec_draft_tokens_total" + l:                                  float64(st.DraftTokens),
		"stride_spec_accepted_tokens_total" + l:                               float64(st.AcceptedTokens),
		"stride_kv_blocks_total" + l:                                          float64(st.KV.NumBlocks),
		"stride_kv_blocks_free" + l:                                           float64(st.KV.NumBlocks),
		`stride_attention_path_info{model_name="m",path="fused"}`:             1,
	} {
		if got, ok := s[name]; !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, v)
		}
	}
	if s["vllm:prefix_cache_hits_total"+l] == 0 || s["stride_spec_accepted_tokens_total"+l] == 0 {
		t.Errorf("the n = 2 prompt shared no block, or the long story accepted no draft: hits %v, accepted %v",
			s["vllm:prefix_cache_hits_total"+l], s["stride_spec_accepted_tokens_total"+l])
	}
}
