package main

import (
	"fmt"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/engine"
	"github.com/stride-lm/stride/model/tokenizer"
)

// seqTrack is what generate keeps of one sequence's prompt; the engine
// times the sequence and counts its tokens (engine.Result's Timing and
// GeneratedTokens).
type seqTrack struct {
	promptLen int // ids, BOS included
	// lead is the prompt's first id when it is a text token, not BOS (a
	// tokenizer that adds none, such as Qwen's): the engine feeds it
	// first and reports only the ids after it, as run.c does with BOS,
	// so generate prints it itself.
	lead []int
}

// seqTiming is the per-sequence statistics of --output json (llama.cpp
// server's and vLLM's names for them).
type seqTiming struct {
	// PromptTokens counts the prompt's ids, BOS included.
	PromptTokens int `json:"prompt_tokens"`
	// GeneratedTokens counts the sampled tokens (the end token excluded).
	GeneratedTokens int `json:"generated_tokens"`
	// TTFTMillis is the time from the start of the run to this
	// sequence's first generated token (queueing and prefill included).
	TTFTMillis float64 `json:"ttft_ms"`
	// TokensPerSecond is run.c's measure: the generated tokens after the
	// first, over the time since the first (0 with fewer than two).
	TokensPerSecond float64 `json:"tokens_per_second"`
}

// track prepares prompt i's statistics; the engine matches its stop
// strings (Request.Stop).
func (g *generation) track(i int, r *engine.Request) {
	t := &g.seqs[i]
	t.promptLen = len(r.Prompt)
	if !g.lm.addBOS() && len(r.Prompt) > 0 {
		t.lead = r.Prompt[:1]
	}
}

// timing is prompt i's statistics once it finished with r: the engine's
// timing, its TTFT counted from the start of the run.
func (g *generation) timing(i int, r engine.Result) seqTiming {
	st := seqTiming{PromptTokens: g.seqs[i].promptLen, GeneratedTokens: r.GeneratedTokens,
		TokensPerSecond: r.TokensPerSecond()}
	if r.GeneratedTokens > 0 {
		st.TTFTMillis = float64(r.Timing.FirstToken.Sub(g.start).Microseconds()) / 1000
	}
	return st
}

// text is prompt i's output text: run.c's decoding of its prompt, then
// the engine's generated text (cut before a matched stop string).
func (g *generation) text(i int, r engine.Result) string {
	n := min(len(r.Tokens), max(0, g.seqs[i].promptLen-1))
	ids := append(append([]int(nil), g.seqs[i].lead...), r.Tokens[:n]...)
	return tokenizer.PrintableText(g.lm.codec, model.BOSID, ids) + r.Text
}

// shown is prompt i's ids as generate prints them: the engine's result
// (the ids after the first fed token), after the prompt's first id when
// that is a text token rather than BOS.
func (g *generation) shown(i int, tokens []int) []int {
	if lead := g.seqs[i].lead; lead != nil {
		return append(append([]int(nil), lead...), tokens...)
	}
	return tokens
}

// printSeq prints one finished sequence of several in text mode, under a
// header naming it (the order is completion order).
func (g *generation) printSeq(i int, r engine.Result) {
	var err error
	if len(g.res) > 1 {
		_, err = fmt.Fprintf(g.out, "=== sequence %d ===\n%s\n", i, g.text(i, r))
	} else {
		_, err = fmt.Fprintln(g.out, g.text(i, r))
	}
	if err != nil && g.cancel != nil {
		g.cancel()
	}
}
