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
//			configs.Key{Name: "steps", Kind: configs.Int, Default: 256, Help: "tokens to generate"},
//			configs.Key{Name: "path", Kind: configs.String, Default: "fused", Allowed: []string{"naive", "fused"}},
//		)
//		register(newGenerateCmd)
//	}
//
//	func newGenerateCmd(a *app) *cobra.Command {
//		cmd := &cobra.Command{Use: "generate", RunE: func(cmd *cobra.Command, args []string) error {
//			steps := a.cfg.Int("steps") // flag > INFER_STEPS > config file > default
//			fmt.Fprintln(cmd.OutOrStdout(), steps)
//			return nil
//		}}
//		a.flag(cmd, "steps", "steps", "tokens to generate")
//		return cmd
//	}
//
// registerKeys declares the settings a command reads (name, kind, default,
// allowed values) as configs.Key values; a config file may only contain
// declared keys. The machinery (checks, sources, the file reader) is
// package configs; this file wires it to cobra. a.flag
// defines a typed flag with the key's default and binds it to the key;
// a.bindFlag binds a flag defined by hand. Read values with a.cfg.String,
// Int, Float, Bool, Duration, Strings and Path (which resolves a
// relative path from the config file against the file's folder);
// a.cfg.Source says where a value came from.
//
// # Precedence
//
// For every key: a flag given on the command line, then the environment
// variable INFER_<KEY> (dots and dashes become underscores:
// layout.output → INFER_LAYOUT_OUTPUT, configs.EnvName), then the YAML
// file named by --config (or INFER_CONFIG), then the declared default. Every value is
// type-checked before a command runs, and the error names the key and
// where the bad value came from. Write output to cmd.OutOrStdout() so
// tests can capture it; return errors rather than exiting; do not set
// PersistentPreRunE on a subcommand without calling the root's (hooks
// traverse: the root's runs first and loads the configuration).
//
// # Hardening rules for every command
//
//   - Numbers: give the key a Range (configs.AtLeast, InRange, Above); NaN and
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

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/stride-lm/stride/configs"
)

// commandFactory builds one subcommand for an app. It runs once per
// Execute, so commands hold no state between runs (tests run many).
type commandFactory func(a *app) *cobra.Command

// registry collects what the subcommand files declare in their init
// functions: command constructors and config keys (configs.Registry
// keeps declaration errors for Execute to report, so a bad declaration
// cannot panic before main's recover is in place).
type registry struct {
	keys     *configs.Registry
	commands []commandFactory
}

func newRegistry() *registry { return &registry{keys: configs.NewRegistry()} }

// defaultRegistry is what register and registerKeys add to.
var defaultRegistry = newRegistry()

// register adds a subcommand constructor (call it from init).
func register(f commandFactory) { defaultRegistry.commands = append(defaultRegistry.commands, f) }

// registerKeys declares config keys (call it from init). Declaring the
// same key in two files is allowed when kind and default agree, so two
// subcommands can share a setting such as "steps".
func registerKeys(keys ...configs.Key) { defaultRegistry.keys.Add(keys...) }

// app is one invocation of the CLI: its settings and the flag bindings
// of its commands.
type app struct {
	reg      *registry
	cfg      *configs.Settings
	bindings []flagBinding
	errw     io.Writer // the running command's stderr (progress displays)
	errs     []error
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
	return &app{reg: reg, cfg: configs.NewSettings(reg.keys)}
}

// flag defines a flag named name on cmd, typed by key's kind, with key's
// default, and binds it to key. Usage gets the env variable appended.
func (a *app) flag(cmd *cobra.Command, name, key, usage string) { a.flagP(cmd, name, "", key, usage) }

// flagP is flag with a one-letter shorthand (llama.cpp's -m, -p, -n...).
func (a *app) flagP(cmd *cobra.Command, name, short, key, usage string) {
	if _, err := a.reg.keys.DefineFlag(cmd.Flags(), name, short, key, usage); err != nil {
		a.errs = append(a.errs, fmt.Errorf("flag --%s of %q: %v (registerKeys)", name, cmd.Name(), err))
		return
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
	if _, ok := a.reg.keys.Lookup(key); !ok {
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
				if err := a.cfg.BindFlag(b.key, b.flag); err != nil {
					return err
				}
				break
			}
		}
	}
	path := os.Getenv(configs.EnvName("config"))
	if f := cmd.Flags().Lookup("config"); f != nil && f.Changed {
		path = f.Value.String()
	}
	if path != "" {
		if err := a.cfg.ReadFile(path); err != nil {
			return err
		}
	}
	a.errw = cmd.ErrOrStderr()
	a.warnUnknownEnv(a.errw)
	return a.cfg.Check()
}

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
	if err := reg.keys.Err(); err != nil {
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
