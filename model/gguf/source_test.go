package gguf

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/llama2c"
	"github.com/stride-lm/stride/tensor/kernels"
)

// The GGUF converted from stories260K.bin declares the legacy file's
// architecture (read by model's own llama2.c reader) and holds its
// weights byte for byte.
func TestSourceStories260K(t *testing.T) {
	bin := sharedFile(t, "models/stories260K.bin")
	s, err := OpenSource(sharedFile(t, "models/gguf/stories260K-f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fd, err := os.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	st, _ := fd.Stat()
	h, err := llama2c.ReadHeader(fd, st.Size(), bin)
	if err != nil {
		t.Fatal(err)
	}
	got, want := s.Config(), h.Config
	// llama.cpp's converter stores the tied classifier twice, and the
	// epsilon as float32.
	if got.SharedClassifier {
		t.Error("SharedClassifier: the file has output.weight")
	}
	if float32(got.NormEps) != float32(want.NormEps) {
		t.Errorf("NormEps %g, want %g", got.NormEps, want.NormEps)
	}
	got.SharedClassifier, got.NormEps = want.SharedClassifier, want.NormEps
	if got != want {
		t.Errorf("config\n got %+v\nwant %+v", got, want)
	}
	if s.Config().RopeStyle != model.RopeNorm || s.Arch() != "llama" {
		t.Errorf("rope style %v, arch %s", s.Config().RopeStyle, s.Arch())
	}
	raw, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	// Legacy layout: header, token embedding (512·64), attention norms
	// (5·64), then wq of all layers (5·64·64).
	off := 28 + 4*(512*64+5*64)
	q0, err := s.Tensor("blk.0.attn_q.weight")
	if err != nil {
		t.Fatal(err)
	}
	if q0.Type != model.StorageF32 || !slices.Equal(q0.Shape, []int{64, 64}) || !bytes.Equal(q0.Data, raw[off:off+64*64*4]) {
		t.Errorf("blk.0.attn_q.weight: %s %v, bytes equal %v", q0.Type, q0.Shape, bytes.Equal(q0.Data, raw[off:off+64*64*4]))
	}
	if ids := s.StopTokens(); !slices.Equal(ids, []int{2, 1}) {
		t.Errorf("stop tokens %v, want [2 1] (eos, then bos)", ids)
	}
	if _, err := s.Tensor("blk.9.attn_q.weight"); err == nil || !strings.Contains(err.Error(), `"blk.9.attn_q.weight"`) {
		t.Errorf("missing tensor: %v", err)
	}
}

// Every quantized reference file opens, with the stored types.
func TestSourceQuantizedTypes(t *testing.T) {
	for rel, want := range map[string]map[string]model.StorageType{
		"models/gguf/stories260K-q8_0.gguf":      {"blk.0.attn_q.weight": model.StorageQ8_0, "blk.0.ffn_down.weight": model.StorageF16, "output_norm.weight": model.StorageF32},
		"models/gguf/synthetic-k256-q4_k_m.gguf": {"blk.0.attn_q.weight": model.StorageQ4_K, "blk.2.ffn_down.weight": model.StorageQ6_K, "output.weight": model.StorageQ6_K},
		"models/gguf/synthetic-k256-q4_0.gguf":   {"blk.0.attn_q.weight": model.StorageQ4_0, "output.weight": model.StorageQ6_K},
		"models/gguf/synthetic-k256-q6_k.gguf":   {"blk.3.ffn_up.weight": model.StorageQ6_K},
	} {
		s, err := OpenSource(sharedFile(t, rel))
		if err != nil {
			t.Fatal(err)
		}
		for name, typ := range want {
			rt, err := s.Tensor(name)
			if err != nil || rt.Type != typ {
				t.Errorf("%s %s: %v, %v; want %s", rel, name, rt.Type, err, typ)
			}
		}
		if c := s.Config(); rel != "models/gguf/stories260K-q8_0.gguf" && (c.Dim != 256 || c.HiddenDim != 768 || c.NKVHeads != 2) {
			t.Errorf("%s config %+v", rel, c)
		}
		s.Close()
	}
}

// Vocab-only files and other architectures are refused as models, with
// the reason, but open as files (for their tokenizers).
func TestSourceRefusals(t *testing.T) {
	for rel, want := range map[string]string{
		"tokenizers/llama.cpp-vocab/ggml-vocab-starcoder.gguf": `architecture "starcoder2" is not supported`,
		"tokenizers/llama.cpp-vocab/ggml-vocab-gpt-2.gguf":     `architecture "gpt2" is not supported`,
		"tokenizers/llama.cpp-vocab/ggml-vocab-llama-spm.gguf": "vocab-only",
	} {
		p := sharedFile(t, rel)
		_, err := OpenSource(p)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), filepath.Base(p)) {
			t.Errorf("%s: %v, want an error naming the file and containing %q", rel, err, want)
		}
		f, err := Open(p)
		if err != nil {
			t.Errorf("%s as a file: %v", rel, err)
			continue
		}
		if _, err := f.Strings("tokenizer.ggml.tokens"); err != nil {
			t.Error(err)
		}
		f.Close()
	}
}

// tinyModel writes a small GGUF model of arch with random-free (zero)
// weights, letting mod change its metadata and tensors first.
func tinyModel(t *testing.T, arch string, mod func(kvs *[]KV, ts *[]WriterTensor)) string {
	t.Helper()
	const dim, hid, heads, kv, vocab = 16, 32, 4, 2, 10
	hs := dim / heads
	kvs := []KV{
		{Key: "general.architecture", Value: MustValue(arch)},
		{Key: arch + ".context_length", Value: MustValue(uint32(64))},
		{Key: arch + ".embedding_length", Value: MustValue(uint32(dim))},
		{Key: arch + ".feed_forward_length", Value: MustValue(uint32(hid))},
		{Key: arch + ".block_count", Value: MustValue(uint32(2))},
		{Key: arch + ".attention.head_count", Value: MustValue(uint32(heads))},
		{Key: arch + ".attention.head_count_kv", Value: MustValue(uint32(kv))},
		{Key: arch + ".attention.layer_norm_rms_epsilon", Value: MustValue(float32(1e-6))},
		{Key: arch + ".rope.freq_base", Value: MustValue(float32(1e6))},
		{Key: "tokenizer.ggml.eos_token_id", Value: MustValue(uint32(7))},
		{Key: "tokenizer.ggml.eot_token_id", Value: MustValue(uint32(8))},
		{Key: "tokenizer.ggml.bos_token_id", Value: MustValue(uint32(7))},
	}
	f32 := func(name string, shape ...int) WriterTensor {
		n := 1
		for _, d := range shape {
			n *= d
		}
		return WriterTensor{Name: name, Type: kernels.TypeF32, Shape: shape, Data: make([]byte, 4*n)}
	}
	ts := []WriterTensor{f32("token_embd.weight", vocab, dim), f32("output_norm.weight", dim)}
	for l := 0; l < 2; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		ts = append(ts, f32(p+"attn_norm.weight", dim), f32(p+"attn_q.weight", dim, dim), f32(p+"attn_k.weight", kv*hs, dim),
			f32(p+"attn_v.weight", kv*hs, dim), f32(p+"attn_output.weight", dim, dim), f32(p+"ffn_norm.weight", dim),
			f32(p+"ffn_gate.weight", hid, dim), f32(p+"ffn_up.weight", hid, dim), f32(p+"ffn_down.weight", dim, hid))
		if arch == "qwen2" {
			ts = append(ts, f32(p+"attn_q.bias", dim), f32(p+"attn_k.bias", kv*hs), f32(p+"attn_v.bias", kv*hs))
		}
	}
	if mod != nil {
		mod(&kvs, &ts)
	}
	var buf bytes.Buffer
	if err := Write(&buf, kvs, ts); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSourceQwen2Config(t *testing.T) {
	s, err := OpenSource(tinyModel(t, "qwen2", nil))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := s.Config()
	want := model.Config{Dim: 16, HiddenDim: 32, NLayers: 2, NHeads: 4, NKVHeads: 2, VocabSize: 10, SeqLen: 64,
		RopeTheta: 1e6, NormEps: float64(float32(1e-6)), SharedClassifier: true, RopeStyle: model.RopeNeox, QKVBias: true}
	if c != want {
		t.Errorf("config\n got %+v\nwant %+v", c, want)
	}
	if ids := s.StopTokens(); !slices.Equal(ids, []int{7, 8}) {
		t.Errorf("stop tokens %v, want [7 8]", ids)
	}
}

func TestSourceBadModels(t *testing.T) {
	drop := func(name string) func(*[]KV, *[]WriterTensor) {
		return func(_ *[]KV, ts *[]WriterTensor) {
			*ts = slices.DeleteFunc(*ts, func(w WriterTensor) bool { return w.Name == name })
		}
	}
	setKV := func(key string, v any) func(*[]KV, *[]WriterTensor) {
		return func(kvs *[]KV, _ *[]WriterTensor) {
			for i := range *kvs {
				if (*kvs)[i].Key == key {
					(*kvs)[i].Value = MustValue(v)
					return
				}
			}
			*kvs = append(*kvs, KV{Key: key, Value: MustValue(v)})
		}
	}
	cases := []struct {
		name, arch string
		mod        func(*[]KV, *[]WriterTensor)
		want       string
	}{
		{"missing bias", "qwen2", drop("blk.1.attn_v.bias"), `no tensor "blk.1.attn_v.bias"`},
		{"missing ffn", "llama", drop("blk.1.ffn_up.weight"), `no tensor "blk.1.ffn_up.weight"`},
		{"missing hparam", "llama", func(kvs *[]KV, _ *[]WriterTensor) {
			*kvs = slices.DeleteFunc(*kvs, func(kv KV) bool { return kv.Key == "llama.block_count" })
		}, `"llama.block_count": key not found`},
		{"wrong hparam type", "llama", setKV("llama.block_count", "two"), `is string, not an integer`},
		{"shape", "llama", setKV("llama.feed_forward_length", uint32(48)), `has shape [32 16], want [48 16]`},
		{"huge hparam", "llama", setKV("llama.block_count", uint64(1<<40)), "llama.block_count = 1099511627776 is beyond any model"},
		{"NaN hparam", "llama", setKV("llama.rope.freq_base", float32(math.NaN())), "llama.rope.freq_base is NaN"},
		{"infinite hparam", "llama", setKV("llama.attention.layer_norm_rms_epsilon", math.Inf(1)), "llama.attention.layer_norm_rms_epsilon is +Inf"},
		{"yarn", "llama", setKV("llama.rope.scaling.type", "yarn"), `RoPE scaling type "yarn" is not supported`},
		{"moe", "llama", setKV("llama.expert_count", uint32(8)), "mixture-of-experts"},
		{"head dim", "llama", setKV("llama.attention.key_length", uint32(8)), "key_length = 8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := OpenSource(tinyModel(t, c.arch, c.mod))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// A tensor type the reader knows but Stride does not run is refused with
// the tensor and the type named.
func TestSourceUnsupportedType(t *testing.T) {
	// (A 1-D tensor keeps the case clear of block-size rules.)
	p := tinyModel(t, "llama", func(_ *[]KV, ts *[]WriterTensor) {
		for i := range *ts {
			if (*ts)[i].Name == "output_norm.weight" {
				(*ts)[i] = WriterTensor{Name: "output_norm.weight", Type: kernels.TypeI16, Shape: []int{16}, Data: make([]byte, 32)}
			}
		}
	})
	_, err := OpenSource(p)
	if err == nil || !strings.Contains(err.Error(), `"output_norm.weight"`) || !strings.Contains(err.Error(), "I16") {
		t.Errorf("error %v, want one naming output_norm.weight and I16", err)
	}
}
