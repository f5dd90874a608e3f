package main

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/stride-lm/stride/configs"
	"github.com/stride-lm/stride/model/chat"
	"github.com/stride-lm/stride/model/engine"
	"github.com/stride-lm/stride/serve"
	"github.com/stride-lm/stride/tensor"
)

func init() {
	registerKeys(
		configs.Key{Name: "serve.host", Kind: configs.String, Default: "127.0.0.1", Help: "address infer serve listens on"},
		configs.Key{Name: "serve.port", Kind: configs.Int, Default: 8080, Range: configs.InRange(0, 65535), Help: "port infer serve listens on; 0 = any free port"},
		configs.Key{Name: "serve.max_queue", Kind: configs.Int, Default: 64, Range: configs.AtLeast(1), Help: "most sequences waiting for the engine; beyond, 503 with Retry-After"},
		configs.Key{Name: "serve.request_timeout", Kind: configs.Duration, Default: 10 * time.Minute, Help: "longest a request may queue and generate"},
		configs.Key{Name: "serve.drain_timeout", Kind: configs.Duration, Default: 30 * time.Second, Help: "on SIGTERM, how long running requests may finish before they are cancelled"},
		configs.Key{Name: "serve.max_body", Kind: configs.String, Default: "4MiB", Help: "largest request body; beyond, 413"},
		configs.Key{Name: "serve.max_tokens", Kind: configs.Int, Default: 0, Range: configs.AtLeast(0), Help: "generated-token cap of a request that sets none; 0 = the rest of the context (vLLM)"},
		configs.Key{Name: "serve.served_model_name", Kind: configs.String, Default: "", Help: "the model's name in the API; empty = the checkpoint's file name"},
		configs.Key{Name: "api_key", Kind: configs.Strings, Default: []string{}, Help: "accepted bearer keys of infer serve (repeatable); every route but /health and the /kv page's own files then needs one", Secret: true},
		configs.Key{Name: "serve.debug_endpoints", Kind: configs.Bool, Default: false, Help: "serve /debug/kv, /debug/kv/events and the KV cache page /kv (off in production)"},
		configs.Key{Name: "serve.debug_show_text", Kind: configs.Bool, Default: false, Help: "let the debug routes show prompt and generated text"},
		configs.Key{Name: "max_batched_tokens", Kind: configs.Int, Default: engine.DefaultMaxBatchedTokens, Range: configs.AtLeast(0), Help: "tokens per engine step (chunked prefill); 0 = a prompt's prefill in one step"},
		configs.Key{Name: "max_prefill_stall", Kind: configs.Float, Default: engine.DefaultPrefillStall, Range: configs.AtLeast(0), Help: "while streams decode, a step's prefill costs about this many of their decode steps (measured); 0 = the token budget alone"},
	)
	register(newServeCmd)
}

func newServeCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the model over an OpenAI-compatible HTTP API",
		Long: `serve answers OpenAI's /v1/chat/completions, /v1/completions and /v1/models
(streamed or not), with /tokenize, /detokenize, /health and /metrics
(Prometheus, under vLLM's metric names), on one continuous-batching engine:
requests that arrive while others run join the next step.

The same request gives the same bytes whatever else runs: the engine's
results do not depend on batching (docs/serving.md).

SIGTERM or SIGINT drains: new requests get 503 with Retry-After, running
ones finish within --drain-timeout, then the server exits 0. A second
signal exits at once. Each request logs one JSON line on stderr.`,
		Example: `  infer serve --port 8080
  curl -s localhost:8080/v1/completions -d '{"prompt":"Once upon a time","max_tokens":32,"temperature":0}'
  INFER_API_KEY=secret infer serve -m model.gguf --host 0.0.0.0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runServe(a, cmd) },
	}
	modelFlags(a, cmd)
	specFlags(a, cmd) // --speculate ngram drafts for served requests too
	for _, f := range [][3]string{
		{"host", "serve.host", "listen address"},
		{"port", "serve.port", "listen port; 0 = any free port"},
		{"max-queue", "serve.max_queue", "most waiting sequences"},
		{"request-timeout", "serve.request_timeout", "longest queueing plus generation"},
		{"drain-timeout", "serve.drain_timeout", "time running requests get on shutdown"},
		{"max-body", "serve.max_body", "largest request body"},
		{"max-tokens", "serve.max_tokens", "default cap on generated tokens; 0 = the rest of the context"},
		{"served-model-name", "serve.served_model_name", "the model's name in the API"},
		{"api-key", "api_key", "accepted bearer key (repeatable)"},
		{"max-batched-tokens", "max_batched_tokens", "tokens per step (chunked prefill); 0 = off"},
		{"max-prefill-stall", "max_prefill_stall", "a step's prefill beside decodes, in decode steps; 0 = off"},
		{"chat-template", "chat.template", "chat template name or file"},
		{"debug-endpoints", "serve.debug_endpoints", "serve /debug/kv, its events and the /kv page"},
		{"debug-show-text", "serve.debug_show_text", "show prompt and generated text on the debug routes"},
	} {
		a.flag(cmd, f[0], f[1], f[2])
	}
	a.flagP(cmd, "ctx-size", "c", "ctx_size", "context served (positions); 0 = min(seq_len, 4096)")
	hardeningFlags(a, cmd)
	return cmd
}

// runServe listens at once (answering 503 while the model loads), loads
// the model, serves until the command's context ends, then drains
// (serve.Run).
func runServe(a *app, cmd *cobra.Command) error {
	cfg, hc, err := serveConfig(a)
	if err != nil {
		return err
	}
	addr := net.JoinHostPort(a.cfg.String("serve.host"), strconv.Itoa(a.cfg.Int("serve.port")))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	stderr := cmd.ErrOrStderr()
	return serve.Run(cmd.Context(), ln, func() (*serve.Server, func(), error) { return newServer(a, cmd, cfg) },
		serve.RunOptions{HTTP: hc, DrainTimeout: a.cfg.Duration("serve.drain_timeout"),
			Logf: func(format string, args ...any) { fmt.Fprintf(stderr, "infer serve: "+format+"\n", args...) }})
}

// newServer loads the model and builds the engine and the server.
func newServer(a *app, cmd *cobra.Command, cfg serve.Config) (*serve.Server, func(), error) {
	stderr := cmd.ErrOrStderr()
	lm, err := loadModel(a)
	if err != nil {
		return nil, nil, err
	}
	ctxLen := contextSize(a, lm.m.Config, stderr)
	opts, err := engineOptions(a, nil)
	if err != nil {
		lm.m.Close()
		return nil, nil, err
	}
	opts.Context = ctxLen
	opts.Tokenizer, opts.MaxBatchedTokens = lm.codec, a.cfg.Int("max_batched_tokens")
	opts.PrefillStall = a.cfg.Float("max_prefill_stall")
	// The Ledger feeds /metrics' stride_bytes_copied_total: what the
	// attention path copies per step is what Stride exists to show.
	opts.Ledger = tensor.NewLedger()
	e, err := engine.New(lm.m, opts)
	if err != nil {
		lm.m.Close()
		return nil, nil, err
	}
	closeAll := func() { e.Close(); lm.m.Close() }
	tmpl, err := serveTemplate(a, lm)
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	b := serve.NewEngineBackend(e, serve.EngineConfig{Tokenizer: lm.codec, Template: tmpl,
		StopTokens: lm.gen.StopTokens, MaxModelLen: ctxLen})
	name := a.cfg.String("serve.served_model_name")
	if name == "" {
		name = serve.ModelName(lm.name)
	}
	cfg.ModelName, cfg.Logger = name, slog.New(slog.NewJSONHandler(stderr, nil))
	cfg.SamplingDefaults = lm.gen.Sampling
	srv := serve.New(b, cfg)
	if a.cfg.Bool("serve.debug_endpoints") {
		srv.EnableDebug(serve.DebugOptions{ShowText: a.cfg.Bool("serve.debug_show_text")})
	}
	return srv, closeAll, nil
}

// serveTemplate is the chat template: --chat-template, else the model's
// own, else run.c's llama-2 format (as infer chat chooses).
func serveTemplate(a *app, lm *loadedModel) (*chat.Template, error) {
	return chat.Select(a.cfg.String("chat.template"), lm.gen.ChatTemplate, lm.gen.EOSText)
}
