package hf

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/safetensors"
	"github.com/stride-lm/stride/tensor"
)

// synthSpec is a small Hugging Face model a test writes to a directory.
type synthSpec struct {
	arch                          string // LlamaForCausalLM or Qwen2ForCausalLM
	dim, hidden, layers, heads    int
	kvHeads, vocab, seqLen        int
	theta, eps                    float64
	tied, bias                    bool
	dtype                         safetensors.DType
	shards                        int            // 0: one model.safetensors; n: an index over n shards
	ropeScaling                   map[string]any // config.json's rope_scaling, or nil
	extra                         map[string]any // more config.json keys
	generation                    map[string]any // generation_config.json, or nil
	llama3                        [4]float64     // factor, low, high, original context (reference only)
	storeInvFreq, storeTiedLMHead bool
}

// synthWeights are the stored values, widened exactly to float64, under
// Hugging Face names; [out][in] matrices are row-major.
type synthWeights map[string][]float64

// writeSynth writes spec as a checkpoint directory and returns it with
// its weights.
func writeSynth(t *testing.T, spec synthSpec) (string, synthWeights) {
	t.Helper()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(7, uint64(spec.dim*1000+spec.vocab)))
	hd := spec.dim / spec.heads
	w := synthWeights{}
	type stored struct {
		name  string
		shape []int
	}
	var order []stored
	add := func(name string, scale, offset float64, shape ...int) {
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]float64, n)
		for i := range v {
			v[i] = offset + scale*rng.NormFloat64()
		}
		w[name] = v
		order = append(order, stored{name, shape})
	}
	add("model.embed_tokens.weight", 1, 0, spec.vocab, spec.dim)
	for l := 0; l < spec.layers; l++ {
		p := fmt.Sprintf("model.layers.%d.", l)
		add(p+"input_layernorm.weight", 0.1, 1, spec.dim)
		add(p+"self_attn.q_proj.weight", 0.3, 0, spec.heads*hd, spec.dim)
		add(p+"self_attn.k_proj.weight", 0.3, 0, spec.kvHeads*hd, spec.dim)
		add(p+"self_attn.v_proj.weight", 0.3, 0, spec.kvHeads*hd, spec.dim)
		if spec.bias {
			add(p+"self_attn.q_proj.bias", 0.5, 0, spec.heads*hd)
			add(p+"self_attn.k_proj.bias", 0.5, 0, spec.kvHeads*hd)
			add(p+"self_attn.v_proj.bias", 0.5, 0, spec.kvHeads*hd)
		}
		add(p+"self_attn.o_proj.weight", 0.2, 0, spec.dim, spec.heads*hd)
		add(p+"post_attention_layernorm.weight", 0.1, 1, spec.dim)
		add(p+"mlp.gate_proj.weight", 0.2, 0, spec.hidden, spec.dim)
		add(p+"mlp.up_proj.weight", 0.2, 0, spec.hidden, spec.dim)
		add(p+"mlp.down_proj.weight", 0.2, 0, spec.dim, spec.hidden)
		if spec.storeInvFreq {
			add(p+"self_attn.rotary_emb.inv_freq", 1, 0, hd/2)
		}
	}
	add("model.norm.weight", 0.1, 1, spec.dim)
	if !spec.tied || spec.storeTiedLMHead {
		add("lm_head.weight", 0.3, 0, spec.vocab, spec.dim)
	}
	// Round to the stored dtype; the reference uses the rounded values.
	var ts []safetensors.WriterTensor
	for _, s := range order {
		v := w[s.name]
		var data []byte
		for i, x := range v {
			switch spec.dtype {
			case safetensors.F32:
				data = binary.LittleEndian.AppendUint32(data, math.Float32bits(float32(x)))
				v[i] = float64(float32(x))
			case safetensors.BF16:
				b := tensor.BF16Bits(float32(x))
				data = binary.LittleEndian.AppendUint16(data, b)
				v[i] = float64(tensor.BF16Float(b))
			case safetensors.F16:
				b := tensor.F16Bits(float32(x))
				data = binary.LittleEndian.AppendUint16(data, b)
				v[i] = float64(tensor.F16Float(b))
			}
		}
		ts = append(ts, safetensors.WriterTensor{Name: s.name, DType: spec.dtype, Shape: s.shape, Data: data})
	}
	writeTensors(t, dir, ts, spec.shards)
	cfg := map[string]any{
		"architectures": []string{spec.arch}, "hidden_size": spec.dim, "intermediate_size": spec.hidden,
		"num_hidden_layers": spec.layers, "num_attention_heads": spec.heads, "num_key_value_heads": spec.kvHeads,
		"vocab_size": spec.vocab, "max_position_embeddings": spec.seqLen, "rms_norm_eps": spec.eps,
		"rope_theta": spec.theta, "tie_word_embeddings": spec.tied, "hidden_act": "silu", "head_dim": hd,
		"rope_scaling": spec.ropeScaling,
	}
	for k, v := range spec.extra {
		cfg[k] = v
	}
	writeJSON(t, filepath.Join(dir, ConfigFile), cfg)
	if spec.generation != nil {
		writeJSON(t, filepath.Join(dir, GenerationConfigFile), spec.generation)
	}
	return dir, w
}

// writeTensors writes ts as model.safetensors, or as n shards with an
// index (tensors dealt round-robin, so a layer spans shards).
func writeTensors(t *testing.T, dir string, ts []safetensors.WriterTensor, n int) {
	t.Helper()
	write := func(name string, ts []safetensors.WriterTensor) {
		var buf bytes.Buffer
		if err := safetensors.Write(&buf, ts, map[string]string{"format": "pt"}); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if n == 0 {
		write(WeightsFile, ts)
		return
	}
	parts := make([][]safetensors.WriterTensor, n)
	weightMap := map[string]string{}
	for i, x := range ts {
		parts[i%n] = append(parts[i%n], x)
		weightMap[x.Name] = fmt.Sprintf("model-%05d-of-%05d.safetensors", i%n+1, n)
	}
	for i, p := range parts {
		write(fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, n), p)
	}
	writeJSON(t, filepath.Join(dir, IndexFile), map[string]any{"metadata": map[string]any{"total_size": 0}, "weight_map": weightMap})
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// referenceLogits is transformers' LlamaForCausalLM / Qwen2ForCausalLM
// forward pass, in float64, written from its modeling code: RMSNorm
// (x·rsqrt(mean x²+ε)·w), q/k/v projections (+ bias for Qwen2),
// rotate-half RoPE on the stored layout with inv_freq_j = θ^(−2j/d)
// (Llama 3's _compute_llama3_parameters when llama3 is set), causal GQA
// attention with softmax(q·k/√d), o_proj, SwiGLU MLP
// (down(silu(gate x)·up x)), final norm, lm_head (tied: the embedding).
// It returns the logits of every position.
func referenceLogits(spec synthSpec, w synthWeights, tokens []int) [][]float64 {
	d, hd := spec.dim, spec.dim/spec.heads
	half := hd / 2
	invFreq := make([]float64, half)
	for j := range invFreq {
		invFreq[j] = 1 / math.Pow(spec.theta, float64(2*j)/float64(hd))
	}
	if f := spec.llama3; f[0] != 0 {
		factor, low, high, orig := f[0], f[1], f[2], f[3]
		lowWavelen, highWavelen := orig/low, orig/high
		for j, inv := range invFreq {
			wavelen := 2 * math.Pi / inv
			scaled := inv
			if wavelen > lowWavelen {
				scaled = inv / factor
			}
			if !(wavelen < highWavelen) && !(wavelen > lowWavelen) {
				smooth := (orig/wavelen - low) / (high - low)
				scaled = (1-smooth)*scaled/factor + smooth*scaled
			}
			invFreq[j] = scaled
		}
	}
	matvec := func(m []float64, x []float64, rows int) []float64 {
		cols := len(x)
		out := make([]float64, rows)
		for r := range out {
			var s float64
			for c := 0; c < cols; c++ {
				s += m[r*cols+c] * x[c]
			}
			out[r] = s
		}
		return out
	}
	rmsnorm := func(x, g []float64) []float64 {
		var ss float64
		for _, v := range x {
			ss += v * v
		}
		r := 1 / math.Sqrt(ss/float64(len(x))+spec.eps)
		out := make([]float64, len(x))
		for i := range x {
			out[i] = x[i] * r * g[i]
		}
		return out
	}
	rope := func(v []float64, pos int) {
		for h := 0; h < len(v)/hd; h++ {
			x := v[h*hd : (h+1)*hd]
			rot := make([]float64, hd)
			for j := 0; j < half; j++ { // rotate_half: cat(-x2, x1)
				rot[j], rot[j+half] = -x[j+half], x[j]
			}
			for i := range x {
				a := float64(pos) * invFreq[i%half]
				x[i] = x[i]*math.Cos(a) + rot[i]*math.Sin(a)
			}
		}
	}
	type kv struct{ k, v [][]float64 }
	caches := make([]kv, spec.layers)
	var out [][]float64
	for pos, tok := range tokens {
		x := slices.Clone(w["model.embed_tokens.weight"][tok*d : (tok+1)*d])
		for l := 0; l < spec.layers; l++ {
			p := fmt.Sprintf("model.layers.%d.", l)
			h := rmsnorm(x, w[p+"input_layernorm.weight"])
			q := matvec(w[p+"self_attn.q_proj.weight"], h, spec.heads*hd)
			k := matvec(w[p+"self_attn.k_proj.weight"], h, spec.kvHeads*hd)
			v := matvec(w[p+"self_attn.v_proj.weight"], h, spec.kvHeads*hd)
			if spec.bias {
				for i, b := range w[p+"self_attn.q_proj.bias"] {
					q[i] += b
				}
				for i, b := range w[p+"self_attn.k_proj.bias"] {
					k[i] += b
				}
				for i, b := range w[p+"self_attn.v_proj.bias"] {
					v[i] += b
				}
			}
			rope(q, pos)
			rope(k, pos)
			caches[l].k = append(caches[l].k, k)
			caches[l].v = append(caches[l].v, v)
			att := make([]float64, spec.heads*hd)
			group := spec.heads / spec.kvHeads
			for hh := 0; hh < spec.heads; hh++ {
				kvh := hh / group
				scores := make([]float64, pos+1)
				mx := math.Inf(-1)
				for s := 0; s <= pos; s++ {
					var dot float64
					for i := 0; i < hd; i++ {
						dot += q[hh*hd+i] * caches[l].k[s][kvh*hd+i]
					}
					scores[s] = dot / math.Sqrt(float64(hd))
					mx = max(mx, scores[s])
				}
				var sum float64
				for s := range scores {
					scores[s] = math.Exp(scores[s] - mx)
					sum += scores[s]
				}
				for s := range scores {
					for i := 0; i < hd; i++ {
						att[hh*hd+i] += scores[s] / sum * caches[l].v[s][kvh*hd+i]
					}
				}
			}
			o := matvec(w[p+"self_attn.o_proj.weight"], att, d)
			for i := range x {
				x[i] += o[i]
			}
			h = rmsnorm(x, w[p+"post_attention_layernorm.weight"])
			g := matvec(w[p+"mlp.gate_proj.weight"], h, spec.hidden)
			u := matvec(w[p+"mlp.up_proj.weight"], h, spec.hidden)
			for i := range g {
				g[i] = g[i] / (1 + math.Exp(-g[i])) * u[i]
			}
			dn := matvec(w[p+"mlp.down_proj.weight"], g, d)
			for i := range x {
				x[i] += dn[i]
			}
		}
		x = rmsnorm(x, w["model.norm.weight"])
		head := w["lm_head.weight"]
		if spec.tied {
			head = w["model.embed_tokens.weight"]
		}
		out = append(out, matvec(head, x, spec.vocab))
	}
	return out
}

var qwen2Spec = synthSpec{
	arch: "Qwen2ForCausalLM", dim: 32, hidden: 48, layers: 2, heads: 4, kvHeads: 2, vocab: 40, seqLen: 64,
	theta: 1e6, eps: 1e-6, tied: true, bias: true, dtype: safetensors.F32,
	extra:      map[string]any{"model_type": "qwen2", "use_sliding_window": false, "sliding_window": 32, "torch_dtype": "float32"},
	generation: map[string]any{"bos_token_id": 3, "eos_token_id": []int{5, 7}},
}

var llama3Spec = synthSpec{
	arch: "LlamaForCausalLM", dim: 64, hidden: 80, layers: 2, heads: 4, kvHeads: 1, vocab: 50, seqLen: 64,
	theta: 10000, eps: 1e-5, tied: false, dtype: safetensors.BF16, shards: 3,
	ropeScaling: map[string]any{"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
		"high_freq_factor": 4.0, "original_max_position_embeddings": 16},
	llama3:       [4]float64{8, 1, 4, 16},
	extra:        map[string]any{"bos_token_id": 1, "eos_token_id": 2, "attention_bias": false, "mlp_bias": false},
	storeInvFreq: true,
}

// A synthetic Qwen2-shaped directory (q/k/v biases, tied embeddings,
// rotate-half RoPE, θ = 1e6, GQA) and a Llama 3-shaped one (bf16 in three
// shards with an index, an untied lm_head, MQA, llama3 rope_scaling,
// stored inv_freq buffers) give the logits of the float64 reference,
// through both rotary routes, at every position of a 40-token prompt.
func TestSyntheticMatchesReference(t *testing.T) {
	for _, c := range []struct {
		name  string
		spec  synthSpec
		stops []int
	}{{"qwen2", qwen2Spec, []int{5, 7, 3}}, {"llama3", llama3Spec, []int{2, 1}}} {
		dir, w := writeSynth(t, c.spec)
		rng := rand.New(rand.NewPCG(1, 2))
		tokens := make([]int, 40)
		for i := range tokens {
			tokens[i] = rng.IntN(c.spec.vocab)
		}
		want := referenceLogits(c.spec, w, tokens)
		var scale float64
		for _, row := range want {
			for _, v := range row {
				scale = max(scale, math.Abs(v))
			}
		}
		for _, rot := range []Rotary{RotaryAuto, RotaryNeox, RotaryUnpermute} {
			m, src := load(t, dir, rot, model.LoadOptions{})
			if !slices.Equal(src.StopTokens(), c.stops) {
				t.Errorf("%s: stop ids %v, want %v", c.name, src.StopTokens(), c.stops)
			}
			if m.Config.SharedClassifier != c.spec.tied || m.Config.QKVBias != c.spec.bias {
				t.Errorf("%s: shared classifier %v, biases %v", c.name, m.Config.SharedClassifier, m.Config.QKVBias)
			}
			if (m.Weights.RopeFreqs != nil) != (c.spec.llama3[0] != 0) {
				t.Errorf("%s: rope_freqs %v", c.name, m.Weights.RopeFreqs != nil)
			}
			got := logits(t, m, tokens)
			v := c.spec.vocab
			var worst float64
			for p := range tokens {
				for i := 0; i < v; i++ {
					worst = max(worst, math.Abs(float64(got[p*v+i])-want[p][i]))
				}
			}
			t.Logf("%s rot %d worst %g scale %g", c.name, rot, worst, scale)
			if worst > 2e-5*max(scale, 1) {
				t.Errorf("%s, rotary %d: max |logit − reference| = %g (logit scale %g)", c.name, rot, worst, scale)
			}
		}
	}
}

// With --weights equal to the stored dtype, every weight matrix but the
// fused q/k/v is a view of the mapping: the bytes copied out of it are
// exactly the fused WQKV (and the fused q/k/v biases, and the norms
// when they must be widened to float32), for F32, F16 and BF16 files.
func TestMatricesAreViews(t *testing.T) {
	for _, c := range []struct {
		dt  safetensors.DType
		wdt tensor.DType
	}{{safetensors.F32, tensor.F32}, {safetensors.F16, tensor.F16}, {safetensors.BF16, tensor.BF16}} {
		spec := qwen2Spec
		spec.dtype = c.dt
		dir, _ := writeSynth(t, spec)
		m, src := load(t, dir, RotaryAuto, model.LoadOptions{WeightDType: c.wdt})
		size := int64(c.dt.Size())
		hd := spec.dim / spec.heads
		qkvRows := int64((spec.heads + 2*spec.kvHeads) * hd)
		want := int64(spec.layers) * (qkvRows*int64(spec.dim)*size + qkvRows*4) // WQKV, BQKV (float32)
		if c.dt != safetensors.F32 {
			want += int64(2*spec.layers+1) * int64(spec.dim) * 4 // norms widened to float32
		}
		mapped, copied := m.MappedBytes()
		if mapped != src.MappedBytes() || mapped == 0 || copied != want {
			t.Errorf("%s: mapped %d (source %d), copied %d, want %d", c.dt, mapped, src.MappedBytes(), copied, want)
		}
	}
}
