package tokenizer

import "context"

// PromptCounter returns a function that counts a prompt's tokens as the
// engine receives it: the ids of text, BOS included when c adds one
// (AddBOS, and the vocabulary has a BOS). Its shape is loadgen.Counter's,
// so a benchmark client (infer bench serve) can size its prompts with a
// local tokenizer instead of asking the server; the context is unused,
// as encoding does not block.
func PromptCounter(c Codec) func(ctx context.Context, text string) (int, error) {
	bos := c.AddBOS() && c.BOS() >= 0
	return func(_ context.Context, text string) (int, error) {
		ids, err := c.Encode(text, bos, false)
		return len(ids), err
	}
}
