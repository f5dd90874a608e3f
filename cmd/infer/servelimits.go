package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/stride-lm/stride/configs"
	"github.com/stride-lm/stride/kvcache"
	"github.com/stride-lm/stride/serve"
)

// The server's hardening keys: the bounds on what one client may hold
// (docs/serving.md's guarantees table), the key file and CORS.
func init() {
	registerKeys(
		configs.Key{Name: "serve.read_header_timeout", Kind: configs.Duration, Default: 10 * time.Second, Help: "longest a client may take to send a request's headers (slowloris); then it is disconnected"},
		configs.Key{Name: "serve.body_timeout", Kind: configs.Duration, Default: time.Minute, Help: "longest a client may take to send a request's body; then 408"},
		configs.Key{Name: "serve.idle_timeout", Kind: configs.Duration, Default: 2 * time.Minute, Help: "a keep-alive connection idle this long is closed"},
		configs.Key{Name: "serve.write_timeout", Kind: configs.Duration, Default: time.Minute, Help: "a stream whose client reads nothing for this long is dropped and its sequences cancelled"},
		configs.Key{Name: "serve.max_header_bytes", Kind: configs.String, Default: "64KiB", Help: "largest request line plus headers; beyond, 431"},
		configs.Key{Name: "serve.max_connections", Kind: configs.Int, Default: 512, Range: configs.AtLeast(1), Help: "most open connections; one beyond gets 503 with Retry-After and is closed"},
		configs.Key{Name: "serve.cors_origin", Kind: configs.Strings, Default: []string{}, Help: "browser origins allowed to call the API (repeatable; * = any); none = no CORS headers"},
		configs.Key{Name: "api_key_file", Kind: configs.String, Default: "", Help: "file of accepted bearer keys, one a line (# comments and blank lines skipped), added to api_key"},
	)
}

// hardeningFlags adds the flags of the keys above to serve.
func hardeningFlags(a *app, cmd *cobra.Command) {
	for _, f := range [][3]string{
		{"read-header-timeout", "serve.read_header_timeout", "longest time to send the headers"},
		{"body-timeout", "serve.body_timeout", "longest time to send the body"},
		{"idle-timeout", "serve.idle_timeout", "idle keep-alive connections are closed after this"},
		{"write-timeout", "serve.write_timeout", "a stream not read for this long is dropped"},
		{"max-header-bytes", "serve.max_header_bytes", "largest request headers"},
		{"max-connections", "serve.max_connections", "most open connections"},
		{"cors-origin", "serve.cors_origin", "allowed browser origin (repeatable; * = any)"},
		{"api-key-file", "api_key_file", "file of accepted bearer keys, one a line"},
	} {
		a.flag(cmd, f[0], f[1], f[2])
	}
}

// serveConfig reads the server's limits, keys and CORS origins from the
// flags and keys; the model's name and the logger are filled in later.
func serveConfig(a *app) (serve.Config, serve.HTTPConfig, error) {
	maxBody, err := kvcache.ParseBytes(a.cfg.String("serve.max_body"))
	if err != nil || maxBody < 1 {
		return serve.Config{}, serve.HTTPConfig{}, fmt.Errorf("serve.max_body %q: want a size such as 4MiB", a.cfg.String("serve.max_body"))
	}
	maxHeader, err := kvcache.ParseBytes(a.cfg.String("serve.max_header_bytes"))
	if err != nil || maxHeader < 1 || maxHeader > 1<<30 {
		return serve.Config{}, serve.HTTPConfig{}, fmt.Errorf("serve.max_header_bytes %q: want a size such as 64KiB", a.cfg.String("serve.max_header_bytes"))
	}
	keys := a.cfg.Strings("api_key")
	if path := a.cfg.Path("api_key_file"); path != "" {
		more, err := serve.ReadKeyFile(path)
		if err != nil {
			return serve.Config{}, serve.HTTPConfig{}, err
		}
		keys = append(append([]string(nil), keys...), more...)
	}
	cfg := serve.Config{APIKeys: keys, MaxQueue: a.cfg.Int("serve.max_queue"),
		RequestTimeout: a.cfg.Duration("serve.request_timeout"), MaxBody: maxBody,
		MaxTokens: a.cfg.Int("serve.max_tokens"), BodyTimeout: a.cfg.Duration("serve.body_timeout"),
		WriteTimeout: a.cfg.Duration("serve.write_timeout"), CORSOrigins: a.cfg.Strings("serve.cors_origin")}
	hc := serve.HTTPConfig{ReadHeaderTimeout: a.cfg.Duration("serve.read_header_timeout"),
		IdleTimeout: a.cfg.Duration("serve.idle_timeout"), MaxHeaderBytes: int(maxHeader),
		MaxConnections: a.cfg.Int("serve.max_connections")}
	return cfg, hc, nil
}
