// Package model is a Llama-architecture transformer in the manner of
// llama2.c's run.c: configuration, weights, tokenizer, sampler and a
// forward pass whose attention goes through package attention and whose
// KV lives in a paged cache from package kvcache.
//
// Checkpoint files are not read here: a format package (model/llama2c,
// and the ones that follow it) opens a file as a Source, the tensors it
// stores by llama.cpp's names (source.go), and FromSource builds the Model
// from any Source. model/checkpoint picks the format by the file's magic.
package model
