// Package model is a Llama-architecture transformer in the manner of
// llama2.c's run.c: checkpoints, tokenizer, sampler and a forward pass
// whose attention goes through package attention and whose KV lives in a
// paged cache from package kvcache.
package model
