package hf

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stride-lm/stride/tensor/testfixture"
)

// configSeeds are FuzzParseConfig's seeds, also committed under
// testdata/fuzz/FuzzParseConfig (TestFuzzCorpusCurrent keeps them equal;
// STRIDE_WRITE_FUZZ_CORPUS=1 rewrites the directory).
var configSeeds = map[string]string{
	"llama": `{"architectures":["LlamaForCausalLM"],"hidden_size":64,"intermediate_size":172,"num_hidden_layers":5,` +
		`"num_attention_heads":8,"num_key_value_heads":4,"vocab_size":512,"max_position_embeddings":512,"rms_norm_eps":1e-05,` +
		`"rope_theta":10000.0,"hidden_act":"silu","tie_word_embeddings":true,"bos_token_id":1,"eos_token_id":2}`,
	"llama3": `{"architectures":["LlamaForCausalLM"],"hidden_size":2048,"intermediate_size":8192,"num_hidden_layers":16,` +
		`"num_attention_heads":32,"num_key_value_heads":8,"head_dim":64,"vocab_size":128256,"max_position_embeddings":131072,` +
		`"rms_norm_eps":1e-05,"rope_theta":500000.0,"rope_scaling":{"factor":32.0,"high_freq_factor":4.0,"low_freq_factor":1.0,` +
		`"original_max_position_embeddings":8192,"rope_type":"llama3"},"tie_word_embeddings":true,"eos_token_id":[128001,128008,128009]}`,
	"qwen2": `{"architectures":["Qwen2ForCausalLM"],"hidden_size":896,"intermediate_size":4864,"num_hidden_layers":24,` +
		`"num_attention_heads":14,"num_key_value_heads":2,"vocab_size":151936,"max_position_embeddings":32768,"rms_norm_eps":1e-06,` +
		`"rope_theta":1000000.0,"tie_word_embeddings":true,"use_sliding_window":false,"sliding_window":32768}`,
	"linear": `{"architectures":["LlamaForCausalLM"],"hidden_size":32,"intermediate_size":64,"num_hidden_layers":1,` +
		`"num_attention_heads":4,"vocab_size":10,"max_position_embeddings":8,"rms_norm_eps":1e-6,"rope_scaling":{"type":"linear","factor":2}}`,
	"mistral": `{"architectures":["MistralForCausalLM"]}`,
	"smollm2": `{"architectures":["LlamaForCausalLM"],"attention_bias":false,"bos_token_id":0,"eos_token_id":0,"head_dim":64,` +
		`"hidden_act":"silu","hidden_size":576,"intermediate_size":1536,"max_position_embeddings":8192,"mlp_bias":false,` +
		`"model_type":"llama","num_attention_heads":9,"num_hidden_layers":30,"num_key_value_heads":3,"pretraining_tp":1,` +
		`"rms_norm_eps":1e-05,"rope_interleaved":false,"rope_scaling":null,"rope_theta":100000,"tie_word_embeddings":true,` +
		`"torch_dtype":"bfloat16","vocab_size":49152}`,
}

// FuzzParseConfig feeds arbitrary config.json bytes to parseConfig. It
// must never panic, and a config it accepts must be one the forward pass
// accepts (model.Config.Validate), with factors for every rotated pair.
func FuzzParseConfig(f *testing.F) {
	for _, s := range configSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := parseConfig(data)
		if err != nil {
			return
		}
		if err := c.Model.Validate(); err != nil {
			t.Fatalf("accepted a config the model refuses: %v", err)
		}
		if c.RopeFreqs != nil && len(c.RopeFreqs) != c.Model.RopeDims()/2 {
			t.Fatalf("%d rope factors for %d pairs", len(c.RopeFreqs), c.Model.RopeDims()/2)
		}
	})
}

// The committed seed corpus is configSeeds.
func TestFuzzCorpusCurrent(t *testing.T) {
	want := map[string][]byte{}
	for name, data := range configSeeds {
		want[name] = testfixture.CorpusEntry([]byte(data))
	}
	testfixture.CheckCorpus(t, filepath.Join("testdata", "fuzz", "FuzzParseConfig"), want, "TestFuzzCorpusCurrent")
}

// The seeds parse as their real counterparts: Llama 3.2 1B's factors
// leave the fastest pair alone and slow the slowest by 32; Qwen2.5 0.5B
// has biases; SmolLM2-135M (head_dim 64 = 576/9, BOS = EOS = 0) stops at
// id 0 only.
func TestParseRealConfigs(t *testing.T) {
	c, err := parseConfig([]byte(configSeeds["llama3"]))
	if err != nil {
		t.Fatal(err)
	}
	if c.Model.Dim != 2048 || c.Model.NKVHeads != 8 || c.Model.RopeTheta != 500000 || len(c.RopeFreqs) != 32 ||
		c.RopeFreqs[0] != 1 || c.RopeFreqs[31] != 32 || !c.Tied || !slicesEqual(c.EOS, []int{128001, 128008, 128009}) {
		t.Errorf("llama3: %+v", c)
	}
	q, err := parseConfig([]byte(configSeeds["qwen2"]))
	if err != nil {
		t.Fatal(err)
	}
	if !q.Model.QKVBias || q.Architecture != "Qwen2ForCausalLM" || q.Model.NHeads != 14 || q.Model.NormEps != 1e-6 {
		t.Errorf("qwen2: %+v", q)
	}
	sm, err := parseConfig([]byte(configSeeds["smollm2"]))
	if err != nil {
		t.Fatal(err)
	}
	if sm.Model.Dim != 576 || sm.Model.HeadDim() != 64 || sm.Model.NKVHeads != 3 || sm.Model.RopeTheta != 100000 ||
		!sm.Tied || sm.Model.QKVBias || !slicesEqual(stopTokens(sm, nil, sm.Model.VocabSize), []int{0}) {
		t.Errorf("smollm2: %+v", sm)
	}
	l, err := parseConfig([]byte(configSeeds["linear"]))
	if err != nil || l.Model.RopeScale != 2 || l.Model.NKVHeads != 4 || l.Tied {
		t.Errorf("linear: %+v, %v", l, err)
	}
}

// parseConfig maps a config.json (its bytes) to a Config, as Open does
// with the file (the fuzz target of the config parser):
//
//	hidden_size               Dim
//	intermediate_size         HiddenDim
//	num_hidden_layers         NLayers
//	num_attention_heads       NHeads
//	num_key_value_heads       NKVHeads (default: num_attention_heads)
//	head_dim                  must equal hidden_size/num_attention_heads
//	vocab_size                VocabSize
//	max_position_embeddings   SeqLen
//	rms_norm_eps              NormEps
//	rope_theta                RopeTheta (default 10000)
//	rope_scaling              linear: RopeScale; llama3: RopeFreqs;
//	                          default/null: none; others refused
//	tie_word_embeddings       Tied (default false, as Llama's and Qwen2's configs)
//	Qwen2ForCausalLM          QKVBias
func parseConfig(data []byte) (Config, error) {
	var r rawConfig
	if err := json.Unmarshal(data, &r); err != nil {
		return Config{}, fmt.Errorf("config.json: %w", err)
	}
	return r.config()
}
