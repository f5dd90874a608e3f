package configs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// demo declares one key of each kind under a demo: section.
func demo(t testing.TB) *Registry {
	t.Helper()
	r := NewRegistry()
	r.Add(
		Key{Name: "demo.count", Kind: Int, Default: 1, Range: AtLeast(0)},
		Key{Name: "demo.mode", Kind: String, Default: "fast", Allowed: []string{"fast", "slow"}},
		Key{Name: "demo.file", Kind: Path},
		Key{Name: "demo.ratio", Kind: Float, Default: 0.5},
		Key{Name: "demo.on", Kind: Bool},
		Key{Name: "demo.wait", Kind: Duration},
		Key{Name: "demo.stop", Kind: Strings},
	)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return r
}

// load is what a front end does: define and bind the flags, parse args,
// read the config file (if any), check every value.
func load(t *testing.T, r *Registry, config string, args ...string) (*Settings, error) {
	t.Helper()
	s := NewSettings(r)
	fs := pflag.NewFlagSet("demo", pflag.ContinueOnError)
	for _, name := range []string{"count", "mode", "file", "ratio"} {
		f, err := r.DefineFlag(fs, name, "", "demo."+name, "")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.BindFlag("demo."+name, f); err != nil {
			t.Fatal(err)
		}
	}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if config != "" {
		if err := s.ReadFile(writeFile(t, config)); err != nil {
			return s, err
		}
	}
	return s, s.Check()
}

func writeFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "cfg.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func show(s *Settings) string {
	return fmt.Sprintf("count=%d mode=%s ratio=%g on=%v wait=%v stop=%q", s.Int("demo.count"), s.String("demo.mode"),
		s.Float("demo.ratio"), s.Bool("demo.on"), s.Duration("demo.wait"), s.Strings("demo.stop"))
}

// flag > INFER_* env > config file > default, for every key and kind.
func TestPrecedence(t *testing.T) {
	r := demo(t)
	cfg := "demo:\n  count: 3\n  mode: slow\n  ratio: 2\n  on: true\n  wait: 1s\n  stop: [a, b]\n"
	check := func(want, wantSrc string, rank int, config string, args ...string) {
		t.Helper()
		s, err := load(t, r, config, args...)
		if err != nil || show(s) != want {
			t.Fatalf("%v: %q %v, want %q", args, show(s), err, want)
		}
		if src := s.Source("demo.count"); !strings.HasPrefix(src, wantSrc) || s.Rank("demo.count") != rank {
			t.Errorf("%v: demo.count from %q rank %d, want %q rank %d", args, src, s.Rank("demo.count"), wantSrc, rank)
		}
	}
	check(`count=1 mode=fast ratio=0.5 on=false wait=0s stop=[]`, "default", 0, "")
	check(`count=3 mode=slow ratio=2 on=true wait=1s stop=["a" "b"]`, "config ", 1, cfg)
	t.Setenv("INFER_DEMO_COUNT", "4")
	t.Setenv("INFER_DEMO_STOP", "x")
	check(`count=4 mode=fast ratio=0.5 on=false wait=0s stop=["x"]`, "env INFER_DEMO_COUNT", 2, "")
	check(`count=4 mode=slow ratio=2 on=true wait=1s stop=["x"]`, "env INFER_DEMO_COUNT", 2, cfg)
	check(`count=5 mode=slow ratio=2 on=true wait=1s stop=["x"]`, "flag --count", 3, cfg, "--count", "5")
}

func TestPathsResolveAgainstTheFile(t *testing.T) {
	r := demo(t)
	for _, c := range []struct {
		config string
		args   []string
		want   func(dir string) string
	}{
		{"demo:\n  file: models/m.bin\n", nil, func(dir string) string { return filepath.Join(dir, "models/m.bin") }},
		{"demo:\n  file: /abs/m.bin\n", nil, func(string) string { return "/abs/m.bin" }},
		// A path from a flag stays relative to the working directory.
		{"demo:\n  file: models/m.bin\n", []string{"--file", "x.bin"}, func(string) string { return "x.bin" }},
		{"", nil, func(string) string { return "" }},
	} {
		s, err := load(t, r, c.config, c.args...)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := s.Path("demo.file"), c.want(filepath.Dir(s.configFile)); got != want {
			t.Errorf("%q %v: %q, want %q", c.config, c.args, got, want)
		}
	}
}

// Every bad value is one line naming the key, where the value came from
// and what was wrong.
func TestErrorsNameTheKey(t *testing.T) {
	r := demo(t)
	cases := []struct {
		config string
		env    [2]string
		args   []string
		want   string
	}{
		{config: "demo:\n  cuont: 3\n", want: `cfg.yaml: unknown key "demo.cuont" (did you mean "demo.count"?)`},
		{config: "verbose: true\n", want: `unknown key "verbose" (known keys: demo.count, demo.file, demo.mode, demo.on, demo.ratio, demo.stop, demo.wait)`},
		{config: "demo: 3\n", want: `unknown key "demo"`},
		{config: "demo:\n  count: abc\n", want: `cfg.yaml: key "demo.count": want an integer, got string "abc"`},
		{config: "demo:\n  count: 2.5\n", want: `key "demo.count": want an integer`},
		{config: "demo:\n  count: -1\n", want: `key "demo.count": must be ≥ 0 (got -1)`},
		{config: "demo:\n  mode: 5\n", want: `key "demo.mode": want a string`},
		{config: "demo:\n  mode: medium\n", want: `key "demo.mode": "medium" is not one of fast, slow`},
		{config: "demo:\n  on: [1]\n", want: `key "demo.on": want a boolean, got a list`},
		{config: "demo:\n  ratio: .nan\n", want: `key "demo.ratio": NaN is not a finite number`},
		{config: "demo: [\n", want: "cfg.yaml: "},
		{env: [2]string{"INFER_DEMO_COUNT", "many"}, want: `config key "demo.count" (from env INFER_DEMO_COUNT): want an integer`},
		{env: [2]string{"INFER_DEMO_WAIT", "5"}, want: `config key "demo.wait" (from env INFER_DEMO_WAIT): want a duration`},
		{args: []string{"--mode", "slower"}, want: `config key "demo.mode" (from flag --mode): "slower" is not one of fast, slow`},
	}
	for i, c := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			if c.env[0] != "" {
				t.Setenv(c.env[0], c.env[1])
			}
			_, err := load(t, r, c.config, c.args...)
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%q %v %v: %v, want one line with %q", c.config, c.env, c.args, err, c.want)
			}
		})
	}
	// An empty section is not an unknown key.
	if s, err := load(t, r, "demo: {}\n"); err != nil || s.Int("demo.count") != 1 {
		t.Errorf("empty section: %v", err)
	}
	s := NewSettings(r)
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	if err := s.ReadFile(missing); err == nil || !strings.HasPrefix(err.Error(), "config: open "+missing) {
		t.Errorf("missing config file: %v", err)
	}
	big := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(big, make([]byte, MaxFileBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.ReadFile(big); err == nil || err.Error() != "config "+big+" is larger than 16.0 MiB, the most it may be" {
		t.Errorf("oversized config file: %v", err)
	}
	if err := s.BindFlag("nope", nil); err == nil || err.Error() != `config key "nope" is not declared` {
		t.Errorf("binding an undeclared key: %v", err)
	}
}
