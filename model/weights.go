package model

import (
	"github.com/stride-lm/stride/tensor"
	"github.com/stride-lm/stride/tensor/kernels"
)

// Layer holds one transformer block's weights. Matrices are row-major
// (out, in): out[i] = Σ_j W[i, j]·x[j], as in llama2.c.
type Layer struct {
	AttnNorm *tensor.Tensor // (dim)
	// WQKV is the fused QKV projection, ((n_heads + 2·n_kv_heads)·head_dim, dim):
	// the rows of wq, then of wk, then of wv. One matmul yields a token's
	// [q | k | v]; heads are then cut out of it by views.
	WQKV    *tensor.Tensor
	WO      *tensor.Tensor // (dim, n_heads·head_dim)
	FFNNorm *tensor.Tensor // (dim)
	W1      *tensor.Tensor // (hidden_dim, dim)  gate
	W2      *tensor.Tensor // (dim, hidden_dim)  down
	W3      *tensor.Tensor // (hidden_dim, dim)  up
	// BQKV is the fused q|k|v projection bias, ((n_heads + 2·n_kv_heads)·head_dim),
	// laid out like WQKV's rows; nil unless Config.QKVBias (Qwen2).
	BQKV *tensor.Tensor
}

// Weights holds every tensor of a model.
type Weights struct {
	TokenEmbedding *tensor.Tensor // (vocab_size, dim)
	Layers         []Layer
	FinalNorm      *tensor.Tensor // (dim)
	Classifier     *tensor.Tensor // (vocab_size, dim); TokenEmbedding itself when shared
	// RopeFreqs are the per-pair RoPE frequency factors (n_rot/2): each
	// pair's frequency is divided by its factor. nil means all 1; Llama 3
	// GGUFs store them as the rope_freqs tensor.
	RopeFreqs []float32
}

// Model is a configuration with its weights.
type Model struct {
	Config  Config
	Weights Weights
	// Quantized maps a weight tensor to its Q8_0 form when the model
	// runs with Q8_0 weights: the kernels read the int8 values and group
	// scales instead of the tensor (which then only describes the shape).
	Quantized map[*tensor.Tensor]*kernels.Matrix

	// mapping is the memory-mapped checkpoint the weights are views of
	// (see Load); nil when they live in Go memory. Close releases it.
	mapping *mapping
}
