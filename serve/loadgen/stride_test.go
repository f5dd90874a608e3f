package loadgen

import (
	"context"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http/httptest"
	"testing"

	"github.com/stride-lm/stride/model/chat"
	"github.com/stride-lm/stride/model/checkpoint"
	"github.com/stride-lm/stride/model/engine"
	"github.com/stride-lm/stride/serve"
)

// strideServer is `infer serve` of the built-in stories260K in process,
// on a loopback port the test picks, and the checkpoint it serves.
func strideServer(t *testing.T) (*httptest.Server, *checkpoint.Checkpoint) {
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
	ts := httptest.NewServer(serve.New(b, serve.Config{ModelName: "stories260K", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	t.Cleanup(func() { ts.Close(); e.Close(); m.Close() })
	return ts, ck
}

// Against Stride's own server: random prompts made token-exact by the
// server's /tokenize and by the local tokenizer agree, and the server's
// usage confirms them; with ignore_eos every request generates exactly
// its output length; the model comes from /v1/models.
func TestRunAgainstStride(t *testing.T) {
	ts, ck := strideServer(t)
	tg, err := NewTarget(ts.URL+"/v1", "", 4)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	ctx := context.Background()
	models, err := tg.Models(ctx)
	if err != nil || len(models) != 1 || models[0] != "stories260K" {
		t.Fatalf("models %v %v", models, err)
	}
	tg.Model = models[0]
	r := Random{N: 8, InputLen: 24, OutputLen: 12, RangeRatio: 0.5}
	ps, inexact, err := RandomPrompts(ctx, r, rand.New(rand.NewPCG(9, 1)), tg.Count)
	if err != nil || inexact != 0 {
		t.Fatalf("%v, %d inexact", err, inexact)
	}
	local := func(_ context.Context, text string) (int, error) {
		ids, err := ck.Tokenizer.Encode(text, ck.Generation.AddBOS, false)
		return len(ids), err
	}
	ps2, _, err := RandomPrompts(ctx, r, rand.New(rand.NewPCG(9, 1)), local)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ps {
		if ps[i] != ps2[i] {
			t.Errorf("prompt %d: the server's count and the local tokenizer's differ: %+v / %+v", i, ps[i], ps2[i])
		}
	}
	res, err := Run(ctx, tg, ps, Config{Rate: 50, Burstiness: 1, MaxConcurrency: 4, Seed: 1, IgnoreEOS: true, Warmup: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i, rec := range res.Records {
		if !rec.OK() || rec.PromptLen != ps[i].Len || rec.OutputLen != ps[i].OutputLen || rec.Text == "" ||
			rec.TTFT <= 0 || rec.Latency < rec.TTFT {
			t.Errorf("request %d (%d→%d tokens): %+v", i, ps[i].Len, ps[i].OutputLen, rec)
		}
	}
	s := Summarize(res.Records, res.Duration, []float64{99}, SLO{})
	if s.Completed != 8 || s.OutputThroughput <= 0 || s.ITL.Mean <= 0 || math.IsNaN(s.TPOT.Mean) {
		t.Errorf("%+v", s)
	}
	// The chat endpoint: the template adds to the prompt's tokens.
	tg.Chat = true
	res, err = Run(ctx, tg, ps[:2], Config{Rate: math.Inf(1), Burstiness: 1, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, rec := range res.Records {
		if !rec.OK() || rec.PromptLen <= ps[i].Len || rec.OutputLen != ps[i].OutputLen {
			t.Errorf("chat request %d: %+v", i, rec)
		}
	}
}
