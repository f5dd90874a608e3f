package gguf

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/internal/formattest"
	"github.com/stride-lm/stride/tensor/kernels"
)

// readSafetensors reads the float32 tensors of a small safetensors file
// (an 8-byte header length, a JSON header of dtype, shape and data
// offsets, then the data): just enough for the oracle below.
func readSafetensors(t *testing.T, path string) map[string]WriterTensor {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(raw)
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(raw[8:8+n], &hdr); err != nil {
		t.Fatal(err)
	}
	out := map[string]WriterTensor{}
	for name, v := range hdr {
		if name == "__metadata__" {
			continue
		}
		var ti struct {
			Dtype   string   `json:"dtype"`
			Shape   []int    `json:"shape"`
			Offsets [2]int64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(v, &ti); err != nil || ti.Dtype != "F32" {
			t.Fatalf("%s: %v %s", name, err, ti.Dtype)
		}
		base := 8 + int64(n)
		out[name] = WriterTensor{Type: kernels.TypeF32, Shape: ti.Shape, Data: raw[base+ti.Offsets[0] : base+ti.Offsets[1]]}
	}
	return out
}

// NEOX RoPE is Hugging Face's rotate-half convention, the one qwen2 GGUFs
// use on unpermuted q/k weights. The oracle: ../shared's Hugging Face copy
// of stories260K, whose q_proj/k_proj are in rotate-half layout and from
// which an independent PyTorch forward pass reproduces run.c's golden
// greedy ids. Written as a qwen2 GGUF (NEOX, with zero q/k/v biases), it
// must generate those ids too.
func TestNeoxOnHuggingFaceWeightsGivesGoldenIDs(t *testing.T) {
	hf := readSafetensors(t, sharedFile(t, "models/hf/stories260K/model.safetensors"))
	golden := goldenIDs(t)
	const arch = "qwen2"
	kvs := []KV{
		{Key: "general.architecture", Value: MustValue(arch)},
		{Key: arch + ".context_length", Value: MustValue(uint32(512))},
		{Key: arch + ".embedding_length", Value: MustValue(uint32(64))},
		{Key: arch + ".feed_forward_length", Value: MustValue(uint32(172))},
		{Key: arch + ".block_count", Value: MustValue(uint32(5))},
		{Key: arch + ".attention.head_count", Value: MustValue(uint32(8))},
		{Key: arch + ".attention.head_count_kv", Value: MustValue(uint32(4))},
		{Key: arch + ".attention.layer_norm_rms_epsilon", Value: MustValue(float32(1e-5))},
		{Key: arch + ".rope.freq_base", Value: MustValue(float32(10000))},
	}
	get := func(hfName, name string) WriterTensor {
		w, ok := hf[hfName]
		if !ok {
			t.Fatalf("no %s", hfName)
		}
		w.Name = name
		return w
	}
	ts := []WriterTensor{get("model.embed_tokens.weight", "token_embd.weight"), get("model.norm.weight", "output_norm.weight")}
	for l := 0; l < 5; l++ {
		p, b := fmt.Sprintf("model.layers.%d.", l), fmt.Sprintf("blk.%d.", l)
		ts = append(ts,
			get(p+"input_layernorm.weight", b+"attn_norm.weight"),
			get(p+"self_attn.q_proj.weight", b+"attn_q.weight"),
			get(p+"self_attn.k_proj.weight", b+"attn_k.weight"),
			get(p+"self_attn.v_proj.weight", b+"attn_v.weight"),
			get(p+"self_attn.o_proj.weight", b+"attn_output.weight"),
			get(p+"post_attention_layernorm.weight", b+"ffn_norm.weight"),
			get(p+"mlp.gate_proj.weight", b+"ffn_gate.weight"),
			get(p+"mlp.up_proj.weight", b+"ffn_up.weight"),
			get(p+"mlp.down_proj.weight", b+"ffn_down.weight"),
			WriterTensor{Name: b + "attn_q.bias", Type: kernels.TypeF32, Shape: []int{64}, Data: make([]byte, 4*64)},
			WriterTensor{Name: b + "attn_k.bias", Type: kernels.TypeF32, Shape: []int{32}, Data: make([]byte, 4*32)},
			WriterTensor{Name: b + "attn_v.bias", Type: kernels.TypeF32, Shape: []int{32}, Data: make([]byte, 4*32)})
	}
	var buf bytes.Buffer
	if err := Write(&buf, kvs, ts); err != nil {
		t.Fatal(err)
	}
	f, err := Parse(buf.Bytes(), "stories260K-hf-as-qwen2.gguf")
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSource(f)
	if err != nil {
		t.Fatal(err)
	}
	if c := s.Config(); c.RopeStyle != model.RopeNeox || !c.QKVBias {
		t.Fatalf("config %+v: want NEOX with biases", c)
	}
	m, err := model.FromSource(s, model.LoadOptions{AsStored: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	got := formattest.Generate(t, m, []int{model.BOSID}, 256, 0, 0.9, 1, nil)
	if !slices.Equal(got, golden) {
		i := firstDiff(got, golden)
		t.Fatalf("NEOX on the HF weights: first difference from the golden ids at %d of %d\n got %s\nwant %s",
			i, len(golden), fmt.Sprint(got[i:min(i+10, len(got))]), strings.Trim(fmt.Sprint(golden[i:min(i+10, len(golden))]), "[]"))
	}
}
