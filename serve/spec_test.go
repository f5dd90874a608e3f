package serve

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stride-lm/stride/model/engine"
)

// specRequests are greedy requests long enough for the n-gram proposer
// to find repeats: stories260K's greedy text starts to loop after a
// hundred or so tokens, and the last prompt repeats itself, so prompt
// lookup drafts from its first decode step. (Short generations, such as
// the conformance test's 12 tokens, draft little and accept nothing: the
// proposer needs an n-gram that already occurred.)
var specRequests = []struct {
	path, body   string
	stream, chat bool
}{
	{"/v1/completions", `{"prompt":[1],"max_tokens":256,"temperature":0,"logprobs":2}`, false, false},
	{"/v1/completions", `{"prompt":"The cat","max_tokens":128,"temperature":0}`, false, false},
	{"/v1/chat/completions", `{"messages":[{"role":"user","content":"Tell me a story"}],"max_tokens":200,"temperature":0,"logprobs":true,"top_logprobs":1}`, false, true},
	{"/v1/completions", `{"prompt":"Tom had a red ball. Tom had a red ball. Tom had a red ball. Tom had","max_tokens":64,"temperature":0,"logprobs":0}`, false, false},
	// A stop string late in the story, where drafts are accepted: the
	// text ends before it, however many tokens the step accepted.
	{"/v1/completions", `{"prompt":[1],"max_tokens":256,"temperature":0,"stop":["help you"]}`, false, false},
}

// specMetric reads a stride_spec_* counter from a /metrics body.
func specMetric(t *testing.T, body []byte, name string) int {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + `\{model_name="m"\} (\S+)$`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("/metrics has no %s", name)
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return int(v)
}

// TestSpeculativeServing: with --speculate ngram, greedy answers, whole
// and streamed, are byte for byte (text, logprobs, finish reasons) the
// answers of a server without speculation, while drafts were accepted
// (stride_spec_accepted_tokens_total > 0). A stream with logprobs has a
// chunk for every token, accepted drafts included.
func TestSpeculativeServing(t *testing.T) {
	off, _ := engineBackendWith(t, engine.Options{MaxBatchedTokens: engine.DefaultMaxBatchedTokens, Threads: 1})
	on, e := engineBackendWith(t, engine.Options{MaxBatchedTokens: engine.DefaultMaxBatchedTokens, Threads: 1,
		Speculation: engine.Speculation{Method: "ngram"}})
	_, tsOff := startServer(t, off, Config{ModelName: "m"}, nil)
	_, tsOn := startServer(t, on, Config{ModelName: "m"}, nil)
	for i, r := range specRequests {
		want := parseOutcome(t, post(t, tsOff.URL+r.path, r.body).body, false, r.chat)
		before := e.Stats().AcceptedTokens
		whole := parseOutcome(t, post(t, tsOn.URL+r.path, r.body).body, false, r.chat)
		streamed := post(t, tsOn.URL+r.path, r.body[:len(r.body)-1]+`,"stream":true}`)
		got := parseOutcome(t, streamed.body, true, r.chat)
		if d := firstDiff(fmt.Sprint(whole), fmt.Sprint(want)); d != "" {
			t.Errorf("request %d %s, speculating vs without: %s", i, r.body, d)
		}
		if d := firstDiff(fmt.Sprint(got), fmt.Sprint(want)); d != "" {
			t.Errorf("request %d %s, speculating streamed vs without: %s", i, r.body, d)
		}
		t.Logf("request %d: %d drafts accepted (whole and streamed)", i, e.Stats().AcceptedTokens-before)
		if strings.Contains(r.body, `"stop"`) && (got.Finish[0] != "stop" || strings.Contains(got.Text[0], "help you")) {
			t.Errorf("request %d: finish %s, text %q: the stop string was not hit, or leaked", i, got.Finish[0], got.Text[0])
		}
		if i == 0 {
			// Logprobs on: one chunk per generated token (256, as
			// max_tokens ignores none here unless EOS came first).
			chunks := bytes.Count(streamed.body, []byte(`"token_logprobs"`))
			if n := bytes.Count([]byte(want.Logprobs[0]), []byte(";")); chunks != n {
				t.Errorf("streamed %d logprob chunks for %d tokens", chunks, n)
			}
		}
	}
	mOn, mOff := do(t, "GET", tsOn.URL+"/metrics", "").body, do(t, "GET", tsOff.URL+"/metrics", "").body
	drafted, accepted := specMetric(t, mOn, "stride_spec_draft_tokens_total"), specMetric(t, mOn, "stride_spec_accepted_tokens_total")
	if accepted <= 0 || accepted > drafted {
		t.Errorf("speculating server: %d drafted, %d accepted; want some accepted", drafted, accepted)
	}
	if st := e.Stats(); st.AcceptedTokens != accepted || st.DraftTokens != drafted {
		t.Errorf("/metrics says %d/%d, the engine %d/%d", accepted, drafted, st.AcceptedTokens, st.DraftTokens)
	}
	if d := specMetric(t, mOff, "stride_spec_draft_tokens_total"); d != 0 {
		t.Errorf("server without speculation drafted %d tokens", d)
	}
}

// TestSpeculativeSampledServing: sampled requests with a seed, speculating,
// give the bytes a server without speculation gives, whole, streamed and
// again (docs/speculative.md §2: a verify row samples its token as a
// decode row would, with the same coin, and accepts the draft when they
// agree), while drafts are accepted and rejected.
func TestSpeculativeSampledServing(t *testing.T) {
	on, e := engineBackendWith(t, engine.Options{MaxBatchedTokens: engine.DefaultMaxBatchedTokens, Threads: 1,
		Speculation: engine.Speculation{Method: "ngram", DraftCost: 0.05}})
	off, _ := engineBackendWith(t, engine.Options{MaxBatchedTokens: engine.DefaultMaxBatchedTokens, Threads: 1})
	_, ts := startServer(t, on, Config{ModelName: "m"}, nil)
	_, plain := startServer(t, off, Config{ModelName: "m"}, nil)
	body := `{"prompt":"Tom had a red ball. Tom had a red ball. Tom had","max_tokens":96,"temperature":0.5,"seed":7,"n":2,"logprobs":1`
	want := parseOutcome(t, post(t, plain.URL+"/v1/completions", body+`}`).body, false, false)
	for range 2 {
		if d := firstDiff(fmt.Sprint(parseOutcome(t, post(t, ts.URL+"/v1/completions", body+`,"stream":true}`).body, true, false)), fmt.Sprint(want)); d != "" {
			t.Fatalf("streamed with speculation vs without: %s", d)
		}
		if d := firstDiff(fmt.Sprint(parseOutcome(t, post(t, ts.URL+"/v1/completions", body+`}`).body, false, false)), fmt.Sprint(want)); d != "" {
			t.Fatalf("whole with speculation vs without: %s", d)
		}
	}
	if st := e.Stats(); st.AcceptedTokens == 0 || st.AcceptedTokens == st.DraftTokens {
		t.Errorf("sampled requests accepted %d of %d drafts: both outcomes must occur", st.AcceptedTokens, st.DraftTokens)
	}
}

// firstDiff shows where a and b first differ, or is "" when they do not.
func firstDiff(a, b string) string {
	if a == b {
		return ""
	}
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from := max(i-80, 0)
	return fmt.Sprintf("at byte %d: ...%q vs ...%q", i, a[from:min(i+80, len(a))], b[from:min(i+80, len(b))])
}
