package serve

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the server's Prometheus metrics, under vLLM's names (so
// its Grafana dashboards work) and Stride's own under stride_. The
// request metrics are counted here; the engine's state is read from
// Backend.Stats once per scrape (engineCollector).
type metrics struct {
	reg                            *prometheus.Registry
	promptTokens, generationTokens prometheus.Counter
	success                        *prometheus.CounterVec
	ttft, tpot, e2e, queue         prometheus.Histogram
}

// Buckets of the latency histograms: vLLM's.
var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}
	tpotBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}
	e2eBuckets  = []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}
)

func newMetrics(modelName string, b Backend) *metrics {
	labels := prometheus.Labels{"model_name": modelName}
	m := &metrics{reg: prometheus.NewRegistry()}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels})
	}
	hist := func(name, help string, buckets []float64) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets, ConstLabels: labels})
	}
	m.promptTokens = counter("vllm:prompt_tokens_total", "Prompt tokens processed (once per sequence).")
	m.generationTokens = counter("vllm:generation_tokens_total", "Tokens generated.")
	m.success = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:request_success_total",
		Help: "Sequences finished, by finish reason (stop, length, abort).", ConstLabels: labels}, []string{"finished_reason"})
	m.ttft = hist("vllm:time_to_first_token_seconds", "Time from the request's arrival to a sequence's first token.", ttftBuckets)
	m.tpot = hist("vllm:time_per_output_token_seconds", "Mean time between a sequence's tokens after the first.", tpotBuckets)
	m.e2e = hist("vllm:e2e_request_latency_seconds", "Time from the request's arrival to a sequence's end.", e2eBuckets)
	m.queue = hist("vllm:request_queue_time_seconds", "Time a sequence waited before the engine admitted it.", e2eBuckets)
	m.reg.MustRegister(m.promptTokens, m.generationTokens, m.success, m.ttft, m.tpot, m.e2e, m.queue,
		newEngineCollector(b, labels))
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// observe counts one finished sequence of a request that arrived at
// start and whose first token came at first (zero if none came).
func (m *metrics) observe(start, first time.Time, f Finish) {
	m.promptTokens.Add(float64(f.PromptTokens))
	m.generationTokens.Add(float64(f.GeneratedTokens))
	reason := f.Reason
	if reason != "stop" && reason != "length" || f.Err != nil {
		reason = "abort"
	}
	m.success.WithLabelValues(reason).Inc()
	now := time.Now()
	m.e2e.Observe(now.Sub(start).Seconds())
	m.queue.Observe(f.Queued.Seconds())
	if !first.IsZero() {
		m.ttft.Observe(first.Sub(start).Seconds())
		if f.GeneratedTokens > 1 {
			m.tpot.Observe(now.Sub(first).Seconds() / float64(f.GeneratedTokens-1))
		}
	}
}

// engineCollector reads Backend.Stats once per scrape, so the gauges of
// one scrape are consistent with each other.
type engineCollector struct {
	b     Backend
	descs map[string]*prometheus.Desc
}

// engineMetrics are the names and help of the metrics read from Stats.
var engineMetrics = [][2]string{
	{"vllm:num_requests_running", "Sequences running in the engine."},
	{"vllm:num_requests_waiting", "Sequences waiting for the engine."},
	{"vllm:kv_cache_usage_perc", "KV cache usage: 1 means 100 percent."},
	{"vllm:prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache."},
	{"vllm:prefix_cache_hits_total", "Prompt tokens the prefix cache served."},
	{"vllm:num_preemptions_total", "Sequences preempted to free KV blocks."},
	{"stride_spec_draft_tokens_total", "Tokens drafted by speculative decoding."},
	{"stride_spec_accepted_tokens_total", "Drafted tokens the verifier accepted."},
	{"stride_kv_blocks_free", "KV cache blocks free."},
	{"stride_kv_blocks_total", "KV cache blocks in the pool."},
	{"stride_kv_blocks_shared", "KV cache blocks held by more than one sequence."},
	{"stride_kv_cow_copies_total", "KV blocks copied on write."},
	{"stride_kv_cow_bytes_total", "Bytes the copies on write moved."},
	{"stride_steps_total", "Forward passes (scheduler steps) the engine ran."},
	{"stride_bytes_copied_total", "Bytes the attention path and the cache copied (the Ledger); divide its rate by stride_steps_total's for bytes copied per step."},
	{"stride_copy_ops_total", "Copy operations the attention path and the cache made (the Ledger)."},
	{"stride_attention_path_info", "The attention path, as its label."},
}

func newEngineCollector(b Backend, labels prometheus.Labels) *engineCollector {
	c := &engineCollector{b: b, descs: map[string]*prometheus.Desc{}}
	for _, m := range engineMetrics {
		var vars []string
		if m[0] == "stride_attention_path_info" {
			vars = []string{"path"}
		}
		c.descs[m[0]] = prometheus.NewDesc(m[0], m[1], vars, labels)
	}
	return c
}

func (c *engineCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *engineCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.b.Stats()
	usage := 0.0
	if st.BlocksTotal > 0 {
		usage = float64(st.BlocksTotal-st.BlocksFree) / float64(st.BlocksTotal)
	}
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	for _, v := range []struct {
		name string
		t    prometheus.ValueType
		x    float64
	}{
		{"vllm:num_requests_running", gauge, float64(st.Running)},
		{"vllm:num_requests_waiting", gauge, float64(st.Waiting)},
		{"vllm:kv_cache_usage_perc", gauge, usage},
		{"vllm:prefix_cache_queries_total", counter, float64(st.PrefixQueries)},
		{"vllm:prefix_cache_hits_total", counter, float64(st.PrefixHits)},
		{"vllm:num_preemptions_total", counter, float64(st.Preemptions)},
		{"stride_spec_draft_tokens_total", counter, float64(st.DraftTokens)},
		{"stride_spec_accepted_tokens_total", counter, float64(st.AcceptedTokens)},
		{"stride_kv_blocks_free", gauge, float64(st.BlocksFree)},
		{"stride_kv_blocks_total", gauge, float64(st.BlocksTotal)},
		{"stride_kv_blocks_shared", gauge, float64(st.BlocksShared)},
		{"stride_kv_cow_copies_total", counter, float64(st.CoWCopies)},
		{"stride_kv_cow_bytes_total", counter, float64(st.CoWBytes)},
		{"stride_steps_total", counter, float64(st.Steps)},
		{"stride_bytes_copied_total", counter, float64(st.BytesCopied)},
		{"stride_copy_ops_total", counter, float64(st.CopyOps)},
	} {
		ch <- prometheus.MustNewConstMetric(c.descs[v.name], v.t, v.x)
	}
	ch <- prometheus.MustNewConstMetric(c.descs["stride_attention_path_info"], gauge, 1, st.AttentionPath)
}
