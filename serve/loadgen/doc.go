// Package loadgen is `infer bench serve`: a serving benchmark client for
// any OpenAI-compatible endpoint, measured the way vLLM's
// benchmark_serving.py (`vllm bench serve`) measures.
//
// A run has four parts, each in its own file:
//
//   - arrivals.go: when each request is sent, a gamma process at a
//     request rate (burstiness 1 is Poisson; an infinite rate sends every
//     request at t = 0), optionally capped by a maximum concurrency;
//   - dataset.go: what is sent, random prompts of token-exact input
//     lengths (counted by a local tokenizer or the server's /tokenize) or
//     the prompts of a JSON-lines file;
//   - client.go and sse.go: one streamed request, its server-sent events
//     parsed, the arrival time of every content chunk recorded, and its
//     token counts taken from the stream's usage (stream_options.
//     include_usage; a stream without usage is an error, not a guess);
//   - metrics.go: the vLLM definitions over those records (TTFT, TPOT,
//     ITL, E2EL, throughputs, percentiles, goodput against SLOs), pure
//     functions of the records, and report.go: the table and the JSON
//     with vLLM's field names.
//
// Nothing here loads a model: the package imports nothing of Stride, so
// it measures Stride's server and llama.cpp's llama-server alike.
package loadgen
