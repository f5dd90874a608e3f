package serve

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/stride-lm/stride/model/engine"
)

// cancelMix is a seeded request of the cancellation test: a short or a
// long prompt (the long one takes several prefill chunks of 16 tokens),
// streamed or not, cut after a random delay (0: before it is sent) or,
// one in four, answered whole.
func cancelMix(rng *rand.Rand) (path, body string, cut time.Duration) {
	prompt := "Once upon a time"
	if rng.IntN(2) == 0 {
		prompt = strings.Repeat("Lily and Ben went to the park. ", 8+rng.IntN(8))
	}
	fields := fmt.Sprintf(`"max_tokens":%d,"stream":%v,"n":%d,"temperature":0.8,"seed":%d`,
		4+rng.IntN(20), rng.IntN(2) == 0, 1+rng.IntN(2), rng.IntN(1000))
	path, body = "/v1/completions", fmt.Sprintf(`{"prompt":%q,%s}`, prompt, fields)
	if rng.IntN(3) == 0 {
		path, body = "/v1/chat/completions", fmt.Sprintf(`{"messages":[{"role":"user","content":%q}],%s}`, prompt, fields)
	}
	if rng.IntN(4) == 0 {
		return path, body, time.Minute // answered
	}
	return path, body, time.Duration(rng.IntN(40000)) * time.Microsecond
}

// verifyNoLeaks registers, first, a cleanup that runs after every other
// (the engine's close, the server's) and fails the test when a goroutine
// started since remains.
func verifyNoLeaks(t *testing.T) {
	t.Helper()
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) })
}

// TestRandomCancelsFreeEverything: requests cut at random moments (before
// sending, while queued behind a batch of 4, in the middle of a chunked
// prefill, mid-stream) leave nothing behind: afterwards nothing runs or
// waits, every KV block is free, and no goroutine outlives the test
// (goleak). 1,000 requests, about 3 s under -race.
func TestRandomCancelsFreeEverything(t *testing.T) {
	verifyNoLeaks(t)
	const total = 1000
	b, _ := engineBackendWith(t, engine.Options{MaxBatchedTokens: 16, MaxBatch: 4, Threads: 2})
	_, ts := startServer(t, b, Config{ModelName: "m"}, nil)
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var next, cutBefore, cutMid, answered atomic.Int64
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 99))
			for next.Add(1) <= int64(total) {
				path, body, cut := cancelMix(rng)
				ctx, cancel := context.WithTimeout(context.Background(), cut)
				req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+path, strings.NewReader(body))
				res, err := client.Do(req)
				switch {
				case err != nil:
					cutBefore.Add(1) // before the answer began: queued or prefilling
				case res.StatusCode != 200:
					t.Errorf("%s: status %d", body, res.StatusCode)
				default:
					if _, err := io.Copy(io.Discard, res.Body); err != nil {
						cutMid.Add(1) // mid-answer: a stream, or a whole answer being written
					} else {
						answered.Add(1)
					}
				}
				if res != nil {
					res.Body.Close()
				}
				cancel()
			}
		}()
	}
	wg.Wait()
	t.Logf("%d requests: %d cut before their answer, %d during it, %d answered", total, cutBefore.Load(), cutMid.Load(), answered.Load())
	if cutBefore.Load() < int64(total)/10 || cutMid.Load() == 0 || answered.Load() < int64(total)/10 {
		t.Errorf("the mix missed a case: %d cut before, %d during, %d answered", cutBefore.Load(), cutMid.Load(), answered.Load())
	}
	waitFor(t, func() bool {
		st := b.Stats()
		return st.Running == 0 && st.Waiting == 0 && st.BlocksFree == st.BlocksTotal
	})
}
