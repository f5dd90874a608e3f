package chat

import (
	"strings"
	"testing"
)

// Templates that could recurse without bound (a fatal stack overflow in
// the renderer or its parser) or allocate without bound are refused with
// one line before they are compiled; everyday constructs pass.
func TestCheckTemplateBounds(t *testing.T) {
	refused := map[string]string{
		"self-recursive macro":     "{% macro f(n) %}{{ f(n+1) }}{% endmacro %}{{ f(0) }}",
		"mutually recursive":       "{% macro f() %}{{ g() }}{% endmacro %}{% macro g() %}{{ f() }}{% endmacro %}{{ f() }}",
		"macro calling its param":  "{% macro f(p) %}{{ p(p) }}{% endmacro %}{{ f(f) }}",
		"macro as a value":         "{% macro f() %}x{% endmacro %}{% set g = f %}{{ g() }}",
		"caller in a macro":        "{% macro f() %}{{ caller() }}{% endmacro %}{% call f() %}{{ f() }}{% endcall %}",
		"huge range":               "{% for i in range(1000000000) %}x{% endfor %}",
		"huge range stop":          "{% for i in range(0, 100000000, 1) %}x{% endfor %}",
		"huge repetition":          "{{ 'x' * 1000000000 }}",
		"huge repetition, flipped": "{{ 1000000000 * 'x' }}",
		"deep brackets":            "{{ " + strings.Repeat("(", 100) + "1" + strings.Repeat(")", 100) + " }}",
		"deep blocks":              strings.Repeat("{% if true %}", 100) + strings.Repeat("{% endif %}", 100),
		"long tag":                 "{{ " + strings.Repeat("not ", 5000) + "true }}",
		"huge template":            strings.Repeat("x", maxTemplateBytes+1),
	}
	for name, src := range refused {
		err := checkTemplateBounds(src)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error spans lines: %q", name, err)
		}
		if _, err := New("test", src, ""); err == nil {
			t.Errorf("%s: newChatTemplate compiled it", name)
		}
	}
	accepted := []string{
		"{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}",
		"{% macro render(m) %}[{{ m.role }}] {{ m.content | trim }}{% endmacro %}{% for m in messages %}{{ render(m) }}{% endfor %}",
		"{% for i in range(3) %}{{ i * 2 }}{% endfor %}{{ '-' * 10 }}",
		"{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ (messages[0]['content']) }}{% endif %}",
	}
	for _, src := range accepted {
		if err := checkTemplateBounds(src); err != nil {
			t.Errorf("refused %q: %v", src, err)
		}
	}
}

// TestRecursionRefusedEveryWay: no construct lets a template reach itself
// — include, import, extends (the library has no loader: they do not
// compile), call blocks and caller(), macros passed around — and nested
// filter blocks, whose filters the library applies unmetered, are refused.
func TestRecursionRefusedEveryWay(t *testing.T) {
	for name, src := range map[string]string{
		"include":             "{% include 'self' %}",
		"import":              "{% import 'self' as s %}{{ s.f() }}",
		"from import":         "{% from 'self' import f %}{{ f() }}",
		"extends":             "{% extends 'self' %}",
		"call block":          "{% macro f() %}{{ caller() }}{% endmacro %}{% call f() %}{% call f() %}x{% endcall %}{% endcall %}",
		"macro in a dict":     "{% macro f() %}x{% endmacro %}{% set d = {'g': f} %}{{ d.g() }}",
		"macro via namespace": "{% macro f() %}x{% endmacro %}{% set ns = namespace(g=f) %}{{ ns.g() }}",
		"nested filter block": "{% filter tojson %}{% filter tojson %}\"{% endfilter %}{% endfilter %}",
	} {
		if _, err := New("test", src, ""); err == nil {
			t.Errorf("%s: compiled", name)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error spans lines: %v", name, err)
		}
	}
}
