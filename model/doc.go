// Package model is a Llama-architecture transformer in the manner of
// llama2.c's run.c: configuration, weights, sampler and a forward pass
// whose attention goes through package attention and whose KV lives in a
// paged cache from package kvcache.
//
// # From a file to a Model
//
// Checkpoint files are not read here. A format package (model/llama2c,
// model/gguf, model/hf) opens a file as a Source: the Config it declares
// and its tensors by llama.cpp's names (token_embd.weight,
// blk.N.attn_q.weight, …; source.go), usually zero-copy views of a memory
// mapping. FromSource builds a Model from any Source: each projection
// becomes a kernels.Matrix in its storage format (F32, BF16, F16, Q8_0 or
// a ggml block type, kept as stored or converted as LoadOptions say), and
// q, k and v are fused into one [(H+2·KVH)·D, dim] matrix for the fused
// path. model/checkpoint picks the format by the file's magic. Formats
// import model; model imports no format, so a new format lands in a new
// package without touching the forward pass.
//
// # The forward pass
//
// Forward.Run reads top to bottom, one step of T packed tokens (any mix of
// prefill, decode and verify rows of several sequences):
//
//	x = token_embd[tokens]                       [T, dim]
//	for each layer:
//	    xb  = rmsnorm(x) ⊙ attn_norm
//	    qkv = xb · Wqkvᵀ                          [T, (H+2·KVH)·D], one matmul
//	    q, k, v = views of qkv                    [T, H, D], [T, KVH, D], zero copy
//	    rope(q, k) at each row's position
//	    o   = attention(q, k, v, paged K/V cache) [T, H·D]
//	    x  += o · Woᵀ
//	    xb  = rmsnorm(x) ⊙ ffn_norm
//	    x  += (silu(xb·W1ᵀ) ⊙ (xb·W3ᵀ)) · W2ᵀ       SwiGLU
//	logits = rmsnorm(x[rows]) · Wclsᵀ             [rows, vocab], only the rows asked for
//
// Buffers are allocated once and grown on demand, so a steady decode loop
// allocates nothing per token. With Projection SeparateQKV (the naive
// path) q, k and v are three matmuls into three contiguous buffers, as the
// textbook code has them.
//
// # Sampling
//
// Sampler picks the next token from a row of logits the way run.c does
// (argmax at temperature 0, else temperature, top-p and run.c's xorshift
// RNG, so a seed gives run.c's tokens), with llama.cpp's top-k, min-p and
// repeat penalty as filters. Sampler.Verify checks a speculative draft:
// it samples the row's token as Sample would, with the same coin, and
// accepts the draft when they agree, so speculation changes speed, never
// the tokens.
//
// The scheduler that drives Forward over many sequences is model/engine.
package model
