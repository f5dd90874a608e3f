package configs

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestDeclarationErrors(t *testing.T) {
	cases := []struct {
		keys []Key
		want string
	}{
		{[]Key{{Name: "a", Kind: Int}, {Name: "a", Kind: String}}, `"a" declared twice`},
		{[]Key{{Name: "a", Kind: Int, Default: 1}, {Name: "a", Kind: Int, Default: 2}}, `"a" declared twice`},
		{[]Key{{Name: "Bad Name", Kind: Int}}, "lower-case words"},
		{[]Key{{Name: "a..b", Kind: Int}}, "lower-case words"},
		{[]Key{{Name: "k", Kind: Kind(99)}}, "unknown kind 99"},
		{[]Key{{Name: "n", Kind: Int, Default: "3"}}, `config key "n": default "3" is not an integer (want a Go int)`},
		{[]Key{{Name: "n", Kind: Int, Default: 0, Range: AtLeast(1)}}, `config key "n": default: must be ≥ 1 (got 0)`},
		{[]Key{{Name: "m", Kind: String, Default: "x", Allowed: []string{"a", "b"}}}, `"x" is not one of a, b`},
		{[]Key{{Name: "trace", Kind: Int}, {Name: "trace.batch", Kind: Int}}, `"trace" is also the section of "trace.batch"`},
	}
	for _, c := range cases {
		r := NewRegistry()
		r.Add(c.keys...)
		if err := r.Err(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.keys, err, c.want)
		}
	}
	// The same key declared twice identically is fine (shared settings).
	r := NewRegistry()
	r.Add(Key{Name: "steps", Kind: Int, Default: 8}, Key{Name: "steps", Kind: Int, Default: 8})
	if err := r.Err(); err != nil {
		t.Errorf("identical redeclaration: %v", err)
	}
	if _, ok := r.Lookup("steps"); !ok {
		t.Error("steps is not declared")
	}
}

func TestSuggest(t *testing.T) {
	r := NewRegistry()
	r.Add(Key{Name: "steps", Kind: Int}, Key{Name: "generate.output", Kind: String},
		Key{Name: "bench.output", Kind: String}, Key{Name: "temperature", Kind: Float})
	for name, want := range map[string]string{
		"stpes":       `did you mean "steps"?`,
		"temprature":  `did you mean "temperature"?`,
		"output":      `did you mean "bench.output" or "generate.output"?`,
		"trace.steps": `did you mean "steps"?`,
		"verbose":     "known keys: bench.output, generate.output, steps, temperature",
	} {
		if got := r.Suggest(name); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", name, got, want)
		}
	}
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"abc", "", 3}, {"kitten", "sitting", 3}, {"steps", "stpes", 2}} {
		if d := editDistance(c.a, c.b); d != c.d || editDistance(c.b, c.a) != c.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d both ways", c.a, c.b, d, c.d)
		}
	}
}

// DefineFlag types the flag by the key's kind, gives it the key's
// default, and appends what the key accepts to its usage.
func TestDefineFlag(t *testing.T) {
	r := NewRegistry()
	r.Add(Key{Name: "n", Kind: Int, Default: 3, Range: AtLeast(1)},
		Key{Name: "mode", Kind: String, Default: "a", Allowed: []string{"a", "b"}},
		Key{Name: "wait", Kind: Duration, Default: time.Second},
		Key{Name: "stop", Kind: Strings}, Key{Name: "on", Kind: Bool}, Key{Name: "p", Kind: Float})
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	for _, c := range []struct{ name, short, key, usage, typ, def, want string }{
		{"count", "n", "n", "how many", "int", "3", "how many; ≥ 1; env INFER_N"},
		{"mode", "", "mode", "how", "string", "a", "how (a|b); env INFER_MODE"},
		{"wait", "", "wait", "how long", "duration", "1s", "how long; env INFER_WAIT"},
		{"stop", "", "stop", "stop string", "stringArray", "[]", "stop string; env INFER_STOP"},
		{"on", "", "on", "a switch", "bool", "false", "a switch; env INFER_ON"},
		{"p", "", "p", "a number", "float64", "0", "a number; env INFER_P"},
	} {
		f, err := r.DefineFlag(fs, c.name, c.short, c.key, c.usage)
		if err != nil {
			t.Fatal(err)
		}
		if f.Value.Type() != c.typ || f.DefValue != c.def || f.Usage != c.want || f.Shorthand != c.short {
			t.Errorf("--%s: %s default %q usage %q -%s, want %s default %q usage %q", c.name,
				f.Value.Type(), f.DefValue, f.Usage, f.Shorthand, c.typ, c.def, c.want)
		}
	}
	if _, err := r.DefineFlag(fs, "x", "", "nope", ""); err == nil || err.Error() != `config key "nope" is not declared` {
		t.Errorf("undeclared key: %v", err)
	}
}

// UnknownEnv finds the INFER_* variables no key reads, and names the
// variable meant where one is close.
func TestUnknownEnv(t *testing.T) {
	r := NewRegistry()
	r.Add(Key{Name: "steps", Kind: Int}, Key{Name: "generate.output", Kind: String}, Key{Name: "kv-dtype", Kind: String})
	got := r.UnknownEnv([]string{
		"PATH=/bin", "INFER_STEPS=3", "INFER_STPES=3", "INFER_OUTPUT=json", "INFER_CONFIG=x.yaml",
		"INFER_KV_DTYPE=f16", "INFER_VERBOSE=1", "INFERENCE=1", "INFER_=",
	}, "INFER_CONFIG")
	want := []UnknownVar{
		{"INFER_", ""},
		{"INFER_OUTPUT", "did you mean INFER_GENERATE_OUTPUT?"},
		{"INFER_STPES", "did you mean INFER_STEPS?"},
		{"INFER_VERBOSE", ""},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("UnknownEnv = %v, want %v", got, want)
	}
}
