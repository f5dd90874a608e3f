package engine

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/stride-lm/stride/model"
)

// Request is one sequence to generate, with run.c's semantics.
type Request struct {
	// Prompt holds the token ids fed first, starting with BOS (what
	// Tokenizer.Encode(text, true, false) returns; just [BOS] for no
	// prompt).
	Prompt []int
	// Steps is run.c's -n: the number of positions run, prompt included.
	// The result holds at most Steps ids.
	Steps int
	// Sampler picks each generated token; it is used by this request only.
	Sampler *model.Sampler
	// StopTokens, when not nil, are the ids that end the sequence
	// (FinishEOS, the id not included): a GGUF or Hugging Face model's
	// EOS/EOT ids and its BOS. The prompt then need not start with BOSID,
	// since such a vocabulary has its own BOS (or none). nil keeps run.c's
	// rule: the prompt starts with BOSID and generation stops at BOSID.
	StopTokens []int
	// Stop holds stop strings, matched by the engine on the generated
	// text as Options.Tokenizer decodes it (empty strings are ignored).
	// The first match ends the sequence with FinishStop; the text from
	// the match on is never emitted (Event.Text, Result.Text), though the
	// token that completed it is kept in Result.Tokens. Needs
	// Options.Tokenizer.
	Stop []string
	// IgnoreEOS keeps generating past StopTokens (or BOS): they are
	// sampled and kept as any other token, until Steps or a stop string.
	IgnoreEOS bool
	// Logprobs asks for each generated token's log-probability
	// (Event.Logprob, Result.Logprobs): the log-softmax of the raw
	// logits the sampler was given, before temperature, as vLLM and
	// OpenAI report it. TopLogprobs (0..MaxTopLogprobs) adds that many
	// most likely alternatives.
	Logprobs    bool
	TopLogprobs int
}

// MaxTopLogprobs is the most alternatives Request.TopLogprobs may ask
// for (OpenAI's limit).
const MaxTopLogprobs = 20

// stops reports whether id ends the request's sequence.
func (r *Request) stops(id int) bool {
	if r.IgnoreEOS {
		return false
	}
	if r.StopTokens == nil {
		return id == model.BOSID
	}
	return slices.Contains(r.StopTokens, id)
}

// Event is one token of one sequence, streamed while generating.
type Event struct {
	Seq   int // index of the request (Run), or the Stream's Seq (Submit)
	Pos   int // position of Prev; Token is fed at Pos+1
	Prev  int // the token before (for Tokenizer.Decode)
	Token int // the token
	// Prompt is true for the prompt's tokens, streamed when the sequence
	// is first admitted; false for generated ones.
	Prompt bool
	// Text is the text this token releases (with Options.Tokenizer; else
	// ""). For a prompt token it is the token's piece. For a generated
	// one it is held back while it could be the start of a stop string or
	// ends inside a UTF-8 character, so it may be "" and a later event
	// may carry several tokens' text: the Text of a sequence's generated
	// events, then Result.FlushText, concatenate to Result.Text.
	Text string
	// Logprob is the generated token's log-probability (nil unless
	// Request.Logprobs).
	Logprob *TokenLogprob
}

// TokenLogprob is a generated token's log-probability and its most
// likely alternatives, most likely first.
type TokenLogprob struct {
	Token   int
	Logprob float32
	Top     []TopLogprob
}

// TopLogprob is one alternative token and its log-probability.
type TopLogprob struct {
	Token   int
	Logprob float32
}

// Result is the outcome of one request.
type Result struct {
	// Tokens are the `next` ids of every step, as run.c would feed them:
	// the prompt's tokens after BOS, then the generated ones. Generation
	// stops at BOS (Request.StopTokens when set; not included) or after
	// Steps ids.
	Tokens []int
	// Err is set when the request was rejected (a prompt longer than
	// seq_len, or larger than the whole KV pool); other requests go on.
	Err error
	// CachedTokens counts prompt positions whose K/V came from a shared
	// prefix instead of being computed: blocks cached by an earlier run,
	// or computed in this run by another request with the same prefix.
	CachedTokens int
	// Preemptions counts how often the sequence was evicted to free
	// blocks and later recomputed.
	Preemptions int
	// FinishReason says why the sequence stopped.
	FinishReason FinishReason
	// DraftTokens counts the tokens speculation drafted for the sequence,
	// AcceptedTokens those of them the verifier kept, and VerifySteps the
	// steps that verified drafts (all 0 with speculation off).
	DraftTokens, AcceptedTokens, VerifySteps int
	// Text is the generated text (with Options.Tokenizer), cut before a
	// matched stop string. FlushText is its tail that no Event carried:
	// what was held back when the sequence ended other than by a stop
	// string.
	Text, FlushText string
	// Logprobs holds each generated token's log-probability, in order
	// (Request.Logprobs).
	Logprobs []TokenLogprob
	// GeneratedTokens counts the generated tokens streamed (Events with
	// Prompt false; a stop token that ended the sequence is not one).
	GeneratedTokens int
	// Timing is when the request arrived, was first scheduled, streamed
	// its first generated token and finished.
	Timing Timing
}

// FinishReason says why a sequence stopped generating. The values are the
// strings vLLM and llama.cpp's server report, so JSON consumers of either
// read ours unchanged.
type FinishReason string

// The reasons a sequence stops.
const (
	FinishLength      FinishReason = "length"      // Steps or the context used up
	FinishEOS         FinishReason = "eos"         // the model emitted its end token
	FinishStop        FinishReason = "stop"        // a stop string matched
	FinishInterrupted FinishReason = "interrupted" // the caller cancelled the run
	FinishError       FinishReason = "error"       // the request was rejected (Result.Err)
)

// Hooks receive a run's progress as it happens. Either may be nil.
type Hooks struct {
	// Token receives every token as soon as it is known (prompt tokens
	// when the sequence is admitted, generated ones step by step).
	Token func(Event)
	// Finish receives each sequence's final Result the moment it retires
	// (finished, rejected or interrupted), in completion order. It is
	// called exactly once per request.
	Finish func(seq int, r Result)
}

// Stats summarizes a Run.
type Stats struct {
	Steps         int           // forward passes (scheduler steps)
	PrefillTokens int           // tokens processed in prefill rows
	DecodeTokens  int           // tokens processed in decode rows
	PrefillTime   time.Duration // time of steps that held prefill rows
	DecodeTime    time.Duration // time of pure decode steps
	MaxBatch      int           // most sequences in one step
	Preemptions   int
	// Speculation: drafted and accepted tokens, and sequence-steps that
	// verified drafts (each also counted in DecodeTokens, 1+drafts rows).
	DraftTokens, AcceptedTokens, VerifySteps int
}

// ErrContextLength is what the error of a request that does not fit the
// model's context (prompt or Steps beyond seq_len) matches with
// errors.Is: a server answers it as OpenAI's context_length_exceeded.
var ErrContextLength = errors.New("engine: request longer than the context")

// contextError is a request's error that matches ErrContextLength.
type contextError string

func (e contextError) Error() string        { return string(e) }
func (e contextError) Is(target error) bool { return target == ErrContextLength }

// validate returns why request i cannot run on an engine for config c
// whose cache holds at most what fits reports, or nil.
func validate(i int, r Request, c model.Config, fits func(n int) error) error {
	if err := checkRequest(r, c, fits); err != nil {
		return fmt.Errorf("request %d: %w", i, err)
	}
	return nil
}

// checkRequest returns why r cannot run on an engine for config c whose
// cache holds at most what fits reports, or nil.
func checkRequest(r Request, c model.Config, fits func(n int) error) error {
	switch {
	case len(r.Prompt) == 0:
		return errors.New("empty prompt")
	case r.StopTokens == nil && r.Prompt[0] != model.BOSID:
		return fmt.Errorf("prompt must start with BOS (%d)", model.BOSID)
	case r.Sampler == nil:
		return errors.New("no sampler")
	case r.TopLogprobs < 0 || r.TopLogprobs > MaxTopLogprobs:
		return fmt.Errorf("top_logprobs must be 0..%d (got %d)", MaxTopLogprobs, r.TopLogprobs)
	case r.Steps < 1:
		return fmt.Errorf("steps must be >= 1 (got %d)", r.Steps)
	case len(r.Prompt) > c.SeqLen:
		return contextError(fmt.Sprintf("prompt of %d tokens is longer than seq_len %d", len(r.Prompt), c.SeqLen))
	case r.Steps > c.SeqLen:
		return contextError(fmt.Sprintf("steps %d exceed seq_len %d", r.Steps, c.SeqLen))
	}
	if err := fits(r.Steps); err != nil {
		return err
	}
	for _, tok := range r.Prompt {
		if tok < 0 || tok >= c.VocabSize {
			return fmt.Errorf("token %d is outside the vocabulary (size %d)", tok, c.VocabSize)
		}
	}
	return nil
}
