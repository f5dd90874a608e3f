package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stride-lm/stride/cmd/infer/internal/outfile"
	"github.com/stride-lm/stride/configs"
	"github.com/stride-lm/stride/model/checkpoint"
	"github.com/stride-lm/stride/model/tokenizer"
	"github.com/stride-lm/stride/serve/loadgen"
	"github.com/stride-lm/stride/serve/loadgen/loadplot"
)

func init() {
	registerKeys(
		configs.Key{Name: "bench.serve.base-url", Kind: configs.String, Default: "http://127.0.0.1:8080/v1", Help: "the server's base URL, as OpenAI clients take it (http://host:port/v1); without /v1 works too"},
		configs.Key{Name: "bench.serve.served-model-name", Kind: configs.String, Default: "", Help: "the model field sent; empty = the first entry of the server's /v1/models"},
		configs.Key{Name: "bench.serve.endpoint", Kind: configs.String, Default: "completions", Allowed: []string{"completions", "chat"}, Help: "/v1/completions or /v1/chat/completions (the prompt as one user message)"},
		configs.Key{Name: "bench.serve.api-key", Kind: configs.String, Default: "", Help: "bearer key sent with every request"},
		configs.Key{Name: "bench.serve.num-prompts", Kind: configs.Int, Default: 100, Range: configs.InRange(1, 1e6), Help: "requests measured per request rate"},
		configs.Key{Name: "bench.serve.request-rate", Kind: configs.Strings, Default: []string{"inf"}, Help: "requests per second, or inf (all at t=0; the default); a list (1,2,4 or a repeated flag) runs one benchmark per rate"},
		configs.Key{Name: "bench.serve.burstiness", Kind: configs.Float, Default: 1.0, Range: configs.Above(0), Help: "gamma shape of the gaps between requests: 1 = Poisson, < 1 burstier, > 1 more regular"},
		configs.Key{Name: "bench.serve.max-concurrency", Kind: configs.Int, Default: 0, Range: configs.InRange(0, 1e5), Help: "most requests in flight; 0 = no bound"},
		configs.Key{Name: "bench.serve.seed", Kind: configs.Int, Default: 0, Range: configs.AtLeast(0), Help: "seed of the random dataset and of the arrival times"},
		configs.Key{Name: "bench.serve.dataset", Kind: configs.String, Default: "random", Help: "random, or a file of JSON lines {\"prompt\": ..., \"output_len\": N}"},
		configs.Key{Name: "bench.serve.input-len", Kind: configs.Int, Default: 128, Range: configs.InRange(1, 1e6), Help: "random dataset: prompt length in tokens"},
		configs.Key{Name: "bench.serve.output-len", Kind: configs.Int, Default: 128, Range: configs.InRange(1, 1e6), Help: "max_tokens of each request (a file's own output_len wins)"},
		configs.Key{Name: "bench.serve.range-ratio", Kind: configs.Float, Default: 0.0, Range: configs.InRange(0, 0.99), Help: "random dataset: lengths drawn uniformly from len·(1±ratio)"},
		configs.Key{Name: "bench.serve.tokenizer", Kind: configs.Path, Default: "", Help: "tokenizer that counts the random prompts (tokenizer.bin, GGUF, tokenizer.json); empty = --checkpoint's, else the server's /tokenize"},
		configs.Key{Name: "bench.serve.checkpoint", Kind: configs.Path, Default: "", Help: "checkpoint whose tokenizer counts the random prompts (the model is not loaded)"},
		configs.Key{Name: "bench.serve.ignore-eos", Kind: configs.Bool, Default: false, Help: "ask the server to ignore EOS, so every request generates its output length"},
		configs.Key{Name: "bench.serve.warmup", Kind: configs.Int, Default: 0, Range: configs.InRange(0, 1e5), Help: "unmeasured requests sent before the benchmark"},
		configs.Key{Name: "bench.serve.percentiles", Kind: configs.String, Default: "99", Help: "latency percentiles reported, e.g. 50,90,99"},
		configs.Key{Name: "bench.serve.goodput", Kind: configs.Strings, Default: []string{}, Help: "SLOs for goodput: ttft:MS tpot:MS e2el:MS"},
		configs.Key{Name: "bench.serve.output", Kind: configs.String, Default: "table", Allowed: []string{"table", "json"}, Help: "output of infer bench serve: vLLM's table, or one JSON object per rate with every request"},
		configs.Key{Name: "bench.serve.plot", Kind: configs.Path, Default: "", Help: "PNG with the latency CDFs, and output throughput against request rate when several rates run"},
	)
}

func newBenchServeCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Measure an OpenAI-compatible server under load, vLLM's bench serve",
		Long: `bench serve sends streamed requests to a running OpenAI-compatible server
(infer serve, llama.cpp's llama-server, vLLM, ...) and measures them on the
client side with vLLM's definitions: TTFT (time to the first non-empty
content chunk), TPOT ((latency - TTFT) / (output tokens - 1)), ITL (the gaps
between content chunks), E2EL, and request, output and total token
throughput, with mean, median and --percentiles. It loads no model.

Requests arrive as a gamma process at --request-rate (--burstiness 1 is
Poisson; inf sends all at once), at most --max-concurrency at a time. The
random dataset's prompts are token-exact: counted by --tokenizer or
--checkpoint's tokenizer, else by the server's /tokenize. Output tokens come
from the stream's usage (stream_options.include_usage); a server that sends
none is an error. Failed requests are counted by HTTP status.

Several rates (--request-rate 1,2,4,inf) run one after another on the same
prompts; --plot draws output throughput against rate. docs/serving-bench.md
says how to read the numbers.`,
		Example: `  infer bench serve --num-prompts 64 --request-rate 4 --ignore-eos
  infer bench serve --base-url http://127.0.0.1:8080/v1 --request-rate 1,2,4,8,inf --plot rates.png
  infer bench serve --checkpoint model.gguf --input-len 256 --output-len 64 --max-concurrency 4
  infer bench serve --dataset prompts.jsonl --endpoint chat --goodput ttft:500 tpot:50 --output json`,
		Args: goodputArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runBenchServe(a, cmd, args) },
	}
	for _, f := range []struct{ name, usage string }{
		{"base-url", "server base URL"}, {"served-model-name", "model field sent"}, {"endpoint", "endpoint"},
		{"api-key", "bearer key"}, {"num-prompts", "requests per rate"}, {"request-rate", "requests per second or inf; repeatable, or a list"},
		{"burstiness", "gamma shape of the arrivals"}, {"max-concurrency", "most requests in flight; 0 = no bound"},
		{"seed", "seed of dataset and arrivals"}, {"dataset", "random or a JSON-lines file"}, {"input-len", "random prompt tokens"},
		{"output-len", "max_tokens per request"}, {"range-ratio", "random lengths' spread"}, {"tokenizer", "tokenizer counting prompts"},
		{"checkpoint", "checkpoint whose tokenizer counts prompts"}, {"ignore-eos", "generate every output token"},
		{"warmup", "unmeasured requests first"}, {"percentiles", "latency percentiles"}, {"goodput", "SLOs, e.g. ttft:500 tpot:50 (vLLM's form) or repeated"},
		{"output", "output format"}, {"plot", "PNG of latency CDFs and throughput against rate"},
	} {
		a.flag(cmd, f.name, "bench.serve."+f.name, f.usage)
	}
	return cmd
}

// goodputArgs takes the words after --goodput as more SLOs, as vLLM's
// `--goodput ttft:500 tpot:50` (an nargs="+" flag) reads them; any other
// argument is refused.
func goodputArgs(cmd *cobra.Command, args []string) error {
	for _, arg := range args {
		if !cmd.Flags().Changed("goodput") || !strings.Contains(arg, ":") {
			return fmt.Errorf("unexpected argument %q (bench serve takes flags only; SLOs follow --goodput, e.g. --goodput ttft:500 tpot:50)", arg)
		}
	}
	return nil
}

// benchServePlan is what the flags ask for, checked before any request.
type benchServePlan struct {
	rates       []float64
	percentiles []float64
	slo         loadgen.SLO
	cfg         loadgen.Config
}

// parseBenchServe checks the flags; slos are --goodput's extra words.
func parseBenchServe(a *app, slos []string) (benchServePlan, error) {
	var p benchServePlan
	var err error
	if p.rates, err = loadgen.ParseRates(a.cfg.Strings("bench.serve.request-rate")); err != nil {
		return p, err
	}
	if p.percentiles, err = loadgen.ParsePercentiles(a.cfg.String("bench.serve.percentiles")); err != nil {
		return p, err
	}
	if p.slo, err = loadgen.ParseGoodput(append(a.cfg.Strings("bench.serve.goodput"), slos...)); err != nil {
		return p, err
	}
	if a.cfg.Path("bench.serve.tokenizer") != "" && a.cfg.Path("bench.serve.checkpoint") != "" {
		return p, errors.New("give --tokenizer or --checkpoint, not both")
	}
	p.cfg = loadgen.Config{Burstiness: a.cfg.Float("bench.serve.burstiness"), MaxConcurrency: a.cfg.Int("bench.serve.max-concurrency"),
		Seed: uint64(a.cfg.Int("bench.serve.seed")), Warmup: a.cfg.Int("bench.serve.warmup"), IgnoreEOS: a.cfg.Bool("bench.serve.ignore-eos")}
	return p, nil
}

func runBenchServe(a *app, cmd *cobra.Command, slos []string) error {
	plan, err := parseBenchServe(a, slos)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	var plot *outfile.File
	if path := a.cfg.Path("bench.serve.plot"); path != "" {
		if plot, err = outfile.Create(ctx, path); err != nil {
			return fmt.Errorf("plot: %w", err)
		}
		defer plot.Abort()
	}
	tg, err := loadgen.NewTarget(a.cfg.String("bench.serve.base-url"), a.cfg.String("bench.serve.api-key"), plan.cfg.MaxConcurrency)
	if err != nil {
		return err
	}
	defer tg.Close()
	tg.Chat = a.cfg.String("bench.serve.endpoint") == "chat"
	if tg.Model = a.cfg.String("bench.serve.served-model-name"); tg.Model == "" {
		models, err := tg.Models(ctx)
		if err != nil {
			return err
		}
		if len(models) == 0 {
			return fmt.Errorf("%s/models lists no model: give --served-model-name", tg.API)
		}
		tg.Model = models[0]
	}
	prompts, counter, err := benchServeDataset(ctx, a, tg, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	if n := a.cfg.Int("bench.serve.num-prompts"); len(prompts) > n {
		// The random dataset's extra prompts are the warm-up's own.
		prompts, plan.cfg.WarmupPrompts = prompts[:n], prompts[n:]
	}
	reports, runErr := benchServeRates(ctx, a, cmd, tg, plan, prompts, counter)
	if runErr != nil || plot == nil {
		return runErr
	}
	png, err := loadplot.PNG(tg.Model, reports)
	if err != nil {
		return err
	}
	if err := writePlot(plot, png); err != nil { // compare.go
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", plot.Name())
	return nil
}

// benchServeRates runs the benchmark at each rate and prints each report
// as it ends; an interrupted run prints what it measured.
func benchServeRates(ctx context.Context, a *app, cmd *cobra.Command, tg *loadgen.Target, plan benchServePlan,
	prompts []loadgen.Prompt, counter string) ([]*loadgen.Report, error) {
	var reports []*loadgen.Report
	for i, rate := range plan.rates {
		cfg := plan.cfg
		cfg.Rate = rate
		if i > 0 {
			cfg.Warmup = 0 // the server is warm after the first rate
		}
		label := "rate " + loadgen.RateName(rate)
		bar := newProgress(cmd.ErrOrStderr(), label, int64(len(prompts)))
		cfg.Progress = func(done, total int) { bar.set(int64(done)) }
		start := time.Now()
		res, err := loadgen.Run(ctx, tg, prompts, cfg)
		bar.done()
		if res == nil {
			return reports, err
		}
		rep := loadgen.NewReport(res, plan.percentiles, plan.slo, tg.Model, a.cfg.String("bench.serve.endpoint"), counter, start)
		reports = append(reports, rep)
		if i > 0 && a.cfg.String("bench.serve.output") == "table" {
			fmt.Fprintln(cmd.OutOrStdout())
		}
		if werr := rep.Write(cmd.OutOrStdout(), a.cfg.String("bench.serve.output")); werr != nil {
			return reports, werr
		}
		if err != nil {
			return reports, err
		}
		if rep.Summary.Completed == 0 {
			return reports, fmt.Errorf("no request succeeded at %s: %s", label, res.FirstFailure())
		}
	}
	return reports, nil
}

// benchServeDataset builds the prompts, and names what counted them.
func benchServeDataset(ctx context.Context, a *app, tg *loadgen.Target, errw io.Writer) ([]loadgen.Prompt, string, error) {
	n, outLen := a.cfg.Int("bench.serve.num-prompts"), a.cfg.Int("bench.serve.output-len")
	if ds := a.cfg.String("bench.serve.dataset"); ds != "random" {
		path := a.cfg.Path("bench.serve.dataset")
		raw, err := readCapped(path, "dataset")
		if err != nil {
			return nil, "", err
		}
		ps, err := loadgen.ParseJSONL(bytes.NewReader(raw), outLen)
		if err != nil {
			return nil, "", fmt.Errorf("dataset %s: %w", path, err)
		}
		return loadgen.Take(ps, n), "", nil
	}
	count, counter, closeCounter, err := benchServeCounter(a, tg)
	if err != nil {
		return nil, "", err
	}
	defer closeCounter()
	// The warm-up gets prompts of its own (drawn after the measured
	// ones, which stay the same whatever --warmup is), so no server's
	// prefix cache holds a measured prompt.
	r := loadgen.Random{N: n + a.cfg.Int("bench.serve.warmup"), InputLen: a.cfg.Int("bench.serve.input-len"), OutputLen: outLen, RangeRatio: a.cfg.Float("bench.serve.range-ratio")}
	rng := rand.New(rand.NewPCG(uint64(a.cfg.Int("bench.serve.seed")), 0xda7a))
	ps, inexact, err := loadgen.RandomPrompts(ctx, r, rng, count)
	if err != nil {
		if counter == "server" {
			err = fmt.Errorf("%w (without --tokenizer or --checkpoint, prompts are counted by the server's /tokenize)", err)
		}
		return nil, "", err
	}
	if inexact > 0 {
		fmt.Fprintf(errw, "note: %d of %d prompts could not be made exactly %d tokens long; their lengths are in the JSON\n", inexact, r.N, r.InputLen)
	}
	return ps, counter, nil
}

// benchServeCounter is what counts the random prompts' tokens: a local
// tokenizer (--tokenizer, or --checkpoint's own), else the server.
func benchServeCounter(a *app, tg *loadgen.Target) (loadgen.Counter, string, func(), error) {
	tokPath, ckPath := a.cfg.Path("bench.serve.tokenizer"), a.cfg.Path("bench.serve.checkpoint")
	switch {
	case tokPath != "":
		tok, err := checkpoint.OpenTokenizer(tokPath)
		if err != nil {
			return nil, "", nil, err
		}
		return tokenizer.PromptCounter(tok), tokPath, func() {}, nil
	case ckPath != "":
		ck, err := checkpoint.Open(ckPath, checkpoint.Options{})
		if err != nil {
			return nil, "", nil, err
		}
		return tokenizer.PromptCounter(ck.Tokenizer), ckPath, func() { ck.Close() }, nil
	}
	return tg.Count, "server", func() {}, nil
}
