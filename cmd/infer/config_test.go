package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stride-lm/stride/configs"
)

// demoRegistry declares two keys and two commands that print them; both
// commands bind their own --count flag to the same key.
func demoRegistry(t *testing.T) *registry {
	t.Helper()
	r := newRegistry()
	r.keys.Add(
		configs.Key{Name: "demo.count", Kind: configs.Int, Default: 1},
		configs.Key{Name: "demo.mode", Kind: configs.String, Default: "fast", Allowed: []string{"fast", "slow"}},
		configs.Key{Name: "demo.file", Kind: configs.Path},
		configs.Key{Name: "demo.ratio", Kind: configs.Float, Default: 0.5},
		configs.Key{Name: "demo.on", Kind: configs.Bool},
		configs.Key{Name: "demo.wait", Kind: configs.Duration},
	)
	if err := r.keys.Err(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"show", "show2"} {
		r.commands = append(r.commands, func(a *app) *cobra.Command {
			cmd := &cobra.Command{Use: name, RunE: func(cmd *cobra.Command, _ []string) error {
				fmt.Fprintf(cmd.OutOrStdout(), "count=%d mode=%s file=%s ratio=%g on=%v wait=%v",
					a.cfg.Int("demo.count"), a.cfg.String("demo.mode"), a.cfg.Path("demo.file"),
					a.cfg.Float("demo.ratio"), a.cfg.Bool("demo.on"), a.cfg.Duration("demo.wait"))
				return nil
			}}
			a.flag(cmd, "count", "demo.count", "a count")
			a.flag(cmd, "mode", "demo.mode", "a mode")
			a.flag(cmd, "file", "demo.file", "a file")
			a.flag(cmd, "ratio", "demo.ratio", "a ratio")
			a.flag(cmd, "on", "demo.on", "a switch")
			a.flag(cmd, "wait", "demo.wait", "a wait")
			return cmd
		})
	}
	return r
}

func execDemo(r *registry, args ...string) (string, error) {
	var out bytes.Buffer
	err := executeWith(r, args, &out, &out)
	return out.String(), err
}

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "cfg.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfigPrecedence(t *testing.T) {
	r := demoRegistry(t)
	cfg := writeConfig(t, "demo:\n  count: 3\n  mode: slow\n  ratio: 2\n  on: true\n  wait: 1s\n")
	check := func(want string, args ...string) {
		t.Helper()
		out, err := execDemo(r, args...)
		if err != nil || !strings.HasPrefix(out, want) {
			t.Fatalf("%v: %q %v, want prefix %q", args, out, err, want)
		}
	}
	check("count=1 mode=fast file= ratio=0.5 on=false wait=0s", "show")
	check("count=3 mode=slow file= ratio=2 on=true wait=1s", "show", "--config", cfg)
	t.Setenv("INFER_DEMO_COUNT", "4")
	t.Setenv("INFER_DEMO_WAIT", "250ms")
	check("count=4 mode=fast", "show")
	check("count=4 mode=slow file= ratio=2 on=true wait=250ms", "show", "--config", cfg) // env beats file
	check("count=5 mode=slow", "show", "--config", cfg, "--count", "5")                  // flag beats env
	// Both commands bind their own --count to demo.count: each one's
	// flag is honoured when it runs.
	check("count=6", "show2", "--count", "6")
	check("count=7", "show", "--count=7")
	// INFER_CONFIG names the file when --config is absent.
	t.Setenv("INFER_CONFIG", cfg)
	check("count=4 mode=slow", "show")
}

func TestConfigErrorsNameTheKey(t *testing.T) {
	r := demoRegistry(t)
	cases := []struct {
		config string
		env    [2]string
		args   []string
		want   []string
	}{
		{config: "demo:\n  cuont: 3\n", want: []string{`unknown key "demo.cuont"`, "cfg.yaml", `did you mean "demo.count"?`}},
		{env: [2]string{"INFER_DEMO_COUNT", "many"}, want: []string{`config key "demo.count" (from env INFER_DEMO_COUNT)`, "want an integer"}},
		{env: [2]string{"INFER_DEMO_WAIT", "5"}, want: []string{`config key "demo.wait" (from env INFER_DEMO_WAIT)`, "want a duration"}},
		{args: []string{"--mode", "slower"}, want: []string{`config key "demo.mode" (from flag --mode)`, "not one of fast, slow"}},
		{args: []string{"--count", "x"}, want: []string{`invalid argument "x" for "--count"`}},
	}
	for i, c := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			args := append([]string{"show"}, c.args...)
			if c.config != "" {
				args = append(args, "--config", writeConfig(t, c.config))
			}
			if c.env[0] != "" {
				t.Setenv(c.env[0], c.env[1])
			}
			_, err := execDemo(r, args...)
			if err == nil {
				t.Fatalf("%v succeeded", args)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	if _, err := execDemo(r, "show", "--config", filepath.Join(t.TempDir(), "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing config file: %v", err)
	}
}

// Declaration errors (configs' TestDeclarationErrors has the cases) are
// reported by Execute, not by a panic in init, and so is a flag bound to
// a key nobody declared.
func TestRegistryDeclarationErrors(t *testing.T) {
	for _, c := range []struct {
		keys []configs.Key
		want string
	}{
		{[]configs.Key{{Name: "a", Kind: configs.Int}, {Name: "a", Kind: configs.String}}, `"a" declared twice`},
		{[]configs.Key{{Name: "trace", Kind: configs.Int}, {Name: "trace.batch", Kind: configs.Int}}, `"trace" is also the section of "trace.batch"`},
	} {
		r := newRegistry()
		r.keys.Add(c.keys...)
		err := executeWith(r, []string{"--help"}, &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.keys, err, c.want)
		}
	}
	r := newRegistry()
	r.commands = append(r.commands, func(a *app) *cobra.Command {
		cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
		a.flag(cmd, "n", "nope", "")
		a.bindFlag(cmd, "missing", "nope")
		return cmd
	})
	err := executeWith(r, []string{"x"}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), `flag --n of "x": config key "nope" is not declared (registerKeys)`) || !strings.Contains(err.Error(), "no flag --missing") {
		t.Errorf("undeclared key: %v", err)
	}
}

// An INFER_* variable that sets no key is a warning naming the one meant
// (configs.Registry.UnknownEnv), and the command still runs.
func TestConfigUnknownEnvWarns(t *testing.T) {
	r := demoRegistry(t)
	t.Setenv("INFER_DEMO_CUONT", "3")
	t.Setenv("INFER_VERBOSE", "1")
	out, err := execDemo(r, "show")
	for _, want := range []string{
		"warning: environment variable INFER_DEMO_CUONT is not a setting; did you mean INFER_DEMO_COUNT?\n",
		"warning: environment variable INFER_VERBOSE is not a setting; see infer --help for the keys\n",
		"count=1 ",
	} {
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("%q %v: want %q", out, err, want)
		}
	}
}
