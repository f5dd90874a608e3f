package chat

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// renderSrc compiles src and renders it for one user message under b.
func renderSrc(t *testing.T, ctx context.Context, src string, b Budget) (string, error) {
	t.Helper()
	tpl, err := New("test", src, "")
	if err != nil {
		t.Fatalf("compile %q: %v", src, err)
	}
	return tpl.Render(ctx, []Message{{Role: "user", Content: "hi"}}, Options{Budget: b})
}

// TestBudgetRefusesComputedWork: what the source guard cannot see (a
// bound computed while rendering) is refused by the meter before the work
// is done, with one line naming the cap. Each of these ran until killed,
// or took gigabytes, before the budget.
func TestBudgetRefusesComputedWork(t *testing.T) {
	for name, tc := range map[string]struct{ src, cap string }{
		"computed range":           {"{% for i in range(2**31) %}{% endfor %}", "Budget.RangeLen"},
		"computed range, negative": {"{% for i in range(0, -2**31, -1) %}{% endfor %}", "Budget.RangeLen"},
		"nested loops":             {"{% for i in range(60000) %}{% for j in range(60000) %}{% endfor %}{% endfor %}", "Budget.Iterations"},
		"computed repetition":      {"{{ 'x' * ((2**31) | int) }}", "Budget.StringBytes"},
		"repetition, variable":     {"{% set n = (2**20) | int %}{{ ('ab' * n) * n }}", "Budget.StringBytes"},
		"doubling by ~":            {"{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}", "Budget.StringBytes"},
		"doubling by +":            {"{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}", "Budget.StringBytes"},
		"replace method":           {"{% set s = 'x' * 4096 %}{{ s.replace('x', s).replace('x', s) }}", "Budget.StringBytes"},
		"replace filter":           {"{% set s = 'x' * 4096 %}{{ s | replace('x', s) | replace('x', s) }}", "Budget.StringBytes"},
		"join":                     {"{% set s = 'x' * 65536 %}{% set l = [] %}{% for i in range(4096) %}{% set _ = l.append(s) %}{% endfor %}{{ l | join('') }}", "Budget.StringBytes"},
		"join separator":           {"{{ range(65536) | join('y' * 65536) }}", "Budget.StringBytes"},
		"indent":                   {"{{ ('a\n' * 60000) | indent(60000) }}", "Budget.StringBytes"},
		"output":                   {"{% set s = 'x' * 65536 %}{% for i in range(60000) %}{{ s }}{% endfor %}", "Budget.OutputBytes"},
		"loop text":                {"{% for i in range(65536) %}" + strings.Repeat("t", 4096) + "{% endfor %}", "Budget.OutputBytes"},
		"list printed":             {"{% set s = 'x' * 65536 %}{% set l = [] %}{% for i in range(4096) %}{% set _ = l.append(s) %}{% endfor %}{{ l }}", "Budget.StringBytes"},
		"list concatenated with ~": {"{% set s = 'x' * 65536 %}{% set l = [] %}{% for i in range(4096) %}{% set _ = l.append(s) %}{% endfor %}{{ 'a' ~ l }}", "Budget.StringBytes"},
		"format":                   {"{% set s = 'x' * 16384 %}{% set f = '{0}' * 4096 %}{{ f.format(s) }}", "Budget.StringBytes"},
		"tojson indent":            {"{{ range(60000) | list | tojson(indent=100000) }}", "Budget.StringBytes"},
		"tojson separators":        {"{{ range(60000) | list | tojson(separators=['x' * ((2**17) | int), ':']) }}", "Budget.StringBytes"},
		"split":                    {"{{ ('a' * 60000 * 100).split('') | length }}", "Budget.StringBytes"},
		"list of characters":       {"{% set s = 'ab' * 60000 %}{{ (s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s) | list | length }}", "Budget.StringBytes"},
		"list through tojson":      {"{% set s = 'x' * 65536 %}{% set l = [] %}{% for i in range(4096) %}{% set _ = l.append(s) %}{% endfor %}{{ l | tojson }}", "Budget.StringBytes"},
	} {
		start := time.Now()
		_, err := renderSrc(t, context.Background(), tc.src, Budget{})
		if err == nil || !strings.Contains(err.Error(), tc.cap) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v, want one line naming %s", name, err, tc.cap)
		}
		if d := time.Since(start); d > 30*time.Second { // generous: -race on a shared machine
			t.Errorf("%s: took %v to refuse", name, d)
		}
	}
}

// TestBudgetLibraryPanics: inputs on which the library itself panics
// (a negative repetition or indent width) are one error, or Python's
// answer, never a crash.
func TestBudgetLibraryPanics(t *testing.T) {
	if out, err := renderSrc(t, context.Background(), "[{{ 'x' * -3 }}]", Budget{}); err != nil || out != "[]" {
		t.Errorf("'x' * -3: %q, %v; want Python's empty string", out, err)
	}
	if _, err := renderSrc(t, context.Background(), "{{ 'a' | indent(-1) }}", Budget{}); err == nil {
		t.Error("indent(-1) accepted")
	}
}

// TestBudgetSmallCaps: each cap is the one a caller sets, and everyday
// constructs stay exact under the instrumentation.
func TestBudgetSmallCaps(t *testing.T) {
	b := Budget{OutputBytes: 100, Iterations: 10, RangeLen: 5, StringBytes: 400}
	for src, want := range map[string]string{
		"{% for i in range(5) %}{{ i * 2 }}{% endfor %}":                                                    "02468",
		"{{ 'ab' * 3 }}|{{ 2.5 * 2 }}|{{ '3' * 1 }}":                                                        "ababab|5|3",
		"{{ 'a-b'.replace('-', '+') }}{{ 'x' | replace('x', 'yy') }}":                                       "a+byy",
		"{{ [1, 2] | join(',') }} {{ 'q' ~ 1 }}":                                                            "1,2 q1",
		"{{ 'a b  c'.split() | join('|') }}{{ 'a,b'.split(',') | join('|') }}{{ 'xy' | list | join('|') }}": "a|b|ca|bx|y",
		"{{ '{}-{}'.format('a', 'b') }}{{ '{1}{0}'.format('c', 'd') }} {{ {'k': [1]} | tojson }}":           `a-bdc {"k": [1]}`,
	} {
		got, err := renderSrc(t, context.Background(), src, b)
		if err != nil || got != want {
			t.Errorf("%q: %q, %v; want %q", src, got, err, want)
		}
	}
	for src, cap := range map[string]string{
		"{% for i in range(6) %}{% endfor %}":                                    "RangeLen",
		"{% for i in range(5) %}{% for j in range(5) %}{% endfor %}{% endfor %}": "Iterations",
		"{{ 'x' * 401 }}": "StringBytes",
		"{% for i in range(5) %}{{ 'y' * 30 }}{% endfor %}": "OutputBytes",
	} {
		if _, err := renderSrc(t, context.Background(), src, b); err == nil || !strings.Contains(err.Error(), cap) {
			t.Errorf("%q: %v, want the %s cap", src, err, cap)
		}
	}
}

// TestRenderStopsWithContext: a cancelled context stops a long rendering
// at its next step (SIGINT and SIGTERM cancel the CLI's context).
func TestRenderStopsWithContext(t *testing.T) {
	src := "{% for i in range(16384) %}{% for j in range(15) %}{{ ('ab' * 64).replace('a', 'cd') }}{% endfor %}{% endfor %}"
	b := Budget{OutputBytes: 1 << 30}
	start := time.Now()
	if _, err := renderSrc(t, context.Background(), src, b); err != nil {
		t.Fatal(err)
	}
	full := time.Since(start)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(full/20, cancel)
	start = time.Now()
	_, err := renderSrc(t, ctx, src, b)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled rendering: %v", err)
	}
	if d := time.Since(start); d > full/2 {
		t.Errorf("cancelled after %v, stopped after %v (a whole rendering takes %v)", full/20, d, full)
	}
	done, cancelNow := context.WithCancel(context.Background())
	cancelNow()
	if _, err := renderSrc(t, done, "x", Budget{}); !errors.Is(err, context.Canceled) {
		t.Errorf("a context done before rendering: %v", err)
	}
}

// TestDefaultBudgetFitsRealTemplates: a conversation of 400 turns of
// 8 KiB each (3 MiB) renders within defaultBudget with every real
// template in the tests: Llama 3, Qwen3, Mistral, Gemma, Phi-3, ChatML.
func TestDefaultBudgetFitsRealTemplates(t *testing.T) {
	srcs := map[string]string{"chatml": builtinTemplates["chatml"], "llama-3 built-in": builtinTemplates["llama-3"]}
	for _, name := range []string{"llama3", "qwen3"} {
		srcs[name] = readOracle(t, name).Template
	}
	for _, name := range []string{"mistral", "gemma", "phi3"} {
		raw, err := os.ReadFile(filepath.Join("testdata", "templates", name+".jinja"))
		if err != nil {
			t.Fatal(err)
		}
		srcs[name] = strings.TrimSuffix(string(raw), "\n")
	}
	var msgs []Message
	for i := 0; i < 400; i++ {
		role := []string{"user", "assistant"}[i%2]
		msgs = append(msgs, Message{Role: role, Content: fmt.Sprintf("turn %d ", i) + strings.Repeat("words ", 8<<10/6)})
	}
	for name, src := range srcs {
		tpl, err := New(name, src, "</s>")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out, err := tpl.Render(context.Background(), msgs, Options{AddGenerationPrompt: true, BOS: "<s>"})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !strings.Contains(out, "turn 0 ") || !strings.Contains(out, "turn 399 ") {
			t.Errorf("%s: a turn is missing from %d bytes", name, len(out))
		}
	}
}
