package chat

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stride-lm/stride/tensor/testfixture"
)

// renderSeeds are FuzzRender's seeds: the built-ins and the hostile
// shapes of TestBudgetRefusesComputedWork, small enough to run fast.
var renderSeeds = map[string][2]string{
	"chatml":     {builtinTemplates["chatml"], "hi <|im_end|>"},
	"llama3":     {builtinTemplates["llama-3"], "  padded  "},
	"zephyr":     {builtinTemplates["zephyr"], ""},
	"range":      {"{% for i in range(2**40) %}{% endfor %}", "x"},
	"repeat":     {"{{ m * ((2**40) | int) }}{% set m = messages[0].content %}", "ab"},
	"doubling":   {"{% set ns = namespace(s='x') %}{% for i in range(80) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}", ""},
	"replace":    {"{{ messages[0].content.replace('', 'yy').replace('', 'zz') }}", "abc"},
	"join":       {"{{ range(5000) | join(messages[0].content) }}", "sep"},
	"indent":     {"{{ messages[0].content | indent(-4) }}", "a\nb"},
	"map":        {"{{ messages | map(attribute='content') | map('indent', 9) | list }}", "q"},
	"filter":     {"{% filter upper %}{{ messages[0].content }}{% endfilter %}", "up"},
	"nested":     {"{% filter tojson %}{% filter tojson %}\"{% endfilter %}{% endfilter %}", ""},
	"macro":      {"{% macro f(n) %}[{{ n }}]{% endmacro %}{% for m in messages %}{{ f(m.content) }}{% endfor %}", "m"},
	"unbalanced": {"{{ messages[0].content[:3] }}", "<|im_end|>"},
}

// TestRenderFuzzCorpusCurrent keeps testdata/fuzz/FuzzRender equal to
// renderSeeds.
func TestRenderFuzzCorpusCurrent(t *testing.T) {
	want := map[string][]byte{}
	for name, s := range renderSeeds {
		want[name] = testfixture.CorpusEntry(s[0], s[1])
	}
	testfixture.CheckCorpus(t, filepath.Join("testdata", "fuzz", "FuzzRender"), want, "TestRenderFuzzCorpusCurrent")
}

// FuzzRender: any template and message either fails to compile, or
// renders (or fails) within its budget and a deadline, with the output
// inside the output cap; the renderer never panics and never runs on.
func FuzzRender(f *testing.F) {
	for _, s := range renderSeeds {
		f.Add(s[0], s[1])
	}
	b := Budget{OutputBytes: 1 << 20, Iterations: 1 << 14, RangeLen: 1 << 12, StringBytes: 1 << 18}
	f.Fuzz(func(t *testing.T, src, content string) {
		tpl, err := New("fuzz", src, "</s>")
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		out, err := tpl.Render(ctx, []Message{{Role: "user", Content: content}, {Role: "assistant", Content: content}}, Options{Budget: b})
		if time.Since(start) > 10*time.Second {
			t.Fatalf("rendering ran %v past its deadline", time.Since(start))
		}
		if limit := 6*(b.OutputBytes+b.StringBytes) + len(src); err == nil && len(out) > limit {
			t.Fatalf("%d bytes of output, over %d", len(out), limit)
		}
	})
}
