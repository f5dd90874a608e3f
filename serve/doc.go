// Package serve is Stride's OpenAI-compatible HTTP server: the routes
// /v1/chat/completions, /v1/completions, /v1/models, /tokenize,
// /detokenize, /health and /metrics over an inference Backend.
//
// # How a request travels
//
// A Server is an http.Handler. ServeHTTP wraps every request the same
// way: one structured access-log line when it ends (log/slog), a recover
// that turns a panic into a logged 500 while the server keeps serving,
// and the API-key check (every route but /health and the /kv page's
// static files, the key compared in constant time). The mux then picks
// the route.
//
// A generation request (chat or completion) goes through four stages,
// each in its own file:
//
//  1. decode.go and request.go: the body, capped at Config.MaxBody (413
//     beyond), is decoded into a genRequest. Every field of the wrong
//     type or out of range is a 400 whose param names it; unknown fields
//     are ignored, as OpenAI's clients send extras; fields Stride cannot
//     honour (tools, response_format, logit_bias, ...) are a 400 that
//     says so rather than being dropped.
//  2. generate.go: the prompt is tokenized (a chat through the model's
//     template, by the Backend), each prompt's token cap is set (the
//     request's max_tokens, else Config.MaxTokens, else the rest of the
//     context) and checked against the context (400
//     context_length_exceeded), and the queue is checked (503 with
//     Retry-After when the waiting sequences plus the request's own
//     would pass Config.MaxQueue; the check and the submission hold one
//     lock).
//  3. The n choices of each prompt are submitted to the Backend with
//     one context: the client's, bounded by Config.RequestTimeout and
//     cancelled by a drain that runs out of time. A client that goes away
//     cancels it, and the engine frees the sequences' KV blocks at its
//     next step. fanIn merges the choices' token streams.
//  4. collect.go and stream.go: the collector accumulates text, logprobs
//     and usage; whole answers one JSON object, stream answers
//     server-sent events (`data: <json>\n\n`, the role first, the same
//     id and created on every chunk, `data: [DONE]` last; an error after
//     the start is a `data: {"error": ...}` event before [DONE]).
//
// # Hostile clients
//
// Every bound is a Config or HTTPConfig field with a default:
// NewHTTPServer sets the header and idle timeouts and the header cap,
// LimitListener caps the connections (503 beyond), the Server bounds
// the body's size and read time, the JSON nesting, each string field,
// the queue and each request's time. Text is always tokenized as text,
// so a typed control token is never the token. CORS is off unless
// Config.CORSOrigins lists origins (cors.go). docs/serving.md's
// guarantees table names the test that crosses each bound.
//
// # The Backend
//
// The server knows nothing of tensors or schedulers: Backend is the small
// interface it needs (tokenize, submit, stats), and tests drive the whole
// HTTP surface with a fake one. The guarantee that makes Stride's server
// unusual lives below that interface: the engine computes the same bits
// for a sequence however it is batched, so the same request gives the
// same bytes whatever the load (docs/serving.md).
//
// # Seeing the KV cache
//
// EnableDebug (infer serve --debug-endpoints) adds GET /debug/kv, a
// snapshot of the engine's paged KV cache taken at a step boundary, GET
// /debug/kv/events, one server-sent event per step that replays onto it,
// and /kv, the page (web/kv, embedded) that draws both (debugkv.go). A
// Backend opts in by implementing KVDebugger; EngineBackend does.
//
// # A server's life
//
// Run is the whole life of a server process on a listener (run.go): it
// answers 503 (Loading) while the model loads, swaps the Server in once
// it has, and when its context ends (SIGTERM for `infer serve`, which
// calls Run) drains: Drain stops accepting generation requests (503 with
// Retry-After, and /health answers 503), waits for those in flight, and
// cancels what is left when the drain timeout ends; then the http.Server
// shuts down. ExampleRun embeds the server from checkpoint.Open on.
package serve
