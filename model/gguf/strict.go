package gguf

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// llamaCppArchKeys are the per-architecture metadata keys llama.cpp
// defines (src/llama-arch.cpp, LLM_KV_NAMES, as "%s.<key>"). A key under
// the model's architecture prefix that is not among them is most likely
// a misspelling of one that is ("rope.freq_base" written
// "rope.frequency_base"), which would silently leave its default in
// place; Stride refuses it by name.
var llamaCppArchKeys = strings.Fields(`
attention.causal attention.clamp_kqv attention.group_norm_epsilon attention.group_norm_groups
attention.head_count attention.head_count_kv attention.key_length attention.kv_lora_rank
attention.layer_norm_epsilon attention.layer_norm_rms_epsilon attention.max_alibi_bias
attention.q_lora_rank attention.relative_buckets_count attention.scale attention.sliding_window
attention.value_length attn_logit_softcapping block_count context_length convnext.block_count
convnext.embedding_length decoder_start_token_id embedding_length embedding_scale expert_count
expert_feed_forward_length expert_gating_func expert_shared_count expert_shared_feed_forward_length
expert_used_count expert_weights_norm expert_weights_scale features_length feed_forward_length
final_logit_softcapping leading_dense_block_count logit_scale pooling_type posnet.block_count
posnet.embedding_length rescale_every_n_layers residual_scale rope.dimension_count
rope.dimension_sections rope.freq_base rope.scale_linear rope.scaling.attn_factor
rope.scaling.factor rope.scaling.finetuned rope.scaling.original_context_length rope.scaling.type
rope.scaling.yarn_log_multiplier ssm.conv_kernel ssm.dt_b_c_rms ssm.inner_size ssm.state_size
ssm.time_step_rank swin_norm tensor_data_layout time_decay_extra_dim time_mix_extra_dim
token_shift_count use_parallel_residual vocab_size wkv.head_size`)

// changesAttention reports whether an architecture key (without its
// "{arch}." prefix) belongs to the families that change the attention
// arithmetic, rope.* and attention.*. An unknown key there is either a
// misspelling whose default would silently stand in, or a feature Stride
// does not implement (a new RoPE scaling): both must be refused. Unknown
// keys elsewhere are ignored, as llama.cpp ignores them, so files from a
// newer converter that only add metadata still load.
func changesAttention(key string) bool {
	return strings.HasPrefix(key, "rope.") || strings.HasPrefix(key, "attention.")
}

// checkStrict refuses what the tensor checks alone let through: a rope or
// attention key under the architecture's prefix that llama.cpp does not
// define, a
// tensor the model never reads (a blk.N past block_count among them),
// and a vocabulary whose size differs from the embedding's rows.
func (s *Source) checkStrict() error {
	prefix := s.arch + "."
	for _, kv := range s.f.Metadata {
		rest, ok := strings.CutPrefix(kv.Key, prefix)
		if ok && changesAttention(rest) && !slices.Contains(llamaCppArchKeys, rest) {
			return fmt.Errorf("gguf: %s: metadata key %q is not a key llama.cpp defines for %s (misspelled?)", s.f.name, kv.Key, s.arch)
		}
	}
	used := map[string]bool{}
	for _, w := range s.wantedTensors() {
		used[w.name] = true
	}
	for _, t := range s.f.Tensors {
		if used[t.Name] {
			continue
		}
		if n, ok := layerOf(t.Name); ok && n >= s.cfg.NLayers {
			return fmt.Errorf("gguf: %s: tensor %q belongs to layer %d, but %s.block_count is %d", s.f.name, t.Name, n, s.arch, s.cfg.NLayers)
		}
		return fmt.Errorf("gguf: %s: tensor %q is not used by a %s model of this configuration", s.f.name, t.Name, s.arch)
	}
	return s.checkVocab()
}

// layerOf returns N for a tensor named blk.N.*.
func layerOf(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "blk.")
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(rest, ".")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(num)
	return n, err == nil
}

// checkVocab compares the stored vocabulary with the embedding's rows.
// llama.cpp takes n_vocab from the token list and requires token_embd to
// have exactly that many rows; a shorter list would leave rows no id can
// reach, a longer one ids with no row (dropped, before this check,
// without a word).
func (s *Source) checkVocab() error {
	if v, ok := s.f.Lookup(s.arch + ".vocab_size"); ok {
		if n, err := s.f.Uint(s.arch + ".vocab_size"); err != nil || n != uint64(s.cfg.VocabSize) {
			return fmt.Errorf("gguf: %s: %s.vocab_size = %v but token_embd.weight has %d rows", s.f.name, s.arch, v, s.cfg.VocabSize)
		}
	}
	v, ok := s.f.Lookup("tokenizer.ggml.tokens")
	if !ok {
		return nil
	}
	if v.Type != TypeArray || v.Elem != TypeString {
		return fmt.Errorf("gguf: %s: tokenizer.ggml.tokens is %s, not array[string]", s.f.name, v.typeName())
	}
	if n := v.Len(); n != s.cfg.VocabSize {
		return fmt.Errorf("gguf: %s: tokenizer.ggml.tokens has %d tokens but token_embd.weight has %d rows", s.f.name, n, s.cfg.VocabSize)
	}
	return nil
}
