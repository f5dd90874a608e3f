// Package tokenizer turns text into the token ids a language model reads,
// and ids back into text. It is tokenization as its own concept: it reads
// no files and imports nothing of Stride's, so the format packages
// (model/llama2c for tokenizer.bin, model/gguf for a GGUF's
// tokenizer.ggml.* metadata) parse their bytes and hand it the
// vocabulary, and tokenizer.json (Hugging Face) is parsed here because it
// is a tokenizer format and nothing else.
//
// Three merge rules cover the models people run:
//
//   - SentencePiece BPE (llama2.c, Llama 2, TinyLlama's GGUF): every piece
//     has a score; the adjacent pair whose concatenation is the
//     highest-scoring piece merges first, the leftmost on ties. A
//     character without a piece becomes its <0xHH> byte pieces.
//   - Byte-level BPE (GPT-2, Llama 3, Qwen2, SmolLM): the text is first
//     cut by a pre-tokenizer (a regex in the reference implementations,
//     written out by hand here because Go's RE2 has no lookahead), each
//     word's bytes are spelled in GPT-2's printable byte alphabet ("Ġ" is
//     the space), and pairs merge by the rank of their merge rule.
//   - BPE by merges with byte fallback (tokenizer.json files of Llama 2
//     style models).
//
// Both merge loops keep the candidate pairs in a priority queue, as
// SentencePiece and llama.cpp do: each merge pushes at most two new pairs,
// so a text of n characters costs O(n log n), not run.c's O(n²) rescans,
// while the order of merges, and so the ids, stay exactly the reference's
// (run.c's for tokenizer.bin, checked against a transliteration of
// run.c's encode).
//
// Special tokens (control tokens such as <|eot_id|>, and user-defined
// ones) are cut out of the text before merging: control tokens only when
// asked (EncodeOptions.ParseSpecial), user-defined ones always, as
// llama.cpp and Hugging Face tokenizers do.
//
// The oracles: run.c's ids for tok512 and the Llama 2 vocabulary;
// llama.cpp's tokenizer test vectors (ggml-vocab-*.gguf with .inp/.out)
// for GGUF vocabularies; transformers.js's ids on the Llama 3 and Qwen3
// tokenizer.json files, recorded by scripts/tokenizer-oracle.
package tokenizer
