package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/stride-lm/stride/model/chat"
	"github.com/stride-lm/stride/model/checkpoint"
	"github.com/stride-lm/stride/model/engine"
	"github.com/stride-lm/stride/serve"
	"github.com/stride-lm/stride/tensor"
)

// Embed the OpenAI-compatible server in a Go program: Run listens at
// once (503 while load runs), serves the Server load builds, and drains
// it when the context ends. load is what infer serve does besides its
// flags: open the checkpoint, start an online engine, and give the
// Backend what the checkpoint's Generation says (stop ids, chat template,
// sampling defaults).
func ExampleRun() {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // infer serve: --host, --port
	if err != nil {
		log.Fatal(err)
	}
	load := func() (*serve.Server, func(), error) {
		ck, err := checkpoint.Open("", checkpoint.Options{}) // the built-in stories260K
		if err != nil {
			return nil, nil, err
		}
		m, err := ck.Load()
		if err != nil {
			return nil, nil, err
		}
		gen := ck.Generation
		// A Ledger feeds /metrics' stride_bytes_copied_total.
		e, err := engine.New(m, engine.Options{Tokenizer: ck.Tokenizer, MaxBatchedTokens: engine.DefaultMaxBatchedTokens, Ledger: tensor.NewLedger()})
		if err != nil {
			m.Close()
			return nil, nil, err
		}
		tmpl, err := chat.Select("", gen.ChatTemplate, gen.EOSText) // the model's template, else run.c's
		if err != nil {
			e.Close()
			m.Close()
			return nil, nil, err
		}
		b := serve.NewEngineBackend(e, serve.EngineConfig{Tokenizer: ck.Tokenizer, Template: tmpl, StopTokens: gen.StopTokens})
		srv := serve.New(b, serve.Config{ModelName: serve.ModelName(ck.Source.Name()),
			SamplingDefaults: gen.Sampling, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))}) // infer serve: os.Stderr
		return srv, func() { e.Close(); m.Close() }, nil
	}
	ctx, stop := context.WithCancel(context.Background()) // infer serve: signal.NotifyContext
	done := make(chan error)
	go func() { done <- serve.Run(ctx, ln, load, serve.RunOptions{DrainTimeout: 30 * time.Second}) }()

	url := "http://" + ln.Addr().String()
	for { // 503 while the model loads
		if res, err := http.Get(url + "/health"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	res, err := http.Post(url+"/v1/completions", "application/json",
		strings.NewReader(`{"prompt":"Once upon a time","max_tokens":27,"temperature":0}`))
	if err != nil {
		log.Fatal(err)
	}
	var c struct {
		Model   string `json:"model"`
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
	}
	err = json.NewDecoder(res.Body).Decode(&c)
	res.Body.Close()
	if err != nil || len(c.Choices) != 1 {
		log.Fatal(err, c)
	}
	fmt.Printf("%s: %s\n", c.Model, c.Choices[0].Text)
	stop() // infer serve: SIGTERM
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	// Output:
	// stories260K: , there was a little girl named Lily. She loved to play outside in the park.
}
