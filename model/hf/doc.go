// Package hf opens Hugging Face checkpoint directories, the layout
// transformers and vLLM load:
//
//	config.json                      architecture and hyperparameters
//	model.safetensors                the tensors, or
//	model.safetensors.index.json     + the shards its weight_map names
//	generation_config.json           (optional) eos_token_id: the stop ids,
//	                                 and the sampling defaults
//	tokenizer.json                   (optional) the tokenizer: OpenTokenizer
//
// as a model.Source, so model.FromSource runs them like any other format.
// OpenTokenizer reads the directory's tokenizer.json (and
// tokenizer_config.json) into a model/tokenizer Tokenizer.
//
// # Architectures
//
// LlamaForCausalLM (Llama 2 and 3, TinyLlama, SmolLM2) and
// Qwen2ForCausalLM (Qwen2, Qwen2.5: q/k/v biases). Any other
// architecture, and any feature of these two that the forward pass does
// not run (o_proj or MLP biases, sliding-window attention, RoPE scaling
// other than linear and Llama 3's, partial rotary, a head_dim other than
// hidden_size/num_attention_heads), is an error that names it.
//
// # Tensor names
//
// Hugging Face names map to model's canonical (llama.cpp) names:
//
//	model.embed_tokens.weight                      token_embd.weight
//	model.norm.weight                              output_norm.weight
//	lm_head.weight                                 output.weight (absent: tied)
//	model.layers.N.input_layernorm.weight          blk.N.attn_norm.weight
//	model.layers.N.self_attn.{q,k,v}_proj.weight   blk.N.attn_{q,k,v}.weight
//	model.layers.N.self_attn.{q,k,v}_proj.bias     blk.N.attn_{q,k,v}.bias
//	model.layers.N.self_attn.o_proj.weight         blk.N.attn_output.weight
//	model.layers.N.post_attention_layernorm.weight blk.N.ffn_norm.weight
//	model.layers.N.mlp.gate_proj.weight            blk.N.ffn_gate.weight
//	model.layers.N.mlp.up_proj.weight              blk.N.ffn_up.weight
//	model.layers.N.mlp.down_proj.weight            blk.N.ffn_down.weight
//
// # Rotary layout
//
// Meta's Llama code (and llama2.c) rotates consecutive pairs (2j, 2j+1)
// of each head. Hugging Face's Llama rotates halves (j, j+head_dim/2)
// ("rotate_half"), and its conversion script permutes the rows of q_proj
// and k_proj so that both compute the same attention. Two ways run such a
// checkpoint correctly, and Options.Rotary picks one:
//
//   - RotaryNeox keeps the stored layout and rotates halves
//     (model.RopeNeox), as vLLM does: q_proj and k_proj are read as
//     views (FromSource copies them into the fused WQKV either way).
//   - RotaryUnpermute undoes the permutation at load, row by row, and
//     rotates pairs (model.RopeNorm), as llama.cpp's converter does for
//     Llama; the copied bytes are counted (Source.PermutedBytes, and the
//     Ledger's allocations and copies).
//
// Both give the logits of the llama2.c checkpoint the directory was
// exported from: un-permuted bit for bit, NEOX up to the order of the
// head dimensions in the q·k sums. The default, RotaryAuto, does what
// llama.cpp's converter does: un-permute LlamaForCausalLM, keep
// Qwen2ForCausalLM (llama.cpp runs qwen2 as NEOX). So a Llama directory
// exports to llama2.c and GGUF files in their own layouts.
package hf
