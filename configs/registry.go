package configs

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Registry is the set of declared keys: what a config file may contain
// and what a program reads. Declaration errors are kept and returned by
// Err, so a bad declaration in an init function cannot panic before the
// program's own error handling is in place.
type Registry struct {
	keys map[string]Key
	errs []error
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{keys: map[string]Key{}} }

// Add declares keys. Declaring the same key twice is allowed when kind
// and default agree, so two commands can share a setting such as
// "steps"; any other clash, a malformed name or a default of the wrong
// type is kept for Err.
func (r *Registry) Add(keys ...Key) {
	for _, k := range keys {
		if err := k.validate(); err != nil {
			r.errs = append(r.errs, err)
			continue
		}
		if old, ok := r.keys[k.Name]; ok {
			if old.Kind != k.Kind || !reflect.DeepEqual(old.DefaultValue(), k.DefaultValue()) {
				r.errs = append(r.errs, fmt.Errorf("config key %q declared twice with different kinds or defaults", k.Name))
			}
			continue
		}
		r.keys[k.Name] = k
	}
}

// Err reports what is wrong with the declarations: the errors Add kept,
// else a key that is also the section of another key ("trace" and
// "trace.batch"), which YAML cannot hold both of.
func (r *Registry) Err() error {
	if len(r.errs) > 0 {
		return errors.Join(r.errs...)
	}
	for name := range r.keys {
		for other := range r.keys {
			if strings.HasPrefix(other, name+".") {
				return fmt.Errorf("config key %q is also the section of %q", name, other)
			}
		}
	}
	return nil
}

// Lookup returns the declared key named name.
func (r *Registry) Lookup(name string) (Key, bool) {
	k, ok := r.keys[name]
	return k, ok
}

// Names returns the declared keys' names, sorted.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.keys))
	for k := range r.keys {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// isSection reports whether name is a prefix section of a known key.
func (r *Registry) isSection(name string) bool {
	for k := range r.keys {
		if strings.HasPrefix(k, name+".") {
			return true
		}
	}
	return false
}

// DefineFlag defines a flag named name (with the one-letter shorthand
// short, "" for none) on fs, typed by key's kind and with key's default.
// Its usage gets the allowed values, the bounds and the environment
// variable appended. Bind the flag to the key with Settings.BindFlag.
func (r *Registry) DefineFlag(fs *pflag.FlagSet, name, short, key, usage string) (*pflag.Flag, error) {
	k, ok := r.keys[key]
	if !ok {
		return nil, fmt.Errorf("config key %q is not declared", key)
	}
	if len(k.Allowed) > 0 {
		usage += " (" + strings.Join(k.Allowed, "|") + ")"
	}
	if k.Range != nil {
		usage += "; " + k.Range.String()
	}
	usage += "; env " + EnvName(key)
	switch def := k.DefaultValue(); k.Kind {
	case Int:
		fs.IntP(name, short, def.(int), usage)
	case Float:
		fs.Float64P(name, short, def.(float64), usage)
	case Bool:
		fs.BoolP(name, short, def.(bool), usage)
	case Duration:
		fs.DurationP(name, short, def.(time.Duration), usage)
	case Strings:
		fs.StringArrayP(name, short, def.([]string), usage)
	default:
		fs.StringP(name, short, def.(string), usage)
	}
	return fs.Lookup(name), nil
}

// Suggest names the declared key closest to a misspelled one ("did you
// mean "demo.count"?"), or lists them all when none is close.
func (r *Registry) Suggest(name string) string {
	// A key in the wrong section (a top-level "output" for
	// generate.output) is named by its last part.
	var placed []string
	last := name[strings.LastIndex(name, ".")+1:]
	for _, k := range r.Names() {
		if k != name && k[strings.LastIndex(k, ".")+1:] == last {
			placed = append(placed, fmt.Sprintf("%q", k))
		}
	}
	if len(placed) > 0 {
		return "did you mean " + strings.Join(placed, " or ") + "?"
	}
	best, bestD := "", 4 // at most 3 edits away
	for _, k := range r.Names() {
		if d := editDistance(name, k); d < bestD {
			best, bestD = k, d
		}
	}
	if best != "" {
		return fmt.Sprintf("did you mean %q?", best)
	}
	return "known keys: " + strings.Join(r.Names(), ", ")
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// UnknownVar is an environment variable that looks like a setting but
// sets no key.
type UnknownVar struct {
	Name string
	// Suggestion names the closest key's variable ("did you mean
	// INFER_GENERATE_OUTPUT?"); "" when no key is close.
	Suggestion string
}

// UnknownEnv returns, sorted, the variables of environ ("NAME=value",
// as os.Environ gives them) that start with EnvPrefix and '_' but set no
// declared key and are not named in also (INFER_CONFIG, say): a typo, or
// a key that lives in a section (INFER_OUTPUT for generate.output is
// INFER_GENERATE_OUTPUT).
func (r *Registry) UnknownEnv(environ []string, also ...string) []UnknownVar {
	known := map[string]bool{}
	for _, name := range also {
		known[name] = true
	}
	byEnv := map[string]string{}
	for name := range r.keys {
		known[EnvName(name)] = true
		byEnv[EnvName(name)] = name
	}
	var unknown []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, EnvPrefix+"_") && !known[name] {
			unknown = append(unknown, name)
		}
	}
	sort.Strings(unknown)
	out := make([]UnknownVar, 0, len(unknown))
	for _, name := range unknown {
		hint := r.Suggest(strings.ToLower(strings.TrimPrefix(name, EnvPrefix+"_")))
		if strings.HasPrefix(hint, "known keys") {
			hint = ""
		} else {
			for env, k := range byEnv {
				hint = strings.ReplaceAll(hint, fmt.Sprintf("%q", k), env)
			}
		}
		out = append(out, UnknownVar{name, hint})
	}
	return out
}
