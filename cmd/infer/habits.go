package main

// Habits users bring from llama.cpp and run.c: short flags and
// llama.cpp's long names as aliases, --version, shell completion, a
// prompt on stdin, "--flag false" caught before it becomes a prompt, and
// warnings for INFER_* variables nobody reads.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"

	"github.com/stride-lm/stride/configs"
	"github.com/stride-lm/stride/model/tokenizer"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// processStdin is what commands read as standard input. main sets it to
// os.Stdin; tests run in process with an empty one (a test binary's
// stdin may be a terminal or a pipe nobody writes to), and give their
// own with executeStdin.
var processStdin io.Reader = strings.NewReader("")

// flagAliases maps llama.cpp's long flag names to ours, so its users'
// command lines work unchanged (pflag normalizes the name before it
// looks the flag up; --help shows our names, docs/cli.md both).
var flagAliases = map[string]string{
	"temp":  "temperature",
	"model": "checkpoint",
	"top-p": "topp",
}

// habits adds the root-level conveniences: --version from the build
// information, cobra's completion command, and the flag aliases.
func habits(root *cobra.Command) {
	root.Version = buildVersion()
	root.SetVersionTemplate("infer {{.Version}}\n")
	root.SetGlobalNormalizationFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if to, ok := flagAliases[name]; ok {
			return pflag.NormalizedName(to)
		}
		return pflag.NormalizedName(name)
	})
}

// buildVersion is the module version and the VCS revision the binary was
// built from, as runtime/debug records them ("(devel)" for a build from
// a checkout; no revision when built with -buildvcs=false).
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(no build information)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, when, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	out := v
	if rev != "" {
		out += " revision " + rev + dirty
		if when != "" {
			out += " (" + when + ")"
		}
	} else {
		out += " (no VCS revision recorded; built with -buildvcs=false or outside a checkout)"
	}
	return out + " " + bi.GoVersion
}

// boolLiterals are the words strconv.ParseBool accepts.
var boolLiterals = []string{"1", "t", "T", "TRUE", "true", "True", "0", "f", "F", "FALSE", "false", "False"}

// checkBoolValues refuses "--flag false" for a boolean flag: pflag
// takes "false" as a positional argument, which generate would read as
// its prompt. Only "--flag=false" sets a boolean to false.
func checkBoolValues(root *cobra.Command, args []string) error {
	cmd, _, err := root.Find(args)
	if err != nil || cmd == nil {
		return nil // cobra reports it
	}
	lookup := func(name string, short bool) *pflag.Flag {
		if short {
			if f := cmd.Flags().ShorthandLookup(name); f != nil {
				return f
			}
			return cmd.InheritedFlags().ShorthandLookup(name)
		}
		if to, ok := flagAliases[name]; ok {
			name = to
		}
		if f := cmd.Flags().Lookup(name); f != nil {
			return f
		}
		return cmd.InheritedFlags().Lookup(name)
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return nil
		}
		var f *pflag.Flag
		switch {
		case strings.HasPrefix(a, "--") && !strings.Contains(a, "="):
			f = lookup(a[2:], false)
		case len(a) == 2 && a[0] == '-' && a[1] != '-':
			f = lookup(a[1:], true)
		}
		if f == nil {
			continue
		}
		if f.Value.Type() != "bool" {
			i++ // the next word is this flag's value
			continue
		}
		if i+1 < len(args) && slices.Contains(boolLiterals, args[i+1]) {
			return fmt.Errorf("%s %s: a boolean flag takes its value after '=': write --%s=%s (a separate word would be read as a prompt)",
				a, args[i+1], f.Name, strings.ToLower(args[i+1]))
		}
	}
	return nil
}

// warnUnknownEnv warns once about each INFER_* variable that no key
// reads (a typo, or a key that lives in a section: INFER_OUTPUT for
// generate.output is INFER_GENERATE_OUTPUT), naming the closest one.
func (a *app) warnUnknownEnv(w io.Writer) {
	for _, u := range a.reg.keys.UnknownEnv(os.Environ(), configs.EnvName("config")) {
		hint := u.Suggestion
		if hint == "" {
			hint = "see infer --help for the keys"
		}
		fmt.Fprintf(w, "warning: environment variable %s is not a setting; %s\n", u.Name, hint)
	}
}

// stdinTerminal reports whether r is a terminal (an interactive user,
// not a pipe or a file).
func stdinTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// readStdin reads the whole of standard input (at most maxInputBytes).
// A closed descriptor reads as empty: no prompt, as before stdin was
// read at all.
func readStdin(r io.Reader) (string, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxInputBytes+1))
	if err != nil {
		if errors.Is(err, syscall.EBADF) || errors.Is(err, os.ErrClosed) {
			return "", nil
		}
		return "", fmt.Errorf("reading standard input: %w", err)
	}
	if len(data) > maxInputBytes {
		return "", fmt.Errorf("standard input is longer than %d bytes, the most infer reads from it", maxInputBytes)
	}
	return string(data), nil
}

// tokenizerHint is a warning for a checkpoint whose vocabulary is not
// the byte tokenizer's (259 ids) when no --tokenizer was given: its text
// would print as <403><407>... .
func tokenizerHint(a *app, lm *loadedModel) string {
	if a.cfg.String("checkpoint") == syntheticCheckpoint || a.cfg.Path("tokenizer") != "" || lm.m.Config.VocabSize == 259 {
		return ""
	}
	if _, bytes := lm.codec.(*tokenizer.Bytes); !bytes {
		return "" // the checkpoint brought its own vocabulary
	}
	return fmt.Sprintf("warning: the checkpoint's vocabulary has %d tokens but no --tokenizer was given: ids past 258 print as <id>; pass the tokenizer it was trained with (e.g. --tokenizer tok%d.bin)",
		lm.m.Config.VocabSize, lm.m.Config.VocabSize)
}
