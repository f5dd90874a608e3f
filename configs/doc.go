// Package configs is Stride's typed configuration: each setting is
// declared once, read from four sources, and checked before anything
// runs, so a typo or a bad value is one clear line instead of a
// surprise halfway through a run.
//
// # Declaring settings
//
// A Key names one setting and says what it holds: its Kind (String,
// Path, Int, Float, Bool, Duration or Strings), its default, the values
// it allows (Allowed for strings, Range for numbers: AtLeast, InRange,
// Above), a help line, and whether it is Secret (its value is never
// echoed in an error). Names are dotted and lower-case: "steps" is a
// top-level YAML key, "trace.batch" is batch under a trace: section.
// A Registry holds the declared keys:
//
//	r := configs.NewRegistry()
//	r.Add(
//		configs.Key{Name: "steps", Kind: configs.Int, Default: 256, Range: configs.AtLeast(0)},
//		configs.Key{Name: "output", Kind: configs.String, Default: "text", Allowed: []string{"text", "json"}},
//	)
//	if err := r.Err(); err != nil { ... } // a malformed declaration
//
// Add keeps declaration mistakes (a default of the wrong type or out of
// its range, one key declared twice differently, a key that is also
// another's section) for Err, so declaring from init functions cannot
// panic. Declaring the same key twice identically is allowed: two
// commands may share a setting.
//
// # Reading them
//
// Settings are the values of a registry's keys for one run. Each key's
// value comes from the first of these that sets it:
//
//  1. a flag the user gave (DefineFlag makes a typed flag with the key's
//     default and usage; BindFlag ties it to the key),
//  2. the environment variable EnvName(key): INFER_ + the name upper-cased,
//     dots and dashes as underscores (trace.batch → INFER_TRACE_BATCH),
//  3. the YAML config file read with ReadFile,
//  4. the key's default.
//
// ReadFile refuses a key nobody declared, with the key meant ("did you
// mean "trace.batch"?"), and a value of the wrong type; Check then checks
// every key's effective value and names where a bad one came from:
//
//	config key "steps" (from env INFER_STEPS): want an integer, got string "many"
//
// After Check the getters (String, Path, Int, Float, Bool, Duration,
// Strings) cannot fail. Path resolves a relative path that came from the
// config file against the file's folder, so a config file works from any
// working directory. Source and Rank say where a value came from, for a
// front end that lets the stronger of two related settings win.
// Registry.UnknownEnv finds the INFER_* variables that set nothing (a
// typo, or a key outside its section), to warn about.
//
// cmd/infer declares Stride's keys, each command beside its own code,
// and wires this package to its cobra commands; a server binary or
// another tool can read the same config files with the same checks.
package configs
