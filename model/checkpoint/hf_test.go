package checkpoint

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/engine"
	"github.com/stride-lm/stride/model/hf"
	"github.com/stride-lm/stride/model/safetensors"
	"github.com/stride-lm/stride/tensor"
)

// writeHF writes m as a Hugging Face Llama directory, as transformers'
// conversion script would: HF names, q/k rows permuted to the rotate-half
// layout (Meta row 2j+i of each head stored at row i·hd/2+j).
func writeHF(t *testing.T, m *model.Model, dir string) {
	t.Helper()
	c := m.Config
	hd := c.HeadDim()
	floats := func(x *tensor.Tensor) []float32 {
		v, err := x.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	var ts []safetensors.WriterTensor
	add := func(name string, v []float32, shape ...int) {
		data := make([]byte, 4*len(v))
		for i, f := range v {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(f))
		}
		ts = append(ts, safetensors.WriterTensor{Name: name, DType: safetensors.F32, Shape: shape, Data: data})
	}
	permute := func(rows []float32, heads int) []float32 {
		out := make([]float32, len(rows))
		for h := 0; h < heads; h++ {
			for j := 0; j < hd/2; j++ {
				for i := 0; i < 2; i++ {
					copy(out[(h*hd+i*hd/2+j)*c.Dim:][:c.Dim], rows[(h*hd+2*j+i)*c.Dim:][:c.Dim])
				}
			}
		}
		return out
	}
	W := m.Weights
	add("model.embed_tokens.weight", floats(W.TokenEmbedding), c.VocabSize, c.Dim)
	q, kv := c.NHeads*hd, c.KVDim()
	for l, L := range W.Layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		qkv := floats(L.WQKV)
		add(p+"input_layernorm.weight", floats(L.AttnNorm), c.Dim)
		add(p+"self_attn.q_proj.weight", permute(qkv[:q*c.Dim], c.NHeads), q, c.Dim)
		add(p+"self_attn.k_proj.weight", permute(qkv[q*c.Dim:(q+kv)*c.Dim], c.NKVHeads), kv, c.Dim)
		add(p+"self_attn.v_proj.weight", qkv[(q+kv)*c.Dim:], kv, c.Dim)
		add(p+"self_attn.o_proj.weight", floats(L.WO), c.Dim, q)
		add(p+"post_attention_layernorm.weight", floats(L.FFNNorm), c.Dim)
		add(p+"mlp.gate_proj.weight", floats(L.W1), c.HiddenDim, c.Dim)
		add(p+"mlp.down_proj.weight", floats(L.W2), c.Dim, c.HiddenDim)
		add(p+"mlp.up_proj.weight", floats(L.W3), c.HiddenDim, c.Dim)
	}
	add("model.norm.weight", floats(W.FinalNorm), c.Dim)
	var buf bytes.Buffer
	if err := safetensors.Write(&buf, ts, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, hf.WeightsFile), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]any{"architectures": []string{"LlamaForCausalLM"}, "hidden_size": c.Dim,
		"intermediate_size": c.HiddenDim, "num_hidden_layers": c.NLayers, "num_attention_heads": c.NHeads,
		"num_key_value_heads": c.NKVHeads, "vocab_size": c.VocabSize, "max_position_embeddings": c.SeqLen,
		"rms_norm_eps": c.NormEps, "rope_theta": c.RopeTheta, "tie_word_embeddings": true})
	if err := os.WriteFile(filepath.Join(dir, hf.ConfigFile), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
}

// greedy runs 8 greedy steps from BOS.
func greedy(t *testing.T, m *model.Model, stops []int) []int {
	t.Helper()
	e, err := engine.New(m, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	res, _, err := e.Generate([]engine.Request{{Prompt: []int{model.BOSID}, Steps: 8,
		Sampler: model.NewSampler(m.Config.VocabSize, 0, 0.9, 1), StopTokens: stops}}, nil)
	if err != nil || res[0].Err != nil {
		t.Fatal(err, res[0].Err)
	}
	return res[0].Tokens
}

// A directory is a Hugging Face checkpoint whatever it is called (here
// "model.gguf"): Open returns an *hf.Source, mapped unless NoMmap, and
// the model it builds is the one written, un-permuted, generating the
// same ids.
func TestOpenDirectoryAsHF(t *testing.T) {
	m := tiny(t)
	dir := filepath.Join(t.TempDir(), "model.gguf")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeHF(t, m, dir)
	want := greedy(t, m, nil)
	for _, noMmap := range []bool{false, true} {
		src, err := OpenSource(dir, model.LoadOptions{NoMmap: noMmap})
		if err != nil {
			t.Fatal(err)
		}
		s, ok := src.(*hf.Source)
		if !ok {
			t.Fatalf("opened as %T, want *hf.Source", src)
		}
		if mapped := s.MappedBytes() > 0; mapped == noMmap {
			t.Errorf("NoMmap=%v: MappedBytes %d", noMmap, s.MappedBytes())
		}
		lm, err := model.FromSource(src, model.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		a, _ := m.Weights.Layers[1].WQKV.Float32s()
		b, _ := lm.Weights.Layers[1].WQKV.Float32s()
		if !slices.Equal(a, b) {
			t.Errorf("NoMmap=%v: the un-permuted WQKV is not the one written", noMmap)
		}
		// No eos_token_id in config.json: the directory stops at nothing.
		if got := greedy(t, lm, []int{}); !slices.Equal(got[:len(want)], want) {
			t.Errorf("NoMmap=%v: ids %v, want %v", noMmap, got, want)
		}
		lm.Close()
	}
}
