package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
)

// Prompt is one request of a dataset.
type Prompt struct {
	// Index is its place in the dataset.
	Index int
	// Text is the prompt (a completion's prompt, a chat's user message).
	Text string
	// Len is its length in tokens as the dataset's counter counted it
	// (0 when unknown, as for a file's prompts).
	Len int
	// OutputLen is the max_tokens it asks for.
	OutputLen int
}

// Counter counts a prompt's tokens, special tokens (BOS) included, as
// the server will: a local tokenizer, or the server's /tokenize
// (Target.Count).
type Counter func(ctx context.Context, text string) (int, error)

// Random describes a random dataset, vLLM's: N prompts whose input and
// output lengths are drawn uniformly from [len·(1−RangeRatio),
// len·(1+RangeRatio)] (at least 1).
type Random struct {
	N                   int
	InputLen, OutputLen int
	RangeRatio          float64
}

// words are what random prompts are made of: common words of the
// TinyStories the small test models learned, so that every tokenizer
// splits them into few tokens.
var words = strings.Fields(`the a little girl boy dog cat sun tree happy big play park ball mom dad
friend went saw said day time very good one was had with they she he his her it to and of in
on for that but so then bird fish water red blue green house car book toy cake run jump look
smile sad kind nice small tall long fast slow home garden flower sky rain snow hat box door`)

// RandomPrompts draws the dataset r describes with rng: random words cut
// and padded to each drawn input length as count counts it, so prompts
// are token-exact. It returns the prompts and how many of them could not
// be made exact (their Len says what they are).
func RandomPrompts(ctx context.Context, r Random, rng *rand.Rand, count Counter) ([]Prompt, int, error) {
	if r.N < 1 || r.InputLen < 1 || r.OutputLen < 1 || r.RangeRatio < 0 || r.RangeRatio >= 1 {
		return nil, 0, fmt.Errorf("random dataset: want N, input and output lengths ≥ 1 and a range ratio in [0, 1), got %+v", r)
	}
	out := make([]Prompt, r.N)
	inexact := 0
	for i := range out {
		in, outLen := drawLen(rng, r.InputLen, r.RangeRatio), drawLen(rng, r.OutputLen, r.RangeRatio)
		text, n, err := exactPrompt(ctx, in, rng, count)
		if err != nil {
			return nil, 0, err
		}
		if n != in {
			inexact++
		}
		out[i] = Prompt{Index: i, Text: text, Len: n, OutputLen: outLen}
	}
	return out, inexact, nil
}

// drawLen draws a length uniformly from [n·(1−ratio), n·(1+ratio)], at
// least 1 (vLLM's int() bounds, inclusive).
func drawLen(rng *rand.Rand, n int, ratio float64) int {
	lo, hi := int(float64(n)*(1-ratio)), int(float64(n)*(1+ratio))
	lo = max(lo, 1)
	hi = max(hi, lo)
	return lo + rng.IntN(hi-lo+1)
}

// fillers are appended one at a time to reach the exact length after
// the longest run of whole words that fits.
var fillers = []string{"a", "I", "x", "."}

// exactPrompt makes a prompt of target tokens: the longest prefix of a
// random word sequence that fits (binary search on count), then single
// filler words while one fits. It returns the text and its count.
func exactPrompt(ctx context.Context, target int, rng *rand.Rand, count Counter) (string, int, error) {
	seq := make([]string, target)
	for i := range seq {
		seq[i] = words[rng.IntN(len(words))]
	}
	cnt := func(s string) (int, error) {
		n, err := count(ctx, s)
		if err != nil {
			return 0, fmt.Errorf("counting a prompt's tokens: %w", err)
		}
		return n, nil
	}
	// Largest k with count(seq[:k]) ≤ target; count("") is the BOS alone.
	base, err := cnt("")
	if err != nil {
		return "", 0, err
	}
	if base > target {
		return "", 0, fmt.Errorf("an input length of %d tokens is shorter than an empty prompt (%d tokens)", target, base)
	}
	lo, hi, have := 0, len(seq), base
	for lo < hi {
		mid := (lo + hi + 1) / 2
		n, err := cnt(strings.Join(seq[:mid], " "))
		if err != nil {
			return "", 0, err
		}
		if n <= target {
			lo, have = mid, n
		} else {
			hi = mid - 1
		}
	}
	text := strings.Join(seq[:lo], " ")
	for have < target {
		grown := false
		for _, f := range fillers {
			next := f
			if text != "" {
				next = text + " " + f
			}
			n, err := cnt(next)
			if err != nil {
				return "", 0, err
			}
			if n > have && n <= target {
				text, have, grown = next, n, true
				break
			}
		}
		if !grown {
			break
		}
	}
	return text, have, nil
}

// maxFileLine bounds one line of a prompts file.
const maxFileLine = 16 << 20

// ParseJSONL reads a dataset file: one JSON object per line with a
// "prompt" string and an optional "output_len" (else outputLen); blank
// lines are skipped. An error names the line.
func ParseJSONL(r io.Reader, outputLen int) ([]Prompt, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxFileLine)
	var out []Prompt
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var rec struct {
			Prompt    *string `json:"prompt"`
			OutputLen *int    `json:"output_len"`
		}
		if err := json.Unmarshal(b, &rec); err != nil {
			return nil, fmt.Errorf("line %d: not a JSON object with a prompt: %v", line, err)
		}
		if rec.Prompt == nil {
			return nil, fmt.Errorf("line %d: no \"prompt\" string", line)
		}
		n := outputLen
		if rec.OutputLen != nil {
			if *rec.OutputLen < 1 {
				return nil, fmt.Errorf("line %d: output_len %d is not ≥ 1", line, *rec.OutputLen)
			}
			n = *rec.OutputLen
		}
		out = append(out, Prompt{Index: len(out), Text: *rec.Prompt, OutputLen: n})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading prompts: %v", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no prompts in the file")
	}
	return out, nil
}

// Take returns n prompts from ps, cycling through them in order when the
// file has fewer, each with its own Index.
func Take(ps []Prompt, n int) []Prompt {
	out := make([]Prompt, n)
	for i := range out {
		out[i] = ps[i%len(ps)]
		out[i].Index = i
	}
	return out
}
