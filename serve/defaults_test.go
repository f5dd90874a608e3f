package serve

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/stride-lm/stride/model"
)

// recording is a fakeBackend that keeps the Sampling of every Submit.
type recording struct {
	*fakeBackend
	mu  sync.Mutex
	got []Sampling
}

func (r *recording) Submit(ctx context.Context, g Generation) (Stream, error) {
	r.mu.Lock()
	r.got = append(r.got, g.Sampling)
	r.mu.Unlock()
	return r.fakeBackend.Submit(ctx, g)
}

// The checkpoint's sampling defaults (Config.SamplingDefaults) fill the
// fields a request omits, on both routes; the fields it sets win, and
// without defaults a request gets OpenAI's (temperature 1, top_p 1).
func TestSamplingDefaultsFillOmittedFields(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	k := 20
	d := model.SamplingDefaults{Temperature: f(0.7), TopP: f(0.8), TopK: &k, RepetitionPenalty: f(1.05)}
	for _, c := range []struct {
		name     string
		defaults model.SamplingDefaults
		url      string
		body     string
		want     Sampling
	}{
		{"completion, all omitted", d, "/v1/completions", `{"prompt":"hi","max_tokens":2}`,
			Sampling{Temperature: 0.7, TopP: 0.8, TopK: 20, RepetitionPenalty: 1.05}},
		{"chat, some set", d, "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":2,"temperature":0,"top_k":-1,"min_p":0.1}`,
			Sampling{Temperature: 0, TopP: 0.8, TopK: 0, MinP: 0.1, RepetitionPenalty: 1.05}},
		{"no defaults", model.SamplingDefaults{}, "/v1/completions", `{"prompt":"hi","max_tokens":2}`,
			Sampling{Temperature: 1, TopP: 1}},
	} {
		b := &recording{fakeBackend: newFake(4)}
		_, ts := startServer(t, b, Config{SamplingDefaults: c.defaults}, nil)
		if r := post(t, ts.URL+c.url, c.body); r.status != http.StatusOK {
			t.Fatalf("%s: status %d: %s", c.name, r.status, r.body)
		}
		b.mu.Lock()
		subs := append([]Sampling(nil), b.got...)
		b.mu.Unlock()
		if len(subs) != 1 {
			t.Fatalf("%s: %d submits", c.name, len(subs))
		}
		got := subs[0]
		got.Seed, got.Seeded = 0, false
		if got != c.want {
			t.Errorf("%s: sampling %+v, want %+v", c.name, got, c.want)
		}
	}
}
