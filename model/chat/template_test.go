package chat

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// oracleFile is one file of testdata/chat, written by
// scripts/chat-template-oracle/render.mjs: a real template and
// @huggingface/jinja's renderings of fixed conversations.
type oracleFile struct {
	Source   string `json:"source"`
	BOS      string `json:"bos_token"`
	EOS      string `json:"eos_token"`
	Template string `json:"template"`
	Cases    []struct {
		Name     string    `json:"name"`
		Messages []Message `json:"messages"`
		AddGen   bool      `json:"add_generation_prompt"`
		Text     string    `json:"text"`
	} `json:"cases"`
}

func readOracle(t *testing.T, name string) oracleFile {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "chat", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var f oracleFile
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestChatTemplatesMatchOracle: the real Llama 3 and Qwen3 templates,
// rendered here, give exactly @huggingface/jinja's text for every
// recorded conversation; so do the built-in llama-3 (all cases) and
// chatml (the cases without Qwen3's reasoning rules), and a
// tokenizer_config.json given as --chat-template FILE.
func TestChatTemplatesMatchOracle(t *testing.T) {
	for _, tc := range []struct {
		oracle, builtin string
		cases           int // how many cases the built-in must match
	}{{"llama3", "llama-3", 6}, {"qwen3", "chatml", 4}} {
		f := readOracle(t, tc.oracle)
		real, err := New(tc.oracle, f.Template, f.EOS)
		if err != nil {
			t.Fatal(err)
		}
		cfg := filepath.Join(t.TempDir(), "tokenizer_config.json")
		raw, _ := json.Marshal(map[string]any{"chat_template": f.Template, "eos_token": f.EOS})
		os.WriteFile(cfg, raw, 0o644)
		fromFile, err := Load(cfg)
		if err != nil {
			t.Fatal(err)
		}
		builtin, err := Load(tc.builtin)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range f.Cases {
			for _, r := range []struct {
				what string
				tpl  *Template
			}{{"real", real}, {"file", fromFile}, {"built-in " + tc.builtin, builtin}} {
				if r.tpl == builtin && i >= tc.cases {
					continue
				}
				got, err := r.tpl.Render(context.Background(), c.Messages, Options{AddGenerationPrompt: c.AddGen, BOS: f.BOS})
				if err != nil {
					t.Fatalf("%s %s %q: %v", tc.oracle, r.what, c.Name, err)
				}
				if got != c.Text {
					t.Errorf("%s %s %q:\n got %q\nwant %q (%s)", tc.oracle, r.what, c.Name, got, c.Text, f.Source)
				}
			}
		}
	}
	if _, err := Load("llama-9"); err == nil || !strings.Contains(err.Error(), "chatml") {
		t.Fatalf("unknown template: %v", err)
	}
}

func TestChatTemplateStops(t *testing.T) {
	for name, want := range map[string]string{"llama-3": "<|eot_id|>", "chatml": "<|im_end|>", "zephyr": "</s>", "llama-2": "</s>"} {
		tpl, err := Load(name)
		if err != nil || len(tpl.Stops()) == 0 || tpl.Stops()[0] != want {
			t.Errorf("%s: stops %v (%v), want %q first", name, tpl.Stops(), err, want)
		}
	}
}

// TestRunCChatFormat: run.c's chat renders the first turn with the
// system prompt as "[INST] <<SYS>>\n%s\n<</SYS>>\n\n%s [/INST]" and every
// other turn as "[INST] %s [/INST]".
func TestRunCChatFormat(t *testing.T) {
	if got := RunCTurn("Be brief.", "Hi", true); got != "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST]" {
		t.Errorf("first turn: %q", got)
	}
	if got := RunCTurn("Be brief.", "Hi", false); got != "[INST] Hi [/INST]" {
		t.Errorf("later turn: %q", got)
	}
	if got := RunCTurn("", "Hi", true); got != "[INST] Hi [/INST]" {
		t.Errorf("no system: %q", got)
	}
}

// FuzzLoad: any file given as --chat-template (Jinja text or
// a tokenizer_config.json) loads or fails with an error; it never
// panics. (Rendering is not fuzzed: a template may loop as long as its
// author wrote it to.)
func FuzzLoad(f *testing.F) {
	f.Add([]byte(builtinTemplates["llama-3"]))
	f.Add([]byte(`{"chat_template": "{{ messages[0]['content'] }}", "eos_token": "</s>"}`))
	f.Add([]byte(`{"chat_template": 3}`))
	f.Add([]byte("{% for m in messages %}{{ m.content"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, name := range []string{"t.jinja", "tokenizer_config.json"} {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			if tpl, err := Load(p); err == nil && tpl == nil {
				t.Fatal("nil template without an error")
			}
		}
	})
}

// TestSelect: a given spec wins over the model's own template, which wins
// over run.c's fallback; a broken own template is an error, not the
// fallback.
func TestSelect(t *testing.T) {
	own := "{% for m in messages %}<|im_start|>{{ m.content }}<|im_end|>{% endfor %}"
	for _, c := range []struct {
		spec, own, wantName string
		runC                bool
	}{
		{"chatml", own, "chatml", false},
		{"", own, "of the model", false},
		{"", "", "llama-2", true},
	} {
		tm, err := Select(c.spec, c.own, "")
		if err != nil {
			t.Fatalf("%q/%q: %v", c.spec, c.own, err)
		}
		if tm.name != c.wantName || tm.RunC() != c.runC {
			t.Errorf("%q/%q: template %q (run.c %v), want %q", c.spec, c.own, tm.name, tm.RunC(), c.wantName)
		}
	}
	if _, err := Select("", "{% for %}", ""); err == nil {
		t.Error("a broken own template was accepted")
	}
}
