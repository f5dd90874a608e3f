package serve

import (
	"context"
	"time"
)

// Backend is what the server needs of an inference engine. The server
// speaks HTTP and OpenAI's JSON; the Backend tokenizes, schedules and
// generates. NewEngineBackend adapts Stride's engine; tests use a fake.
//
// Every method must be safe for concurrent use: each HTTP request runs
// on its own goroutine.
type Backend interface {
	// MaxModelLen is the context: prompt plus generated tokens.
	MaxModelLen() int
	// VocabSize bounds the token ids a request may name.
	VocabSize() int
	// Tokenize encodes text, with the model's BOS when addSpecial is set.
	// Text is always text: a control token's spelling in it never becomes
	// the control token.
	Tokenize(text string, addSpecial bool) ([]int, error)
	// TokenizeChat renders messages with the model's chat template (ending
	// with the assistant's generation prompt) and encodes it so that only
	// the template's own markup becomes control tokens.
	TokenizeChat(msgs []Message) ([]int, error)
	// Detokenize returns the text of ids, as a generation would print it.
	Detokenize(ids []int) (string, error)
	// TokenBytes returns the bytes of token id as it appears after prev
	// (logprobs report them).
	TokenBytes(prev, id int) []byte
	// Submit queues one sequence. It returns at once: an error that
	// names what is wrong with g, or a Stream of its tokens. Cancelling
	// ctx cancels the sequence: a queued one never starts, a running one
	// frees its KV blocks at the next step, and its stream ends.
	Submit(ctx context.Context, g Generation) (Stream, error)
	// Stats is the engine's state now, for /metrics.
	Stats() Stats
}

// Sampling is how a sequence picks its tokens (vLLM's SamplingParams).
type Sampling struct {
	Temperature       float64 // 0 = greedy
	TopP              float64 // 1 = off
	TopK              int     // 0 = off
	MinP              float64 // 0 = off
	RepetitionPenalty float64 // 0 or 1 = off
	// Seed seeds the sequence's RNG when Seeded; otherwise the backend
	// picks a fresh seed.
	Seed   int64
	Seeded bool
}

// Generation is one sequence to generate.
type Generation struct {
	Prompt []int
	// MaxTokens caps the generated tokens (>= 1).
	MaxTokens int
	Sampling  Sampling
	// Stop are stop strings: the sequence ends where one appears in its
	// text, which then never holds any part of it.
	Stop []string
	// StopTokenIDs end the sequence at one of these ids (not emitted),
	// besides the model's EOS unless IgnoreEOS. IgnoreEOS ignores the
	// model's EOS only, never StopTokenIDs (vLLM's rule).
	StopTokenIDs []int
	IgnoreEOS    bool
	// Logprobs is -1 for none, else the number of alternatives reported
	// beside each sampled token's own logprob.
	Logprobs int
	// Chat marks a prompt rendered by TokenizeChat: the sequence also
	// ends at the template's end-of-turn markers.
	Chat bool
}

// Stream is one submitted sequence's output.
type Stream interface {
	// Tokens delivers the generated tokens in order, and is closed after
	// the last one.
	Tokens() <-chan Token
	// Wait blocks until the sequence has finished and returns how.
	Wait() Finish
}

// Token is one generated token.
type Token struct {
	ID int
	// Text is the text this token releases: never part of a stop string,
	// never a partial UTF-8 character (so it may be "" and held back).
	Text    string
	Logprob *TokenLogprob // when Generation.Logprobs >= 0
}

// TokenLogprob is a sampled token's log-probability and the most likely
// alternatives, from the logits the sampler used.
type TokenLogprob struct {
	Logprob float64
	Top     []TopLogprob
}

// TopLogprob is one alternative token.
type TopLogprob struct {
	ID      int
	Logprob float64
}

// Finish is how a sequence ended.
type Finish struct {
	// Reason is "stop" (EOS, a stop token or a stop string) or "length"
	// (MaxTokens or the context), or "cancelled" when its context ended
	// first.
	Reason string
	// FlushText is text held back that the end released (after the last
	// Token's Text); "" when a stop string matched.
	FlushText string
	// PromptTokens, CachedTokens (prompt positions the prefix cache
	// served) and GeneratedTokens are the usage.
	PromptTokens, CachedTokens, GeneratedTokens int
	// Queued is how long the sequence waited before the engine admitted
	// it (vllm:request_queue_time_seconds).
	Queued time.Duration
	// Err is set when the sequence failed after it was accepted.
	Err error
}

// Stats is the backend's state for /metrics and /health.
type Stats struct {
	Running, Waiting int
	// KV cache blocks.
	BlocksTotal, BlocksFree, BlocksShared int
	// Cumulative counters.
	PrefixQueries, PrefixHits, Preemptions int64
	DraftTokens, AcceptedTokens, CoWCopies int64
	// CoWBytes are the bytes those copies on write moved.
	CoWBytes int64
	// Steps are the engine's forward passes, and BytesCopied and CopyOps
	// what its activations and cache copied (the Ledger that `infer
	// compare` prints): their rates' ratio is the bytes copied per step.
	Steps, BytesCopied, CopyOps int64
	// AttentionPath names the attention path ("fused", "naive").
	AttentionPath string
}
