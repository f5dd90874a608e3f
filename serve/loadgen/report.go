package loadgen

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// Report is one run with its summary and what it ran against: what
// `infer bench serve` prints and saves.
type Report struct {
	Result  *Result
	Summary Summary
	// Model is the model field sent; Endpoint "chat" or "completions";
	// Tokenizer what counted the input lengths.
	Model, Endpoint, Tokenizer string
	// Date is when the run started.
	Date time.Time
}

// NewReport summarizes res.
func NewReport(res *Result, percentiles []float64, slo SLO, model, endpoint, tokenizer string, date time.Time) *Report {
	return &Report{Result: res, Summary: Summarize(res.Records, res.Duration, percentiles, slo),
		Model: model, Endpoint: endpoint, Tokenizer: tokenizer, Date: date}
}

// ms is a duration in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Fields returns the report as vLLM's result JSON names it (completed,
// total_input_tokens, request_throughput, mean_ttft_ms, p99_itl_ms,
// input_lens, ttfts in seconds, ...), plus failed_by_status and
// requests, one record per request.
func (r *Report) Fields() map[string]any {
	s, cfg := r.Summary, r.Result.Config
	backend := "openai"
	if r.Endpoint == "chat" {
		backend = "openai-chat"
	}
	var rate any = cfg.Rate
	if math.IsInf(cfg.Rate, 1) {
		rate = "inf"
	}
	var goodput any
	if s.SLO.Set() {
		goodput = s.RequestGoodput
	}
	m := map[string]any{
		"date": r.Date.UTC().Format("20060102-150405"), "backend": backend, "endpoint": r.Endpoint,
		"model_id": r.Model, "tokenizer_id": r.Tokenizer, "num_prompts": r.Result.Prompts,
		"request_rate": rate, "burstiness": cfg.Burstiness, "max_concurrency": nilIfZero(cfg.MaxConcurrency),
		"duration": s.Duration.Seconds(), "completed": s.Completed, "failed": s.Failed,
		"failed_by_status": s.FailedByStatus, "total_input_tokens": s.TotalInputTokens,
		"total_output_tokens": s.TotalOutputTokens, "request_throughput": s.RequestThroughput,
		"request_goodput": goodput, "output_throughput": s.OutputThroughput,
		"total_token_throughput": s.TotalTokenThroughput,
	}
	for _, mt := range r.metrics() {
		m["mean_"+mt.key+"_ms"] = mt.st.Mean
		m["median_"+mt.key+"_ms"] = mt.st.Median
		m["std_"+mt.key+"_ms"] = mt.st.Std
		for i, p := range s.PercentilesAsked {
			m["p"+PercentileName(p)+"_"+mt.key+"_ms"] = mt.st.Percentiles[i]
		}
	}
	r.perRequest(m)
	return m
}

func nilIfZero(n int) any {
	if n == 0 {
		return nil
	}
	return n
}

// perRequest adds vLLM's per-request arrays (seconds, as vLLM saves
// them) and the records.
func (r *Report) perRequest(m map[string]any) {
	recs := r.Result.Records
	inLens, outLens := make([]int, len(recs)), make([]int, len(recs))
	ttfts, texts, errs := make([]float64, len(recs)), make([]string, len(recs)), make([]string, len(recs))
	itls := make([][]float64, len(recs))
	reqs := make([]map[string]any, len(recs))
	for i := range recs {
		rec := &recs[i]
		inLens[i], outLens[i], texts[i], errs[i] = rec.PromptLen, rec.OutputLen, rec.Text, rec.Err
		ttfts[i] = rec.TTFT.Seconds()
		itls[i] = make([]float64, len(rec.ITL))
		itlMS := make([]float64, len(rec.ITL))
		for j, g := range rec.ITL {
			itls[i][j], itlMS[j] = g.Seconds(), ms(g)
		}
		status := rec.Status
		if status == "" {
			status = "ok"
		}
		reqs[i] = map[string]any{"index": rec.Index, "start_s": rec.Start.Seconds(), "status": status,
			"input_len": rec.PromptLen, "output_len": rec.OutputLen, "ttft_ms": ms(rec.TTFT),
			"tpot_ms": ms(rec.TPOT()), "e2el_ms": ms(rec.Latency), "itl_ms": itlMS, "error": rec.Err}
	}
	m["input_lens"], m["output_lens"], m["ttfts"], m["itls"] = inLens, outLens, ttfts, itls
	m["generated_texts"], m["errors"], m["requests"] = texts, errs, reqs
}

// Write writes the report in format "table" (WriteTable) or "json"
// (WriteJSON), `infer bench serve --output`'s two.
func (r *Report) Write(w io.Writer, format string) error {
	switch format {
	case "table":
		return r.WriteTable(w)
	case "json":
		return r.WriteJSON(w)
	}
	return fmt.Errorf("bench serve report: unknown format %q (want table or json)", format)
}

// WriteJSON writes the report as one line of JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	b, err := json.Marshal(r.Fields())
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

type namedStats struct {
	key, title string
	st         Stats
}

func (r *Report) metrics() []namedStats {
	s := r.Summary
	return []namedStats{{"ttft", "Time to First Token", s.TTFT}, {"tpot", "Time per Output Token (excl. 1st token)", s.TPOT},
		{"itl", "Inter-token Latency", s.ITL}, {"e2el", "End-to-end Latency", s.E2EL}}
}

// WriteTable writes the report as vLLM prints it.
func (r *Report) WriteTable(w io.Writer) error {
	s, cfg := r.Summary, r.Result.Config
	var b strings.Builder
	line := func(label string, v any) { fmt.Fprintf(&b, "%-40s%v\n", label+":", v) }
	num := func(f float64) string { return fmt.Sprintf("%.2f", f) }
	rate := "inf"
	if !math.IsInf(cfg.Rate, 1) {
		rate = num(cfg.Rate)
	}
	b.WriteString(center(" Serving Benchmark Result ", '=') + "\n")
	line("Request rate (req/s)", rate)
	if cfg.MaxConcurrency > 0 {
		line("Maximum request concurrency", cfg.MaxConcurrency)
	}
	line("Successful requests", s.Completed)
	line("Failed requests", s.Failed)
	codes := make([]string, 0, len(s.FailedByStatus))
	for c := range s.FailedByStatus {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	for _, c := range codes {
		line("  failed: "+c, s.FailedByStatus[c])
	}
	line("Benchmark duration (s)", num(s.Duration.Seconds()))
	line("Total input tokens", s.TotalInputTokens)
	line("Total generated tokens", s.TotalOutputTokens)
	line("Request throughput (req/s)", num(s.RequestThroughput))
	if s.SLO.Set() {
		line("Request goodput (req/s)", num(s.RequestGoodput))
	}
	line("Output token throughput (tok/s)", num(s.OutputThroughput))
	line("Total token throughput (tok/s)", num(s.TotalTokenThroughput))
	for _, mt := range r.metrics() {
		b.WriteString(center(mt.title, '-') + "\n")
		up := strings.ToUpper(mt.key)
		line("Mean "+up+" (ms)", num(mt.st.Mean))
		line("Median "+up+" (ms)", num(mt.st.Median))
		for i, p := range s.PercentilesAsked {
			line("P"+PercentileName(p)+" "+up+" (ms)", num(mt.st.Percentiles[i]))
		}
	}
	b.WriteString(strings.Repeat("=", 50) + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// center centers title in a 50-character rule of c.
func center(title string, c byte) string {
	n := 50 - len([]rune(title))
	if n < 0 {
		return title
	}
	return strings.Repeat(string(c), n/2) + title + strings.Repeat(string(c), n-n/2)
}
