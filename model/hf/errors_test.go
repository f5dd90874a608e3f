package hf

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/mapfile"
	"github.com/stride-lm/stride/model/safetensors"
)

// editJSON rewrites the JSON object at path through edit.
func editJSON(t *testing.T, path string, edit func(map[string]any)) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	writeJSON(t, path, m)
}

// A directory Stride cannot run is refused at Open with one line that
// names the directory and what is wrong.
func TestOpenRejects(t *testing.T) {
	for _, c := range []struct {
		name  string
		spec  synthSpec
		setup func(t *testing.T, dir string)
		want  string
	}{
		{"no config.json", qwen2Spec, func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, ConfigFile)) }, "is a directory without config.json"},
		{"not a directory", qwen2Spec, func(t *testing.T, dir string) {
			os.RemoveAll(dir)
			os.WriteFile(dir, []byte("{}"), 0o644)
		}, "not a directory"},
		{"no directory", qwen2Spec, func(t *testing.T, dir string) { os.RemoveAll(dir) }, "no such file or directory"},
		{"unsupported architecture", qwen2Spec, func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, ConfigFile), func(m map[string]any) { m["architectures"] = []string{"MistralForCausalLM"} })
		}, "architecture [MistralForCausalLM] is not supported"},
		{"no architectures", qwen2Spec, func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, ConfigFile), func(m map[string]any) { delete(m, "architectures") })
		}, `no "architectures" entry (model_type "qwen2")`},
		{"missing key", qwen2Spec, func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, ConfigFile), func(m map[string]any) { delete(m, "hidden_size"); delete(m, "rms_norm_eps") })
		}, "missing [hidden_size rms_norm_eps]"},
		{"head_dim", qwen2Spec, func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, ConfigFile), func(m map[string]any) { m["head_dim"] = 16 })
		}, "head_dim 16 differs"},
		{"yarn", qwen2Spec, func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, ConfigFile), func(m map[string]any) { m["rope_scaling"] = map[string]any{"type": "yarn", "factor": 4} })
		}, `rope_scaling type "yarn" is not supported`},
		{"linear without factor", llama3Spec, func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, ConfigFile), func(m map[string]any) { m["rope_scaling"] = map[string]any{"rope_type": "linear"} })
		}, `rope_scaling "linear" needs a positive factor`},
		{"llama3 negative factor", llama3Spec, func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, ConfigFile), func(m map[string]any) { m["rope_scaling"].(map[string]any)["factor"] = -8 })
		}, `rope_scaling "llama3" needs a positive factor`},
		{"llama3 missing factors", llama3Spec, func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, ConfigFile), func(m map[string]any) { delete(m["rope_scaling"].(map[string]any), "high_freq_factor") })
		}, `rope_scaling "llama3" needs low_freq_factor, high_freq_factor and original_max_position_embeddings`},
		{"llama3 factors out of order", llama3Spec, func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, ConfigFile), func(m map[string]any) { m["rope_scaling"].(map[string]any)["high_freq_factor"] = 0.5 })
		}, `rope_scaling "llama3": need 0 < low_freq_factor (1) < high_freq_factor (0.5)`},
		{"eos list of strings", qwen2Spec, func(t *testing.T, dir string) {
			writeJSON(t, filepath.Join(dir, GenerationConfigFile), map[string]any{"eos_token_id": []string{"x"}})
		}, "generation_config.json: token ids must be integers"},
		{"sliding window", qwen2Spec, func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, ConfigFile), func(m map[string]any) { m["use_sliding_window"] = true })
		}, "use_sliding_window"},
		{"gelu", qwen2Spec, func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, ConfigFile), func(m map[string]any) { m["hidden_act"] = "gelu" })
		}, `hidden_act "gelu"`},
		{"llama attention_bias", llama3Spec, func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, ConfigFile), func(m map[string]any) { m["attention_bias"] = true })
		}, "attention_bias = true"},
		{"bad eos", qwen2Spec, func(t *testing.T, dir string) {
			writeJSON(t, filepath.Join(dir, GenerationConfigFile), map[string]any{"eos_token_id": "x"})
		}, "generation_config.json"},
		{"bad JSON", qwen2Spec, func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, ConfigFile), []byte(`{"hidden_size": 3`), 0o644)
		}, "config.json: unexpected EOF"},
		{"trailing bytes after config.json", qwen2Spec, func(t *testing.T, dir string) {
			f, _ := os.OpenFile(filepath.Join(dir, ConfigFile), os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString("\n{\"hidden_size\": 999}\n")
			f.Close()
		}, "config.json: 21 bytes follow the JSON value"},
		{"trailing bytes after generation_config.json", qwen2Spec, func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, GenerationConfigFile), []byte(`{"eos_token_id": 1} x`), 0o644)
		}, "generation_config.json: 1 bytes follow the JSON value"},
		{"key of the wrong type", qwen2Spec, func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, ConfigFile), func(m map[string]any) { m["rope_theta"] = "1e6" })
		}, "rope_theta"},
		{"config too large", qwen2Spec, func(t *testing.T, dir string) {
			os.Truncate(filepath.Join(dir, ConfigFile), maxJSONSize+1) // sparse: nothing is written
		}, "bytes is larger than the 16777216 a JSON file of a checkpoint may have"},
		{"config is a directory", qwen2Spec, func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, ConfigFile))
			os.Mkdir(filepath.Join(dir, ConfigFile), 0o755)
		}, "config.json: not a regular file"},
		{"no weights", qwen2Spec, func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, WeightsFile)) }, "model.safetensors: no such file"},
		{"missing tensor", qwen2Spec, func(t *testing.T, dir string) {
			rewrite(t, dir, func(ts []safetensors.WriterTensor) []safetensors.WriterTensor { return ts[:len(ts)-1] })
		}, "no tensor model.norm.weight"},
		{"unknown tensor", qwen2Spec, func(t *testing.T, dir string) {
			rewrite(t, dir, func(ts []safetensors.WriterTensor) []safetensors.WriterTensor {
				return append(ts, safetensors.WriterTensor{Name: "model.layers.0.self_attn.o_proj.bias", DType: safetensors.F32, Shape: []int{1}, Data: make([]byte, 4)})
			})
		}, `tensor "model.layers.0.self_attn.o_proj.bias" is not part of Qwen2ForCausalLM`},
		{"layer out of range", qwen2Spec, func(t *testing.T, dir string) {
			rewrite(t, dir, func(ts []safetensors.WriterTensor) []safetensors.WriterTensor {
				return append(ts, safetensors.WriterTensor{Name: "model.layers.2.input_layernorm.weight", DType: safetensors.F32, Shape: []int{1}, Data: make([]byte, 4)})
			})
		}, `"model.layers.2.input_layernorm.weight" is not part`},
		{"wrong shape", qwen2Spec, func(t *testing.T, dir string) {
			rewrite(t, dir, func(ts []safetensors.WriterTensor) []safetensors.WriterTensor {
				ts[len(ts)-1].Shape = []int{16, 2}
				return ts
			})
		}, "tensor model.norm.weight has shape [16 2], want [32]"},
		{"integer dtype", qwen2Spec, func(t *testing.T, dir string) {
			rewrite(t, dir, func(ts []safetensors.WriterTensor) []safetensors.WriterTensor {
				ts[len(ts)-1].DType = safetensors.I32
				return ts
			})
		}, "has dtype I32; F32, F16 and BF16 are supported"},
		{"untied without lm_head", qwen2Spec, func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, ConfigFile), func(m map[string]any) { m["tie_word_embeddings"] = false })
		}, "no tensor lm_head.weight (tie_word_embeddings is false)"},
		{"truncated safetensors", qwen2Spec, func(t *testing.T, dir string) {
			p := filepath.Join(dir, WeightsFile)
			st, _ := os.Stat(p)
			os.Truncate(p, st.Size()-1)
		}, "byte data buffer"},
		{"shard outside the directory", llama3Spec, func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, IndexFile), func(m map[string]any) {
				m["weight_map"].(map[string]any)["model.norm.weight"] = "../model-00001-of-00003.safetensors"
			})
		}, "which is not a .safetensors file of the directory"},
		{"index names the wrong shard", llama3Spec, func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, IndexFile), func(m map[string]any) {
				wm := m["weight_map"].(map[string]any)
				if wm["model.norm.weight"] == "model-00001-of-00003.safetensors" {
					wm["model.norm.weight"] = "model-00002-of-00003.safetensors"
				} else {
					wm["model.norm.weight"] = "model-00001-of-00003.safetensors"
				}
			})
		}, `names tensor "model.norm.weight" in`},
		{"missing shard", llama3Spec, func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "model-00002-of-00003.safetensors")) }, "model-00002-of-00003.safetensors: no such file"},
		{"empty index", llama3Spec, func(t *testing.T, dir string) { writeJSON(t, filepath.Join(dir, IndexFile), map[string]any{}) }, "has no weight_map"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, _ := writeSynth(t, c.spec)
			c.setup(t, dir)
			_, err := Open(dir, model.LoadOptions{}, Options{})
			if err == nil || !strings.HasPrefix(err.Error(), "checkpoint "+dir+": ") || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("got %v, want one line naming the directory and saying %q", err, c.want)
			}
		})
	}
}

// rewrite replaces the directory's model.safetensors by edit of its
// tensors.
func rewrite(t *testing.T, dir string, edit func([]safetensors.WriterTensor) []safetensors.WriterTensor) {
	t.Helper()
	p := filepath.Join(dir, WeightsFile)
	f, err := safetensors.Open(p, true)
	if err != nil {
		t.Fatal(err)
	}
	var ts []safetensors.WriterTensor
	for _, ti := range f.Tensors {
		d, err := f.Data(ti)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, safetensors.WriterTensor{Name: ti.Name, DType: ti.DType, Shape: ti.Shape, Data: append([]byte(nil), d...)})
	}
	f.Close()
	ts = edit(ts)
	writeTensors(t, dir, ts, 0)
}

// eos_token_id may be an int or a list; generation_config.json's wins
// over config.json's; ids outside the vocabulary are dropped; no ids at
// all means no stop (not run.c's stop at 1).
func TestStopTokens(t *testing.T) {
	for _, c := range []struct {
		config, generation map[string]any
		want               []int
	}{
		{map[string]any{"eos_token_id": 2, "bos_token_id": 1}, nil, []int{2, 1}},
		{map[string]any{"eos_token_id": 2}, map[string]any{"eos_token_id": []int{7, 9, 7}}, []int{7, 9}},
		{map[string]any{"eos_token_id": []int{4, 99}}, map[string]any{"bos_token_id": 6}, []int{4, 6}},
		{map[string]any{"eos_token_id": nil}, nil, []int{}},
	} {
		spec := qwen2Spec
		spec.generation = c.generation
		spec.extra = c.config
		dir, _ := writeSynth(t, spec)
		src, err := Open(dir, model.LoadOptions{}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		got := src.StopTokens()
		src.Close()
		if got == nil || len(got) != len(c.want) || (len(got) > 0 && !slicesEqual(got, c.want)) {
			t.Errorf("config %v, generation %v: stops %v, want %v", c.config, c.generation, got, c.want)
		}
	}
}

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A tied lm_head stored anyway is ignored (transformers ties it), and the
// directory still runs with the embedding as the classifier.
func TestTiedLMHeadStored(t *testing.T) {
	spec := qwen2Spec
	spec.storeTiedLMHead = true
	dir, _ := writeSynth(t, spec)
	m, _ := load(t, dir, RotaryNeox, model.LoadOptions{})
	if !m.Config.SharedClassifier || m.Weights.Classifier != m.Weights.TokenEmbedding {
		t.Error("tie_word_embeddings with a stored lm_head: classifier not tied")
	}
}

// NoMmap reads the shards: nothing is mapped, the logits are the same.
func TestNoMmap(t *testing.T) {
	dir, _ := writeSynth(t, llama3Spec)
	tokens := []int{1, 5, 9, 3, 7}
	a, _ := load(t, dir, RotaryNeox, model.LoadOptions{})
	b, src := load(t, dir, RotaryNeox, model.LoadOptions{NoMmap: true})
	if src.MappedBytes() != 0 {
		t.Errorf("NoMmap: %d bytes mapped", src.MappedBytes())
	}
	if d := maxDiff(logits(t, a, tokens), logits(t, b, tokens)); d != 0 {
		t.Errorf("read and mapped logits differ by %g", d)
	}
}

// A shard truncated by another process after Open faults when FromSource
// touches its mapping: a one-line error, not SIGBUS, through both
// rotary routes (the un-permuting copy reads the mapping too).
func TestTruncatedWhileMapped(t *testing.T) {
	if !mapfile.Supported {
		t.Skip("skipping: no mmap on this platform")
	}
	for _, rot := range []Rotary{RotaryNeox, RotaryUnpermute} {
		dir, _ := writeSynth(t, qwen2Spec)
		src, err := Open(dir, model.LoadOptions{}, Options{Rotary: rot})
		if err != nil {
			t.Fatal(err)
		}
		if src.MappedBytes() == 0 {
			t.Skip("skipping: the file was read, not mapped")
		}
		if err := os.Truncate(filepath.Join(dir, WeightsFile), 0); err != nil {
			t.Fatal(err)
		}
		m, err := model.FromSource(src, model.LoadOptions{})
		if err == nil {
			m.Close()
			t.Fatal("built a model from a file truncated under its mapping")
		}
		var fault *mapfile.FaultError
		if !errors.As(err, &fault) || !strings.HasPrefix(err.Error(), "checkpoint "+dir+": ") || strings.Contains(err.Error(), "\n") {
			t.Fatalf("rotary %d: got %v, want a one-line memory fault error", rot, err)
		}
	}
}
