package serve

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stride-lm/stride/model/engine"
)

var soakFor = flag.Duration("soak", 0, "run TestSoak for this long (go test ./serve -run TestSoak -args -soak=5m); 0 = the CI scale of 400 requests")

// soakRequest is one request of the soak's pool; status is the answer
// it must get when nothing cuts it (400 for the deliberately bad ones).
type soakRequest struct {
	path, body   string
	stream, chat bool
	status       int
}

// soakPool is a seeded mix: chat and completion, streamed and not,
// n = 1..3, short and long prompts, greedy and seeded sampling, and one
// in 16 asking for more than the context (a 400).
func soakPool(size int) []soakRequest {
	rng := rand.New(rand.NewPCG(30, 5))
	short := []string{"Once upon a time", "The cat", "One day, a little bird"}
	var out []soakRequest
	for i := range size {
		r := soakRequest{chat: rng.IntN(3) == 0, stream: rng.IntN(2) == 0, status: 200}
		p := short[rng.IntN(len(short))]
		if rng.IntN(3) == 0 {
			p = strings.Repeat("Lily and Ben went to the park. ", 4+rng.IntN(10))
		}
		maxTokens := 4 + rng.IntN(40)
		if rng.IntN(16) == 0 {
			maxTokens, r.status = 100000, 400
		}
		fields := fmt.Sprintf(`"max_tokens":%d,"n":%d,"stream":%v`, maxTokens, 1+rng.IntN(3), r.stream)
		if rng.IntN(2) == 0 {
			fields += `,"temperature":0`
		} else {
			fields += fmt.Sprintf(`,"temperature":0.9,"top_p":0.9,"seed":%d`, i)
		}
		if rng.IntN(3) == 0 {
			fields += `,"logprobs":true,"top_logprobs":2`
			if !r.chat {
				fields = strings.Replace(fields, `"logprobs":true,"top_logprobs":2`, `"logprobs":2`, 1)
			}
		}
		r.path, r.body = "/v1/completions", fmt.Sprintf(`{"prompt":%q,%s}`, p, fields)
		if r.chat {
			r.path, r.body = "/v1/chat/completions", fmt.Sprintf(`{"messages":[{"role":"user","content":%q}],%s}`, p, fields)
		}
		out = append(out, r)
	}
	return out
}

// soakSend posts r; a cut request gives up after cut, a slow reader
// reads its answer 64 bytes at a time with pauses. complete is false when
// the cut came first.
func soakSend(c *http.Client, url string, r soakRequest, cut time.Duration, slow bool) (status int, body []byte, complete bool) {
	ctx, cancel := context.WithTimeout(context.Background(), cut)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", url+r.path, strings.NewReader(r.body))
	res, err := c.Do(req)
	if err != nil {
		return 0, nil, false
	}
	defer res.Body.Close()
	var buf bytes.Buffer
	chunk := make([]byte, 64)
	for {
		n, err := res.Body.Read(chunk)
		buf.Write(chunk[:n])
		if err == io.EOF {
			return res.StatusCode, buf.Bytes(), true
		}
		if err != nil {
			return res.StatusCode, nil, false
		}
		if slow {
			time.Sleep(time.Millisecond)
		}
	}
}

// rssBytes is the process's resident set after a collection returned
// what it could to the OS (0 where /proc is missing).
func rssBytes() int64 {
	runtime.GC()
	debug.FreeOSMemory()
	raw, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(raw))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// TestSoak runs 16 clients over the seeded pool, some cutting their
// request at a random moment and some reading slowly, against a server
// whose queue is small enough to refuse some (503). Then: every status
// is 200 or an intended 400 or 503; every complete answer equals the
// same request's answer alone on the idle server; every KV block is free;
// no goroutine is left; and the resident set did not grow over the
// second half beyond 16 MiB (nor 64 MiB over the warm-up value, without
// -race, whose shadow memory grows by itself). At CI
// scale 400 requests; -soak=D runs for D.
func TestSoak(t *testing.T) {
	verifyNoLeaks(t)
	b, _ := engineBackendWith(t, engine.Options{MaxBatchedTokens: 32, PrefillStall: engine.DefaultPrefillStall, MaxBatch: 8, Threads: 2})
	_, ts := startServer(t, b, Config{ModelName: "m", MaxQueue: 32}, nil)
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	pool := soakPool(64)
	alone := make([]outcome, len(pool))
	for i, r := range pool {
		status, body, _ := soakSend(client, ts.URL, r, time.Minute, false)
		if status != r.status {
			t.Fatalf("pool %d alone: %d %s", i, status, body)
		}
		if status == 200 {
			alone[i] = parseOutcome(t, body, r.stream, r.chat)
		}
	}
	rssWarm := rssBytes()
	total, deadline := 400, time.Time{}
	if *soakFor > 0 {
		total, deadline = 1<<31-1, time.Now().Add(*soakFor)
	}
	var (
		next                      atomic.Int64
		counts                    sync.Map // status → *atomic.Int64
		sent, cut, slow, compared atomic.Int64
		rssMid                    atomic.Int64
		half                      sync.Once
		start                     = time.Now()
	)
	count := func(status int) {
		v, _ := counts.LoadOrStore(status, new(atomic.Int64))
		v.(*atomic.Int64).Add(1)
	}
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 77))
			for {
				i := next.Add(1)
				if i > int64(total) || (!deadline.IsZero() && time.Now().After(deadline)) {
					return
				}
				if (deadline.IsZero() && i == int64(total/2)) || (!deadline.IsZero() && time.Since(start) > *soakFor/2) {
					half.Do(func() { rssMid.Store(rssBytes()) })
				}
				sent.Add(1)
				k := rng.IntN(len(pool))
				r := pool[k]
				wait, isSlow := time.Minute, rng.IntN(8) == 0
				if rng.IntN(6) == 0 {
					wait = time.Duration(1+rng.IntN(30)) * time.Millisecond
					cut.Add(1)
				}
				if isSlow {
					slow.Add(1)
				}
				status, body, complete := soakSend(client, ts.URL, r, wait, isSlow)
				if !complete {
					continue
				}
				count(status)
				switch {
				case status == 503:
				case status != r.status:
					t.Errorf("pool %d: status %d, want %d: %s", k, status, r.status, body)
				case status == 200:
					compared.Add(1)
					if got := parseOutcome(t, body, r.stream, r.chat); fmt.Sprint(got) != fmt.Sprint(alone[k]) {
						t.Errorf("pool %d %s under load:\n%+v\nalone:\n%+v", k, r.body, got, alone[k])
					}
				}
			}
		}()
	}
	wg.Wait()
	waitFor(t, func() bool {
		st := b.Stats()
		return st.Running == 0 && st.Waiting == 0 && st.BlocksFree == st.BlocksTotal
	})
	rssEnd := rssBytes()
	var summary []string
	counts.Range(func(k, v any) bool {
		summary = append(summary, fmt.Sprintf("%v: %d", k, v.(*atomic.Int64).Load()))
		return true
	})
	t.Logf("%d requests in %v (%d cut, %d slow readers); statuses %v; %d answers equal their alone run; RSS warm %d MiB, half %d MiB, end %d MiB",
		sent.Load(), time.Since(start).Round(time.Second), cut.Load(), slow.Load(), summary, compared.Load(), rssWarm>>20, rssMid.Load()>>20, rssEnd>>20)
	if compared.Load() < int64(min(total, 100))/2 {
		t.Errorf("only %d answers were compared", compared.Load())
	}
	if rssWarm > 0 && (rssEnd > rssMid.Load()+16<<20 || (!raceEnabled && rssEnd > rssWarm+64<<20)) {
		t.Errorf("resident set grew: warm %d, half %d, end %d bytes", rssWarm, rssMid.Load(), rssEnd)
	}
}
