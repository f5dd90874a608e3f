package engine

import (
	"context"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stride-lm/stride/model"
)

// gapModel is a small synthetic model with a context long enough for a
// 4,000-token prompt.
func gapModel(t testing.TB) *model.Model {
	return mustSynth(t, model.Config{Dim: 128, HiddenDim: 384, NLayers: 4, NHeads: 4, NKVHeads: 4, VocabSize: 512,
		SeqLen: 4352, RopeTheta: 10000, NormEps: 1e-5}, 5)
}

// gapRun is what measureGap saw: the worst wait between two tokens of
// any of the decoding streams while the long prompt was prefilled, and
// the long prompt's time to its first token.
type gapRun struct {
	worst, ttft, steady time.Duration // steady: the median gap before the prompt came
}

// measureGap starts 8 decoding streams on the online loop, then submits
// a promptLen-token prompt and records, until the prompt's first token,
// the longest gap between consecutive tokens of any stream. The engine
// runs the chunk rule at STRIDE_CHUNK_STALL decode steps (Options.
// PrefillStall; unset or 0 = the token budget alone).
func measureGap(t *testing.T, m *model.Model, budget, promptLen int) gapRun {
	stall := 0.0
	if s := os.Getenv("STRIDE_CHUNK_STALL"); s != "" {
		var err error
		if stall, err = strconv.ParseFloat(s, 64); err != nil {
			t.Fatal(err)
		}
	}
	e := newEngine(t, m, Options{MaxBatchedTokens: budget, NumBlocks: 16 * 4352 / 16, PrefillStall: stall})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	stamps := make([][]time.Time, 8)
	var wg sync.WaitGroup
	started := make(chan struct{}, 8)
	for i := range 8 {
		r := Request{Prompt: []int{1, 10 + i}, Steps: 4000, Sampler: model.NewSampler(512, 1, 0, uint64(i+1)), IgnoreEOS: true}
		st, err := e.Submit(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for ev := range st.Events() {
				if ev.Prompt {
					continue
				}
				if n++; n == 3 {
					started <- struct{}{}
				}
				mu.Lock()
				stamps[i] = append(stamps[i], time.Now())
				mu.Unlock()
			}
		}()
	}
	for range 8 {
		<-started
	}
	prompt := []int{1}
	for i := 1; i < promptLen; i++ {
		prompt = append(prompt, 3+(i*31)%500)
	}
	t0 := time.Now()
	long, err := e.Submit(ctx, Request{Prompt: prompt, Steps: promptLen + 1, Sampler: model.NewSampler(512, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	for ev := range long.Events() {
		if !ev.Prompt {
			break
		}
	}
	t1 := time.Now()
	cancel()
	wg.Wait()
	var run gapRun
	run.ttft = t1.Sub(t0)
	var before []time.Duration
	for _, ts := range stamps {
		for j := 1; j < len(ts); j++ {
			if ts[j].After(t0) && !ts[j-1].After(t1) {
				run.worst = max(run.worst, ts[j].Sub(ts[j-1]))
			} else if !ts[j].After(t0) {
				before = append(before, ts[j].Sub(ts[j-1]))
			}
		}
	}
	if len(before) > 0 {
		slices.Sort(before)
		run.steady = before[len(before)/2]
	}
	return run
}

// measureAlone is the CPU time of a promptLen-token prompt's prefill
// (to its first token) by itself, where a budget's only price is its
// extra steps: a one-thread engine runs it with Run on this goroutine's
// locked OS thread, so the thread's CPU time is the work, however loaded
// the machine is (0 off Linux).
func measureAlone(t *testing.T, m *model.Model, budget, promptLen int) time.Duration {
	e, err := New(m, Options{MaxBatchedTokens: budget, NumBlocks: 4352 / 16, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	prompt := []int{1}
	for i := 1; i < promptLen; i++ {
		prompt = append(prompt, 3+(i*31)%500)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c0, _ := threadCPU()
	if _, _, err := e.Run(context.Background(), []Request{{Prompt: prompt, Steps: promptLen + 1, Sampler: model.NewSampler(512, 0, 0, 1)}}, Hooks{}); err != nil {
		t.Fatal(err)
	}
	c1, _ := threadCPU()
	return c1 - c0
}

// TestChunkedPrefillGap measures the worst inter-token gap of 8 decoding
// streams while a 4,000-token prompt arrives, unchunked and with several
// budgets, and the CPU time of that prompt's prefill alone at each
// budget, five times each in turn (medians) (docs/serving.md). It takes
// about half a minute: it runs only with STRIDE_CHUNK_GAP=1
// (STRIDE_CHUNK_BUDGETS=0,512,... to choose; STRIDE_CHUNK_STALL=k turns
// the chunk rule on for the online runs, measureGap).
// Chunking at the default budget must at least halve the worst gap.
func TestChunkedPrefillGap(t *testing.T) {
	if os.Getenv("STRIDE_CHUNK_GAP") != "1" {
		t.Skip("a timing measurement: set STRIDE_CHUNK_GAP=1")
	}
	budgets := []int{0, 64, 128, 256, 512, 1024}
	if s := os.Getenv("STRIDE_CHUNK_BUDGETS"); s != "" {
		budgets = budgets[:0]
		for _, f := range strings.Split(s, ",") {
			b, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			budgets = append(budgets, b)
		}
	}
	m := gapModel(t)
	const reps = 5
	worst, ttft, alone := map[int][]time.Duration{}, map[int][]time.Duration{}, map[int][]time.Duration{}
	var steady []time.Duration
	for range reps { // budgets in turn, so a drift of the machine's speed hits each alike
		for _, b := range budgets {
			r := measureGap(t, m, b, 4000)
			worst[b], ttft[b] = append(worst[b], r.worst), append(ttft[b], r.ttft)
			steady = append(steady, r.steady)
			alone[b] = append(alone[b], measureAlone(t, m, b, 4000))
		}
	}
	res := map[int]gapRun{}
	for _, b := range budgets {
		slices.Sort(worst[b])
		slices.Sort(ttft[b])
		slices.Sort(alone[b])
		res[b] = gapRun{worst: worst[b][reps/2], ttft: ttft[b][reps/2]}
		t.Logf("max_batched_tokens %5d: worst inter-token gap median %7.1f ms (min %7.1f, max %7.1f); long prompt TTFT median %7.1f ms; alone, one thread's CPU time: median %7.1f ms (min %7.1f)",
			b, ms(res[b].worst), ms(worst[b][0]), ms(worst[b][reps-1]), ms(res[b].ttft), ms(alone[b][reps/2]), ms(alone[b][0]))
	}
	slices.Sort(steady)
	t.Logf("decode step of the 8 streams alone: median %.1f ms", ms(steady[len(steady)/2]))
	if off, on := res[0], res[DefaultMaxBatchedTokens]; off.worst > 0 && on.worst > 0 && on.worst*2 > off.worst {
		t.Errorf("chunking at %d tokens: worst gap %v, unchunked %v; want at most half", DefaultMaxBatchedTokens, on.worst, off.worst)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
