package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stride-lm/stride/tensor/testfixture"
)

// `infer serve --speculate ngram`: stories260K's greedy 256 tokens from
// BOS, whole and streamed, are exactly run.c's golden ids (what the
// server without speculation gives, TestServeOpenAIClient/golden), and
// /metrics shows that the speculating engine accepted drafts on the way.
// (The story starts to loop after about a hundred tokens; from then on
// the n-gram proposer's drafts are accepted.)
func TestServeSpeculate(t *testing.T) {
	want := testfixture.ReadIDs(t, filepath.Join(testfixture.Dir(t), "models", "golden", "stories260K.greedy.ids"))
	_, base := startServe(t, "--speculate", "ngram", "--draft", "4")
	body := `{"prompt":[1],"max_tokens":256,"temperature":0,"logprobs":0,"return_tokens_as_token_ids":true`
	whole := postIDs(t, base, body+`}`, false)
	streamed := postIDs(t, base, body+`,"stream":true}`, true)
	if fmt.Sprint(whole) != fmt.Sprint(want) || fmt.Sprint(streamed) != fmt.Sprint(want) {
		t.Errorf("speculating:\nwhole    %v\nstreamed %v\nwant run.c's %v", whole, streamed, want)
	}
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	metrics, _ := io.ReadAll(res.Body)
	m := regexp.MustCompile(`(?m)^stride_spec_accepted_tokens_total\{[^}]*\} (\S+)$`).FindSubmatch(metrics)
	if m == nil {
		t.Fatalf("/metrics has no stride_spec_accepted_tokens_total:\n%s", metrics)
	}
	if n, _ := strconv.ParseFloat(string(m[1]), 64); n <= 0 {
		t.Errorf("stride_spec_accepted_tokens_total = %s after two 256-token greedy stories; want > 0", m[1])
	}
}

// postIDs posts a completion whose logprobs name tokens by id and
// returns the ids, read from the whole answer or from the stream's chunks.
func postIDs(t *testing.T, base, body string, stream bool) []int {
	t.Helper()
	res, err := http.Post(base+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("status %d: %s", res.StatusCode, b)
	}
	var ids []int
	add := func(payload []byte) {
		var c struct {
			Choices []struct {
				Logprobs *struct{ Tokens []string } `json:"logprobs"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(payload, &c); err != nil {
			t.Fatalf("%v: %s", err, payload)
		}
		for _, ch := range c.Choices {
			if ch.Logprobs == nil {
				continue
			}
			for _, tok := range ch.Logprobs.Tokens {
				id, err := strconv.Atoi(strings.TrimPrefix(tok, "token_id:"))
				if err != nil {
					t.Fatalf("token %q is not token_id:<id>", tok)
				}
				ids = append(ids, id)
			}
		}
	}
	if !stream {
		b, _ := io.ReadAll(res.Body)
		add(b)
		return ids
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && data != "[DONE]" {
			add([]byte(data))
		}
	}
	return ids
}
