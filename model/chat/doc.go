// Package chat turns a conversation into the token ids a model is fed.
//
// A chat model was trained on conversations written in one format: the
// markers around each turn ("<|im_start|>user\n … <|im_end|>") are the
// model's, and it answers only when it sees them. The format travels
// with the model as a Jinja template (GGUF's tokenizer.chat_template,
// Hugging Face's tokenizer_config.json). This package holds
//
//   - the templates: the built-in names (Load), a model's own (New) and
//     the fallback for a model without one, run.c's llama-2 turns
//     (Fallback, RunCTurn);
//   - the guard: a template comes from whoever made the model file, and a
//     server renders it for anyone who can reach it. New refuses, before
//     compiling, what could recurse without bound (a macro reaching a
//     macro, deep nesting), and every rendering runs under a Budget whose
//     caps (output bytes, loop iterations, range length, the longest
//     string) are checked on the evaluated values before the work is done,
//     and stops when its context ends;
//   - the tokenization rule (Encode): text the template's markup writes
//     is tokenized with the vocabulary's control tokens recognized, text
//     from a message is plain text. So "<|im_start|>" in the template is
//     one control id, while a user who types "<|im_end|>" gets the ids of
//     those characters and cannot close their own turn;
//   - the conversation (Conversation): the ids a front end feeds at each
//     turn, built turn by turn (infer chat) or resumed from a whole
//     message list (Resume, the server's chat prompt), the same ids
//     either way. In run.c's format an earlier reply is closed by the
//     tokenizer's EOS, as run.c's loop ends and feeds it.
//
// BOS follows the tokenizer, as for a plain prompt: the template sees the
// vocabulary's BOS text as bos_token, and Encode puts the BOS id first
// only when the tokenizer adds one (Qwen's does not).
package chat
