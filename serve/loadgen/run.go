package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// Config is how a run sends its requests.
type Config struct {
	// Rate is the mean request rate per second; +Inf sends every request
	// at once.
	Rate float64
	// Burstiness is the gamma shape of the gaps (1: Poisson).
	Burstiness float64
	// MaxConcurrency bounds the requests in flight (0: no bound). A
	// request that arrives while the bound is reached waits for a slot.
	MaxConcurrency int
	// Seed seeds the arrival times.
	Seed uint64
	// Warmup requests are sent first, MaxConcurrency (or all) at a time,
	// and not measured: WarmupPrompts when given (prompts of their own,
	// so a server's prefix cache cannot carry them into the measured
	// run), else the dataset's first ones, cycled.
	Warmup        int
	WarmupPrompts []Prompt
	// IgnoreEOS asks the server to generate every output token.
	IgnoreEOS bool
	// Progress, when set, is called after each measured request.
	Progress func(done, total int)
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// ErrNoUsage is the error of a run whose server streamed no usage: its
// output token counts, and so every per-token metric, are unknown.
var ErrNoUsage = errors.New("the server's streams carry no usage: it must honour stream_options.include_usage, since output tokens are counted from usage")

// Result is one run: its settings, records and summary.
type Result struct {
	Config   Config
	Prompts  int
	Records  []Record
	Duration time.Duration
}

// FirstFailure says why the run's first failed request failed, as its
// status and message ("503: server busy"), or "no requests" when none
// failed: what a front end reports when no request succeeded.
func (r *Result) FirstFailure() string {
	for i := range r.Records {
		if rec := &r.Records[i]; !rec.OK() {
			return rec.Status + ": " + rec.Err
		}
	}
	return "no requests"
}

// Run sends prompts to t as cfg says and measures every request. It
// returns the records even when ctx ends (the requests cut short are
// "cancelled", ctx's error is returned), and ErrNoUsage (with the
// records) when a stream carried no usage.
func Run(ctx context.Context, t *Target, prompts []Prompt, cfg Config) (*Result, error) {
	if cfg.Rate <= 0 || math.IsNaN(cfg.Rate) || cfg.Burstiness <= 0 || cfg.MaxConcurrency < 0 || cfg.Warmup < 0 {
		return nil, fmt.Errorf("run: want a rate and a burstiness > 0, got %v and %v", cfg.Rate, cfg.Burstiness)
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	if err := warmup(ctx, t, prompts, cfg, now); err != nil {
		return nil, err
	}
	at := Arrivals(len(prompts), cfg.Rate, cfg.Burstiness, rand.New(rand.NewPCG(cfg.Seed, 0x5eed)))
	res := &Result{Config: cfg, Prompts: len(prompts), Records: make([]Record, len(prompts))}
	var slots chan struct{}
	if cfg.MaxConcurrency > 0 {
		slots = make(chan struct{}, cfg.MaxConcurrency)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	start := now()
	for i, p := range prompts {
		if !sleepUntil(ctx, start.Add(at[i]), now) {
			res.Records[i] = Record{Index: p.Index, Status: "cancelled", Err: ctx.Err().Error()}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res.Records[i] = sendInSlot(ctx, t, p, cfg.IgnoreEOS, slots, start, now)
			if cfg.Progress != nil {
				mu.Lock()
				done++
				cfg.Progress(done, len(prompts))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	res.Duration = now().Sub(start)
	if err := ctx.Err(); err != nil {
		return res, err
	}
	for i := range res.Records {
		if res.Records[i].Status == "missing usage" {
			return res, ErrNoUsage
		}
	}
	return res, nil
}

// sendInSlot waits for a concurrency slot (when slots bounds them) and
// sends p.
func sendInSlot(ctx context.Context, t *Target, p Prompt, ignoreEOS bool, slots chan struct{}, start time.Time, now func() time.Time) Record {
	if slots != nil {
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
		case <-ctx.Done():
			return Record{Index: p.Index, Status: "cancelled", Err: ctx.Err().Error()}
		}
	}
	return t.Send(ctx, p, ignoreEOS, start, now)
}

// sleepUntil waits until the clock reads when, or ctx ends (false).
func sleepUntil(ctx context.Context, when time.Time, now func() time.Time) bool {
	d := when.Sub(now())
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// warmup sends cfg.Warmup requests (WarmupPrompts, else the dataset's
// first ones, cycled),
// MaxConcurrency at a time, and fails when one fails: a server that
// cannot answer the warm-up would fail the run for the same reason.
func warmup(ctx context.Context, t *Target, prompts []Prompt, cfg Config, now func() time.Time) error {
	if len(cfg.WarmupPrompts) > 0 {
		prompts = cfg.WarmupPrompts
	}
	if cfg.Warmup == 0 || len(prompts) == 0 {
		return nil
	}
	width := cfg.MaxConcurrency
	if width == 0 {
		width = cfg.Warmup
	}
	slots := make(chan struct{}, width)
	recs := make([]Record, cfg.Warmup)
	var wg sync.WaitGroup
	start := now()
	for i := range recs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			recs[i] = sendInSlot(ctx, t, prompts[i%len(prompts)], cfg.IgnoreEOS, slots, start, now)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, r := range recs {
		if r.Status == "missing usage" {
			return ErrNoUsage
		}
		if !r.OK() {
			return fmt.Errorf("warm-up request failed (%s): %s", r.Status, r.Err)
		}
	}
	return nil
}
