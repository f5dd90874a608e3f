// Command infer is Stride's command line: it shows where the bytes of an
// attention layer go (layout traces, copies, KV-cache traffic) and runs a
// Llama-architecture model.
//
// # Adding a subcommand
//
// Each subcommand lives in its own file and registers itself from init,
// so this file never changes when one is added:
//
//	func init() {
//		registerKeys(
//			configKey{Name: "steps", Kind: kindInt, Default: 256, Help: "tokens to generate"},
//			configKey{Name: "path", Kind: kindString, Default: "fused", Allowed: []string{"naive", "fused"}},
//		)
//		register(newGenerateCmd)
//	}
//
//	func newGenerateCmd(a *app) *cobra.Command {
//		cmd := &cobra.Command{Use: "generate", RunE: func(cmd *cobra.Command, args []string) error {
//			steps := a.getInt("steps") // flag > INFER_STEPS > config file > default
//			fmt.Fprintln(cmd.OutOrStdout(), steps)
//			return nil
//		}}
//		a.flag(cmd, "steps", "steps", "tokens to generate")
//		return cmd
//	}
//
// registerKeys declares the settings a command reads (name, kind, default,
// allowed values); a config file may only contain declared keys. a.flag
// defines a typed flag with the key's default and binds it to the key;
// a.bindFlag binds a flag defined by hand. Read values with a.getString,
// getInt, getFloat, getBool, getDuration and getPath (which resolves a
// relative path from the config file against the file's folder).
//
// # Precedence
//
// For every key: a flag given on the command line, then the environment
// variable INFER_<KEY> (dots and dashes become underscores:
// layout.output → INFER_LAYOUT_OUTPUT), then the YAML file named by
// --config (or INFER_CONFIG), then the declared default. Every value is
// type-checked before a command runs, and the error names the key and
// where the bad value came from. Write output to cmd.OutOrStdout() so
// tests can capture it; return errors rather than exiting; do not set
// PersistentPreRunE on a subcommand without calling the root's (hooks
// traverse: the root's runs first and loads the configuration).
//
// # Hardening rules for every command
//
//   - Numbers: give the key a Range (atLeast, inRange, above); NaN and
//     ±Inf are refused for every float key by the loader.
//   - Output files: open them with outfile.Create(cmd.Context(), path)
//     and Commit at the end, deferring Abort (cmd/infer/internal/outfile:
//     temp file + rename, devices and FIFOs written through).
//   - Input files a user names (prompts, configs): read them with
//     readCapped, which stops at maxInputBytes.
//   - Sizes: check what a setting will allocate before allocating it
//     (engine.CheckMemory, engine.FitsMemory; engine.New checks its KV
//     pool itself).
//   - Interrupts: cmd.Context() is cancelled by SIGINT/SIGTERM; stop at
//     the next step, print what was done, and return ctx.Err() (exit 130).
//   - Writes to stdout and stderr are checked by runContext, but a
//     command that streams should stop at the first failed write
//     (writeErr).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// commandFactory builds one subcommand for an app. It runs once per
// Execute, so commands hold no state between runs (tests run many).
type commandFactory func(a *app) *cobra.Command

// register adds a subcommand constructor (call it from init).
func register(f commandFactory) { defaultRegistry.commands = append(defaultRegistry.commands, f) }

// app is one invocation of the CLI: its viper instance and the flag
// bindings of its commands.
type app struct {
	reg        *registry
	v          *viper.Viper
	bindings   []flagBinding
	configFile string    // the --config file in effect, "" if none
	errw       io.Writer // the running command's stderr (progress displays)
	errs       []error
}

// flagBinding ties a flag of cmd to a config key. Bindings are applied
// only for the command that runs (and its parents), because two
// subcommands may bind their own --steps to the same key and viper keeps
// one flag per key.
type flagBinding struct {
	cmd  *cobra.Command
	flag *pflag.Flag
	key  string
}

func newApp(reg *registry) *app {
	v := viper.New()
	v.SetEnvPrefix(envPrefix)
	v.SetEnvKeyReplacer(envReplacer)
	v.AutomaticEnv()
	for name, k := range reg.keys {
		v.SetDefault(name, k.defaultValue())
	}
	return &app{reg: reg, v: v}
}

// flag defines a flag named name on cmd, typed by key's kind, with key's
// default, and binds it to key. Usage gets the env variable appended.
func (a *app) flag(cmd *cobra.Command, name, key, usage string) { a.flagP(cmd, name, "", key, usage) }

// flagP is flag with a one-letter shorthand (llama.cpp's -m, -p, -n...).
func (a *app) flagP(cmd *cobra.Command, name, short, key, usage string) {
	k, ok := a.reg.keys[key]
	if !ok {
		a.errs = append(a.errs, fmt.Errorf("flag --%s of %q: config key %q is not declared (registerKeys)", name, cmd.Name(), key))
		return
	}
	if len(k.Allowed) > 0 {
		usage += " (" + strings.Join(k.Allowed, "|") + ")"
	}
	if k.Range != nil {
		usage += "; " + k.Range.String()
	}
	usage += "; env " + envName(key)
	fs := cmd.Flags()
	switch def := k.defaultValue(); k.Kind {
	case kindInt:
		fs.IntP(name, short, def.(int), usage)
	case kindFloat:
		fs.Float64P(name, short, def.(float64), usage)
	case kindBool:
		fs.BoolP(name, short, def.(bool), usage)
	case kindDuration:
		fs.DurationP(name, short, def.(time.Duration), usage)
	case kindStrings:
		fs.StringArrayP(name, short, def.([]string), usage)
	default:
		fs.StringP(name, short, def.(string), usage)
	}
	a.bindFlag(cmd, name, key)
}

// bindFlag binds an existing flag of cmd (local or persistent) to key.
func (a *app) bindFlag(cmd *cobra.Command, name, key string) {
	f := cmd.Flags().Lookup(name)
	if f == nil {
		f = cmd.PersistentFlags().Lookup(name)
	}
	if f == nil {
		a.errs = append(a.errs, fmt.Errorf("command %q has no flag --%s to bind to %q", cmd.Name(), name, key))
		return
	}
	if _, ok := a.reg.keys[key]; !ok {
		a.errs = append(a.errs, fmt.Errorf("flag --%s of %q: config key %q is not declared (registerKeys)", name, cmd.Name(), key))
		return
	}
	a.bindings = append(a.bindings, flagBinding{cmd, f, key})
}

// load binds the running command's flags, reads the config file and
// type-checks every declared key's effective value.
func (a *app) load(cmd *cobra.Command) error {
	for _, b := range a.bindings {
		for c := cmd; c != nil; c = c.Parent() {
			if c == b.cmd {
				if err := a.v.BindPFlag(b.key, b.flag); err != nil {
					return err
				}
				break
			}
		}
	}
	path := a.v.GetString("config")
	if f := cmd.Flags().Lookup("config"); f != nil && f.Changed {
		path = f.Value.String()
	}
	if path != "" {
		if err := a.reg.readConfigFile(a.v, path); err != nil {
			return err
		}
		a.configFile = path
	}
	a.errw = cmd.ErrOrStderr()
	a.warnUnknownEnv(a.errw)
	for _, name := range a.reg.sortedKeys() {
		if err := a.reg.keys[name].check(a.v.Get(name)); err != nil {
			return fmt.Errorf("config key %q (from %s): %v", name, a.source(name), err)
		}
	}
	return nil
}

// source names where key's value comes from, for error messages.
func (a *app) source(key string) string {
	for _, b := range a.bindings {
		if b.key == key && b.flag.Changed {
			return "flag --" + b.flag.Name
		}
	}
	if v, ok := os.LookupEnv(envName(key)); ok && v != "" {
		return "env " + envName(key)
	}
	if a.configFile != "" && a.v.InConfig(key) {
		return "config " + a.configFile
	}
	return "default"
}

// getString returns a string key's value (validated by load).
func (a *app) getString(key string) string {
	s, _ := a.v.Get(key).(string)
	return s
}

// getPath returns a path key's value; a relative path that came from the
// config file is resolved against the file's folder.
func (a *app) getPath(key string) string {
	p := a.getString(key)
	if strings.HasPrefix(a.source(key), "config ") {
		return resolvePath(p, a.configFile)
	}
	return p
}

// getInt returns an integer key's value (validated by load).
func (a *app) getInt(key string) int { n, _ := toInt(a.v.Get(key)); return n }

// getFloat returns a number key's value (validated by load).
func (a *app) getFloat(key string) float64 { f, _ := toFloat(a.v.Get(key)); return f }

// getBool returns a boolean key's value (validated by load).
func (a *app) getBool(key string) bool { b, _ := toBool(a.v.Get(key)); return b }

// getStrings returns a string-list key's value (validated by load).
func (a *app) getStrings(key string) []string { l, _ := toStrings(a.v.Get(key)); return l }

// getDuration returns a duration key's value (validated by load).
func (a *app) getDuration(key string) time.Duration { d, _ := toDuration(a.v.Get(key)); return d }

// newRootCmd builds the command tree for one invocation.
func newRootCmd(a *app) *cobra.Command {
	// Run every parent's PersistentPreRunE, so a subcommand's own hook
	// cannot skip loading the configuration.
	cobra.EnableTraverseRunHooks = true
	root := &cobra.Command{
		Use:   "infer",
		Short: "Stride: see where every byte of an attention layer goes",
		Long: `infer runs and inspects Stride, a miniature LLM attention engine that makes
tensor memory layout visible: shape, strides, contiguity and bytes copied,
with PyTorch's exact numbers.

Settings come from flags, then INFER_* environment variables, then the YAML
file given by --config (or INFER_CONFIG), then defaults.`,
		SilenceErrors: true, // main prints "infer: <error>"
		SilenceUsage:  true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return a.load(cmd)
		},
	}
	root.PersistentFlags().String("config", "", "YAML config file; env INFER_CONFIG")
	for _, f := range a.reg.commands {
		root.AddCommand(f(a))
	}
	habits(root) // --version, completion, llama.cpp's flag aliases (habits.go)
	return root
}

// ExecuteContext runs the CLI with args (without the program name) under
// ctx, writing to stdout and stderr: commands stop at their next step once
// ctx is done (an interrupt) and report what they have. It returns the
// error to report; it does not exit.
func ExecuteContext(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return executeWithContext(ctx, defaultRegistry, args, stdout, stderr)
}

func executeWithContext(ctx context.Context, reg *registry, args []string, stdout, stderr io.Writer) error {
	if len(reg.errs) > 0 {
		return errors.Join(reg.errs...)
	}
	if err := reg.checkSections(); err != nil {
		return err
	}
	a := newApp(reg)
	root := newRootCmd(a)
	if len(a.errs) > 0 {
		return errors.Join(a.errs...)
	}
	if err := checkBoolValues(root, args); err != nil {
		return err
	}
	root.SetArgs(args)
	root.SetIn(processStdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	return root.ExecuteContext(ctx)
}
